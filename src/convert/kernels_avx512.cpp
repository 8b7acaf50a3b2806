// AVX-512 (F, BW, VL, DQ) versions of the hot loops. Compiled with those ISAs enabled: include nothing else (see
// convert_kernels.h).

#include "avx512_common.h"
#include "convert_kernels.h"
#include "scalar_ops.h"

#include <immintrin.h>

namespace xdna {

namespace {

using avx512::bf16x16;

// Elements before x + i is 64-byte aligned: ggml rows are often only 16-byte aligned, and a 64-byte load that spans
// two cache lines on every iteration halved the speed of streaming an f32 weight from memory.
inline int64_t peel_to_64(const float * x, int64_t n) {
    const int64_t p = (int64_t) ((64 - ((uintptr_t) x & 63)) & 63);
    return (p % 4 == 0 && p / 4 < n) ? p / 4 : 0;
}

void f32_to_bf16(const float * x, ggml_bf16_t * y, int64_t n) {
    int64_t i = peel_to_64(x, n);
    if (i > 0) {
        const __mmask16 m = (__mmask16) ((1u << i) - 1);
        _mm256_mask_storeu_epi16(y, m, bf16x16(_mm512_maskz_loadu_epi32(m, x)));
    }
    for (; i + 32 <= n; i += 32) {
        const __m256i a = bf16x16(_mm512_loadu_si512((const void *) (x + i)));
        const __m256i b = bf16x16(_mm512_loadu_si512((const void *) (x + i + 16)));
        _mm256_storeu_si256((__m256i *) (y + i), a);
        _mm256_storeu_si256((__m256i *) (y + i + 16), b);
    }
    for (; i < n; i += 16) {
        const __mmask16 m = (__mmask16) (n - i >= 16 ? 0xffff : ((1u << (n - i)) - 1));
        _mm256_mask_storeu_epi16(y + i, m, bf16x16(_mm512_maskz_loadu_epi32(m, x + i)));
    }
}

uint32_t absmax_bits(const float * x, int64_t n) {
    const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
    __m512i       m0 = _mm512_setzero_si512(), m1 = _mm512_setzero_si512();
    int64_t       i = peel_to_64(x, n);
    if (i > 0) {
        m0 = _mm512_and_si512(_mm512_maskz_loadu_epi32((__mmask16) ((1u << i) - 1), x), abs_mask);
    }
    for (; i + 32 <= n; i += 32) {
        m0 = _mm512_max_epu32(m0, _mm512_and_si512(_mm512_loadu_si512((const void *) (x + i)), abs_mask));
        m1 = _mm512_max_epu32(m1, _mm512_and_si512(_mm512_loadu_si512((const void *) (x + i + 16)), abs_mask));
    }
    for (; i < n; i += 16) {
        const __mmask16 m = (__mmask16) (n - i >= 16 ? 0xffff : ((1u << (n - i)) - 1));
        m0 = _mm512_max_epu32(m0, _mm512_and_si512(_mm512_maskz_loadu_epi32(m, x + i), abs_mask));
    }
    return (uint32_t) _mm512_reduce_max_epu32(_mm512_max_epu32(m0, m1));
}

inline __m128i int8x16(__m512 v, __m512 inv) {
    __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(v, inv));  // MXCSR default: round to nearest even
    q = _mm512_min_epi32(_mm512_max_epi32(q, _mm512_set1_epi32(-127)), _mm512_set1_epi32(127));
    return _mm512_cvtepi32_epi8(q);
}

void f32_to_int8(const float * x, int8_t * y, int64_t n, float inv) {
    const __m512 vinv = _mm512_set1_ps(inv);
    int64_t      i    = peel_to_64(x, n);
    if (i > 0) {
        const __mmask16 m = (__mmask16) ((1u << i) - 1);
        _mm_mask_storeu_epi8(y, m, int8x16(_mm512_maskz_loadu_ps(m, x), vinv));
    }
    for (; i + 16 <= n; i += 16) {
        _mm_storeu_si128((__m128i *) (y + i), int8x16(_mm512_loadu_ps(x + i), vinv));
    }
    if (i < n) {
        const __mmask16 m = (__mmask16) ((1u << (n - i)) - 1);
        _mm_mask_storeu_epi8(y + i, m, int8x16(_mm512_maskz_loadu_ps(m, x + i), vinv));
    }
}

}  // namespace

void fill_kernels_avx512(convert_kernels & k) {
    k.f32_to_bf16 = f32_to_bf16;
    k.absmax_bits = absmax_bits;
    k.f32_to_int8 = f32_to_int8;
    fill_dequant_avx512(k);
}

}  // namespace xdna
