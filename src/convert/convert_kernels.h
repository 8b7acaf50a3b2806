#pragma once

// The hot loops of the conversion, one table per instruction set (internal).
//
// The files that implement the AVX2 and AVX-512 tables are compiled with those instruction sets enabled, so they
// include nothing but ggml.h (plain C declarations), <immintrin.h> and this header: an inline function from another
// header compiled there could be picked by the linker for the whole program and run on a machine without the ISA.
// Everything in the conversion is compiled with -ffp-contract=off: ggml's own dequantization (the reference, built
// for baseline x86-64) never fuses a multiply and an add, and a fused one rounds differently.

#include "ggml.h"

#include <cstdint>

namespace xdna {

// Exactly ggml's to_float for one type: n elements (a multiple of the block size) from plain blocks.
using dequant_fn = void (*)(const void * blocks, float * y, int64_t n);

constexpr int MAX_TYPES = 64;
static_assert(GGML_TYPE_COUNT <= MAX_TYPES, "grow MAX_TYPES");

struct convert_kernels {
    // f32 to bf16, round to nearest even; NaN becomes a quiet NaN with the same sign and top mantissa bits.
    void (*f32_to_bf16)(const float * x, ggml_bf16_t * y, int64_t n);
    // The largest |x| as raw float bits: >= 0x7f800000 means an Inf or NaN was seen.
    uint32_t (*absmax_bits)(const float * x, int64_t n);
    // y = round-to-nearest-even(x * inv), clamped to [-127, 127].
    void (*f32_to_int8)(const float * x, int8_t * y, int64_t n, float inv);
    // Fused dequantization to bf16 for some plain types (null: dequantize to f32, then f32_to_bf16).
    void (*dequant_bf16[MAX_TYPES])(const void * blocks, ggml_bf16_t * y, int64_t n);
    // Dequantization to f32 for some plain types (null: ggml's to_float).
    dequant_fn dequant_f32[MAX_TYPES];
    // Dequantization straight from row j (0..7) of a repacked 8-row group: n elements starting at x8 block x0
    // (null: un-repack into plain blocks, then dequantize those).
    void (*x8_bf16[MAX_TYPES])(const void * group, int j, int64_t x0, int64_t n, ggml_bf16_t * y);
    void (*x8_f32[MAX_TYPES])(const void * group, int j, int64_t x0, int64_t n, float * y);
};

void fill_kernels_generic(convert_kernels & k);
#if defined(__x86_64__) || defined(_M_X64)
void fill_kernels_avx2(convert_kernels & k);
void fill_kernels_avx512(convert_kernels & k);
void fill_dequant_avx512(convert_kernels & k);     // the dequantization kernels (part of fill_kernels_avx512)
void fill_dequant_avx512_x8(convert_kernels & k);  // those of the five repackable types, plain and repacked
#endif

// The table of the instruction set in use.
const convert_kernels & kernels();

}  // namespace xdna
