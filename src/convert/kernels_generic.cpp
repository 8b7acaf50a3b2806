// Portable versions of the hot loops; the dequantization is left to ggml's own to_float.

#include "convert_kernels.h"
#include "scalar_ops.h"

#include <cstring>

namespace xdna {

namespace {

void f32_to_bf16(const float * x, ggml_bf16_t * y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        y[i].bits = bf16_bits(x[i]);
    }
}

uint32_t absmax_bits(const float * x, int64_t n) {
    uint32_t m = 0;
    for (int64_t i = 0; i < n; ++i) {
        const uint32_t a = f32_bits(x[i]) & 0x7fffffffu;
        m = a > m ? a : m;
    }
    return m;
}

void f32_to_int8(const float * x, int8_t * y, int64_t n, float inv) {
    for (int64_t i = 0; i < n; ++i) {
        y[i] = int8_rne(x[i], inv);
    }
}

}  // namespace

void fill_kernels_generic(convert_kernels & k) {
    std::memset(&k, 0, sizeof(k));
    k.f32_to_bf16 = f32_to_bf16;
    k.absmax_bits = absmax_bits;
    k.f32_to_int8 = f32_to_int8;
}

}  // namespace xdna
