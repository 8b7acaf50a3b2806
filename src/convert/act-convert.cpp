// Activation conversion: f32 rows (ggml's src1, possibly strided per row) to bf16 or int8 rows for the NPU.

#include "convert-kernels.h"
#include "xdna-convert.h"

#include <cstring>

void xdna_act_to_bf16(const float * src, size_t src_nb1, int64_t n_rows, int64_t k, ggml_bf16_t * dst, int64_t ld) {
    const xdna::convert_kernels & kern = xdna::kernels();
    for (int64_t i = 0; i < n_rows; ++i) {
        const float * x = (const float *) ((const char *) src + i * src_nb1);
        ggml_bf16_t * y = dst + i * ld;
        kern.f32_to_bf16(x, y, k);
        if (ld > k) {
            std::memset(y + k, 0, (ld - k) * sizeof(ggml_bf16_t));
        }
    }
}

bool xdna_act_to_int8(const float * src, size_t src_nb1, int64_t n_rows, int64_t k, int8_t * dst, int64_t ld,
                      float * scales) {
    const xdna::convert_kernels & kern = xdna::kernels();
    bool                          ok   = true;
    for (int64_t i = 0; i < n_rows; ++i) {
        const float *  x    = (const float *) ((const char *) src + i * src_nb1);
        int8_t *       y    = dst + i * ld;
        const uint32_t amax = kern.absmax_bits(x, k);
        if (amax >= 0x7f800000u) {
            ok        = false;
            scales[i] = 0.0f;
            std::memset(y, 0, k);
        } else {
            float absmax;
            std::memcpy(&absmax, &amax, 4);
            const float scale = absmax / 127.0f;
            scales[i]         = scale;
            kern.f32_to_int8(x, y, k, scale != 0.0f ? 1.0f / scale : 0.0f);
        }
        if (ld > k) {
            std::memset(y + k, 0, ld - k);
        }
    }
    return ok;
}
