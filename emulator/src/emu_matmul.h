// The block multiply the emulated NPU computes: C (m x n, row-major) = A (m x k, row-major) x B^T, with B given as
// n x k row-major (the whole_array design's --b-col-maj layout), the way the AIE2 cores compute it:
//   bf16 x bf16 -> f32 (and bf16 x i8 -> f32): every product is exact; each group of 8 consecutive k (the MAC's
//   reduction width s = 8) is added to the accumulator exactly and rounded once to fp32 (round to nearest even).
//   The silicon aligns the 9 terms to the largest exponent at 23 fraction bits before an exact sum, so it can
//   differ from this model in the last bit of a group sum; docs/emulator.md explains.
//   With `aligned` (XDNA_EMU_ACCUM=aligned) a group is added as the silicon is described to add it: the 9 terms (the
//   fp32 accumulator and the 8 products) are each rounded to nearest even at 23 fraction bits below the leading bit
//   of the largest of them, summed exactly, and the sum rounded once to fp32. Slower (scalar); for accuracy checks.
//   i8 x i8 -> i32: exact integer sums, wrapping modulo 2^32 like the int32 accumulator.
#pragma once

#include "xdna_emu/emu_format.h"

#include <cstdint>

namespace xdna_emu {

struct gemm_args {
    dtype a_type, b_type, c_type;
    const void* a;   // m x k
    const void* b;   // n x k
    void* c;         // m x n
    uint32_t m, n, k;
    int threads;     // >= 1
    bool aligned = false;   // bf16 groups as the silicon adds them (below); false: exact sum, one rounding
};

void gemm_compute(const gemm_args& g);

// bf16 helpers shared with the tools and tests: round to nearest even (NaN stays NaN), and back.
uint16_t f32_to_bf16(float f);
float bf16_to_f32(uint16_t h);

} // namespace xdna_emu
