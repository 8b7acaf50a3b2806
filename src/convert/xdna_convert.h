#pragma once

// Weight and activation conversion for the NPU worker.
//
// The NPU kernels read bf16 (or int8 with host-side scales) row-major blocks. This library turns any ggml weight the
// CPU can dequantize into those formats, including the CPU backend's repacked ("CPU_REPACK") layouts, which it first
// converts back to the plain ggml blocks exactly (byte for byte).
//
// All functions are thread-safe. The conversion functions allocate nothing: the caller gives the output buffers and
// may call them from several threads at once on disjoint row ranges.

#include "ggml.h"
#include "ggml-backend.h"

#include <cstddef>
#include <cstdint>
#include <string>

// ---------------------------------------------------------------------------------------------------------------------
// Repacked layouts: a run-time probe of the CPU backend that is loaded

// The rows of a repacked layout's group: a row range of a repacked weight must start and end on a multiple of it
// (or at the weight's end), or the CPU computes garbage without an error.
constexpr int64_t XDNA_REPACK_ROWS = 8;

// The x86 layouts of the CPU backend: 8 rows interleaved in 8-byte chunks. Index into xdna_repack_probe_result::types.
enum xdna_repack_kind {
    XDNA_REPACK_Q4_0 = 0,
    XDNA_REPACK_Q4_K,
    XDNA_REPACK_Q2_K,
    XDNA_REPACK_IQ4_NL,
    XDNA_REPACK_MXFP4,
    XDNA_REPACK_COUNT,
};

struct xdna_repack_type_info {
    ggml_type    type     = GGML_TYPE_COUNT;
    bool         repacked = false;   // this CPU build gives tensors of this type (with 8 | ne1) a repacked layout
    bool         verified = false;   // the inverse reproduced the probe tensor's original blocks byte for byte
    const void * extra    = nullptr; // the tensor->extra the CPU sets on such tensors (one object per type and layout)
    std::string  note;               // why the type is not convertible when repacked (empty when verified)
};

struct xdna_repack_probe_result {
    bool                       cpu_found = false;  // a CPU device is registered
    ggml_backend_buffer_type_t buft      = nullptr; // the CPU's "CPU_REPACK" buffer type, or null
    xdna_repack_type_info      types[XDNA_REPACK_COUNT];
    std::string                note;              // why there is no repack support at all (empty otherwise)
};

// Probes the CPU backend once per process: finds the CPU_REPACK buffer type, repacks a probe tensor of each of the five
// types and checks this library's inverse on it. A type whose inverse fails is reported as not convertible, so an
// unknown layout never gives a wrong result. While no CPU device is registered the result is not kept (the next call
// probes again), so calling this before the CPU backend is loaded does no harm.
const xdna_repack_probe_result & xdna_repack_probe();

// The probe entry for a type, or null when the CPU never repacks that type on x86.
const xdna_repack_type_info * xdna_repack_info(ggml_type type);

// True when the tensor (or the tensor it views) lives in the CPU_REPACK buffer type.
bool xdna_tensor_in_repack_buffer(const ggml_tensor * t);

// ---------------------------------------------------------------------------------------------------------------------
// Weights

// Weights are ne0 = K columns, ne1 = N rows and ne2 experts (1 for a 2-D weight); ne3 must be 1.
// Convertible: F32 and every type with a ggml to_float, in host memory, in plain layout (rows may be strided, nb0 must
// be the type size), or in a CPU_REPACK layout that the probe verified (the tensor itself, not a view of it).
bool xdna_weight_convertible(const ggml_tensor * w, std::string * why);

// int8 weights carry one f32 scale per row and per XDNA_W8_GROUP consecutive weights of that row.
constexpr int64_t XDNA_W8_GROUP = 1024;
inline int64_t xdna_w8_groups(int64_t k) { return (k + XDNA_W8_GROUP - 1) / XDNA_W8_GROUP; }

// Converts rows [r0, r1) of expert `expert` to bf16, round to nearest even with ggml's NaN/Inf behaviour
// (ggml_fp32_to_bf16 of ggml's own dequantization, bit for bit). Row r goes to dst + (r - r0) * ld; columns [K, ld)
// are set to zero (so ld can be K padded up to a kernel block). Any row range works, also on repacked weights.
// Returns false, with a one-line reason in *err (if given), on bad arguments or an unconvertible weight.
bool xdna_weight_to_bf16(const ggml_tensor * w, int64_t expert, int64_t r0, int64_t r1,
                         ggml_bf16_t * dst, int64_t ld, std::string * err);

// Converts rows [r0, r1) of expert `expert` to int8, symmetric: for each row and each group of XDNA_W8_GROUP columns,
// scale = absmax / 127 and q = round-to-nearest-even(x * (1 / scale)) clamped to [-127, 127] (scale 0 and q 0 for an
// all-zero group).
// Row r goes to dst + (r - r0) * ld (columns [K, ld) zero), its scales to scales + (r - r0) * ld_scales
// (xdna_w8_groups(K) of them). A non-finite weight is an error (int8 cannot hold it).
bool xdna_weight_to_int8(const ggml_tensor * w, int64_t expert, int64_t r0, int64_t r1,
                         int8_t * dst, int64_t ld, float * scales, int64_t ld_scales, std::string * err);

// Writes the plain ggml blocks of rows [r0, r1) of expert `expert` of a weight (plain or repacked) to dst, row r at
// (char *) dst + (r - r0) * dst_row_bytes (at least ggml_row_size(type, K)). For a repacked weight this is the exact
// inverse of the CPU's repack.
bool xdna_weight_plain_rows(const ggml_tensor * w, int64_t expert, int64_t r0, int64_t r1,
                            void * dst, size_t dst_row_bytes, std::string * err);

// The inverse of one 8-row group of a repacked layout, independent of any tensor: `src` holds nblocks x8 blocks,
// dst receives 8 rows of nblocks plain blocks each (row j at (char *) dst + j * nblocks * ggml_type_size(type)).
// Returns false for a type that has no x86 repacked layout.
bool xdna_unrepack_group(ggml_type type, const void * src, int64_t nblocks, void * dst);

// ---------------------------------------------------------------------------------------------------------------------
// Activations

// f32 rows to bf16 rows (round to nearest even, ggml's NaN/Inf behaviour). Row i is read at
// (const char *) src + i * src_nb1 (ggml's src1 may be strided per row) and written at dst + i * ld; columns [k, ld)
// are zero.
void xdna_act_to_bf16(const float * src, size_t src_nb1, int64_t n_rows, int64_t k, ggml_bf16_t * dst, int64_t ld);

// f32 rows to int8 with one scale per row: scale = absmax / 127, q = round-to-nearest-even(x * (1/scale)).
// scales[i] gets row i's scale; columns [k, ld) are zero. Returns false (and writes zeros and scale 0 for that row) if
// a row has a NaN or Inf; the other rows are still converted.
bool xdna_act_to_int8(const float * src, size_t src_nb1, int64_t n_rows, int64_t k, int8_t * dst, int64_t ld,
                      float * scales);

// The same for rows given one by one (e.g. the tokens routed to one expert of a MUL_MAT_ID): row i is read at rows[i].
void xdna_act_rows_to_bf16(const float * const * rows, int64_t n_rows, int64_t k, ggml_bf16_t * dst, int64_t ld);
bool xdna_act_rows_to_int8(const float * const * rows, int64_t n_rows, int64_t k, int8_t * dst, int64_t ld,
                           float * scales);

// ---------------------------------------------------------------------------------------------------------------------
// Instruction set of the hot loops: chosen at run time (the best the machine has); tests and benchmarks can lower it.

enum xdna_convert_isa {
    XDNA_CONVERT_GENERIC = 0,  // portable C++, and ggml's own to_float for the dequantization
    XDNA_CONVERT_AVX2    = 1,  // AVX2 + F16C
    XDNA_CONVERT_AVX512  = 2,  // AVX-512 F/BW/VL/DQ
};

xdna_convert_isa xdna_convert_isa_best();                    // the best this machine (and this build) supports
xdna_convert_isa xdna_convert_isa_get();                     // the one in use
xdna_convert_isa xdna_convert_isa_set(xdna_convert_isa isa); // clamps to the best; returns the one now in use
const char *     xdna_convert_isa_name(xdna_convert_isa isa);
