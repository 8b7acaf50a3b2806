// Activation conversion: f32 rows (ggml's src1, possibly strided per row, or gathered) to bf16 or int8 rows.

#include "convert_kernels.h"
#include "xdna_convert.h"

#include <cstring>

namespace {

void row_to_bf16(const xdna::convert_kernels & kern, const float * x, int64_t k, ggml_bf16_t * y, int64_t ld) {
    kern.f32_to_bf16(x, y, k);
    if (ld > k) {
        std::memset(y + k, 0, (ld - k) * sizeof(ggml_bf16_t));
    }
}

// Returns false (row of zeros, scale 0) for a row with a NaN or Inf.
bool row_to_int8(const xdna::convert_kernels & kern, const float * x, int64_t k, int8_t * y, int64_t ld,
                 float * scale) {
    const uint32_t amax = kern.absmax_bits(x, k);
    bool           ok   = true;
    if (amax >= 0x7f800000u) {
        ok     = false;
        *scale = 0.0f;
        std::memset(y, 0, k);
    } else {
        float absmax;
        std::memcpy(&absmax, &amax, 4);
        const float s = absmax / 127.0f;
        *scale        = s;
        kern.f32_to_int8(x, y, k, s != 0.0f ? 1.0f / s : 0.0f);
    }
    if (ld > k) {
        std::memset(y + k, 0, ld - k);
    }
    return ok;
}

const float * strided_row(const float * src, size_t nb1, int64_t i) {
    return (const float *) ((const char *) src + i * nb1);
}

}  // namespace

void xdna_act_to_bf16(const float * src, size_t src_nb1, int64_t n_rows, int64_t k, ggml_bf16_t * dst, int64_t ld) {
    const xdna::convert_kernels & kern = xdna::kernels();
    for (int64_t i = 0; i < n_rows; ++i) {
        row_to_bf16(kern, strided_row(src, src_nb1, i), k, dst + i * ld, ld);
    }
}

bool xdna_act_to_int8(const float * src, size_t src_nb1, int64_t n_rows, int64_t k, int8_t * dst, int64_t ld,
                      float * scales) {
    const xdna::convert_kernels & kern = xdna::kernels();
    bool                          ok   = true;
    for (int64_t i = 0; i < n_rows; ++i) {
        ok = row_to_int8(kern, strided_row(src, src_nb1, i), k, dst + i * ld, ld, scales + i) && ok;
    }
    return ok;
}

void xdna_act_rows_to_bf16(const float * const * rows, int64_t n_rows, int64_t k, ggml_bf16_t * dst, int64_t ld) {
    const xdna::convert_kernels & kern = xdna::kernels();
    for (int64_t i = 0; i < n_rows; ++i) {
        row_to_bf16(kern, rows[i], k, dst + i * ld, ld);
    }
}

bool xdna_act_rows_to_int8(const float * const * rows, int64_t n_rows, int64_t k, int8_t * dst, int64_t ld,
                           float * scales) {
    const xdna::convert_kernels & kern = xdna::kernels();
    bool                          ok   = true;
    for (int64_t i = 0; i < n_rows; ++i) {
        ok = row_to_int8(kern, rows[i], k, dst + i * ld, ld, scales + i) && ok;
    }
    return ok;
}
