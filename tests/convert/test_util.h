#pragma once

// Shared helpers of the conversion tests: loading the CPU backend, test data, plain and repacked weights.

#include "xdna_convert.h"

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace xdna_test {

// Registers the CPU backend of the ggml the tests run against (the module next to libggml.so). Returns its device.
ggml_backend_dev_t cpu_device();

// Every type the conversion must support: F32 and the types with a ggml to_float.
std::vector<ggml_type> convertible_types();

// The five types with an x86 repacked layout.
std::vector<ggml_type> repack_types();

std::string type_label(ggml_type t);

// Test values: normal-ish floats with a few outliers per row (like real weights), deterministic per seed.
std::vector<float> random_floats(size_t n, uint64_t seed, float scale = 1.0f);

// Plain ggml blocks of `rows` rows of K columns: quantized by ggml from random_floats, except for the grid types
// (IQ1_*, IQ2_*, IQ3_*) whose quantizer takes seconds, which get random_blocks. Cached per (type, K, rows, seed).
const std::vector<uint8_t> & quantized_rows(ggml_type type, int64_t K, int64_t rows, uint64_t seed);

// Random bytes for every block, each block redrawn until ggml dequantizes it to finite values: any bit pattern of
// the quants and scales, as far as it is a number.
std::vector<uint8_t> random_blocks(ggml_type type, int64_t K, int64_t rows, uint64_t seed);

// ggml's own dequantization of plain rows, then ggml's own rounding to bf16 (the reference).
std::vector<ggml_bf16_t> reference_bf16(ggml_type type, const uint8_t * rows, int64_t K, int64_t n_rows);
std::vector<float>       reference_f32(ggml_type type, const uint8_t * rows, int64_t K, int64_t n_rows);

// A weight tensor of K x N x E and its backing storage.
struct weight {
    ggml_context *        ctx = nullptr;
    ggml_backend_buffer_t buf = nullptr;
    ggml_tensor *         t   = nullptr;
    std::vector<uint8_t>  plain;  // the plain blocks that were set (rows of all experts, contiguous)

    weight() = default;
    weight(const weight &) = delete;
    weight & operator=(const weight &) = delete;
    ~weight();
};

// A plain weight in host memory (no buffer), filled with `plain` (ggml_nbytes bytes).
void make_plain(weight & w, ggml_type type, int64_t K, int64_t N, int64_t E, const std::vector<uint8_t> & plain);

// A weight in the CPU's CPU_REPACK buffer type, set (and so repacked) from `plain`. Returns false, with a message,
// when this CPU backend does not repack the type at this shape.
bool make_repacked(weight & w, ggml_type type, int64_t K, int64_t N, int64_t E, const std::vector<uint8_t> & plain,
                   std::string * why);

// Runs the body once for each instruction set the machine has, restoring the best one afterwards.
struct isa_scope {
    explicit isa_scope(xdna_convert_isa isa) { xdna_convert_isa_set(isa); }
    ~isa_scope() { xdna_convert_isa_set(xdna_convert_isa_best()); }
};

std::vector<xdna_convert_isa> available_isas();

}  // namespace xdna_test
