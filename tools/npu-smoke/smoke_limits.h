// How close an NPU block must be to the fp64 product of the inputs it saw for `xdna-npu-smoke --check` to pass: a
// function of the types and of K, derived from how the AIE2 adds bf16 products (docs/emulator.md, "Arithmetic").
//
// int8 x int8 -> int32: exact (integer sums), so the limit is 0.
//
// bf16 x bf16 -> f32 (and bf16 x int8 -> f32): the MAC adds k in groups of 8 products. Per group the 9 terms (the
// fp32 accumulator and 8 exact products) are aligned to the largest one's exponent e at 23 fraction bits, each
// rounded on the shift, summed exactly and normalised to fp32 with one more rounding: 10 roundings, each an error
// of at most half of 2^(e-23), about uniform, so of variance at most 2^(2e-46)/12, and 2^e is at most the largest
// term. For zero-mean random inputs the accumulator dominates the largest term after the first groups; after g
// groups its square is about 8 g s^2 (s^2: the mean square of one product), so over G = K/8 groups the squared
// error sums to at most (10/12) 2^-46 s^2 sum_g 8 g = (10/12) 2^-46 s^2 4 G^2, while the squared result is 8 G s^2:
//     NMSE <= (5/12) G 2^-46.
// The error grows with K (one more group, one more rounding of an ever larger accumulator): a fixed limit either
// fails good long-K kernels or lets bad short-K ones through. The limit is 4 times that bound (inputs with a
// non-zero mean or a few large terms, and the spread of a finite sample), (5/3) (K/8) 2^-46: 3.0e-12 for K = 1024,
// 1.2e-11 for K = 4096. The bound is loose: a product of two bf16 has only 16 significant bits, so most products
// need no rounding on the shift. Measured on 64 x K x 256 blocks with XDNA_EMU_ACCUM=aligned (the model above):
// 4.2e-14 at K = 1024 and 2.7e-13 at K = 4096 with the smoke tool's uniform inputs; 2.7e-13 and 1.1e-12 with
// normal inputs of which 1 in 64 is 30 times larger (activation outliers), where the former fixed limit of 1e-12
// fails a correct K = 4096 kernel. A wrong result is far above the limit: outputs rounded to bf16 (a kernel built
// with a bf16 output) give 2.7e-6, and the input-rounding ratio check alone does not catch them (1.6).
#pragma once

#include "npu_types.h"

#include <cmath>

namespace xdna {

inline double smoke_nmse_limit(npu_dtype c, int k) {
    if (c != npu_dtype::f32) return 0.0;   // integer output: exact
    const double groups = std::ceil(k / 8.0);
    return 5.0 / 3.0 * groups * std::ldexp(1.0, -46);
}

} // namespace xdna
