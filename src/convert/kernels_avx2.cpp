// AVX2 (+ F16C) versions of the hot loops. Compiled with those ISAs enabled: include nothing else (see
// convert_kernels.h).

#include "convert_kernels.h"
#include "scalar_ops.h"

#include <immintrin.h>

namespace xdna {

namespace {

// 8 floats (as bits) to 8 bf16 values in the low 16 bits of each 32-bit lane, with ggml's rule (see bf16_bits).
inline __m256i bf16x8(__m256i u) {
    const __m256i hi  = _mm256_srli_epi32(u, 16);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                           _mm256_set1_epi32(0x7f800000));
    const __m256i lsb = _mm256_and_si256(hi, _mm256_set1_epi32(1));
    const __m256i r   = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
    return _mm256_blendv_epi8(r, _mm256_or_si256(hi, _mm256_set1_epi32(64)), nan);
}

void f32_to_bf16(const float * x, ggml_bf16_t * y, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i a = bf16x8(_mm256_loadu_si256((const __m256i *) (x + i)));
        const __m256i b = bf16x8(_mm256_loadu_si256((const __m256i *) (x + i + 8)));
        // packus works per 128-bit lane: a0 b0 a1 b1 -> a0 a1 b0 b1
        const __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xD8);
        _mm256_storeu_si256((__m256i *) (y + i), p);
    }
    for (; i < n; ++i) {
        y[i].bits = bf16_bits(x[i]);
    }
}

uint32_t absmax_bits(const float * x, int64_t n) {
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
    __m256i       m0 = _mm256_setzero_si256(), m1 = _mm256_setzero_si256();
    int64_t       i = 0;
    for (; i + 16 <= n; i += 16) {
        m0 = _mm256_max_epu32(m0, _mm256_and_si256(_mm256_loadu_si256((const __m256i *) (x + i)), abs_mask));
        m1 = _mm256_max_epu32(m1, _mm256_and_si256(_mm256_loadu_si256((const __m256i *) (x + i + 8)), abs_mask));
    }
    m0 = _mm256_max_epu32(m0, m1);
    __m128i m = _mm_max_epu32(_mm256_castsi256_si128(m0), _mm256_extracti128_si256(m0, 1));
    m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0x4E));
    m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0xB1));
    uint32_t r = (uint32_t) _mm_cvtsi128_si32(m);
    for (; i < n; ++i) {
        const uint32_t a = f32_bits(x[i]) & 0x7fffffffu;
        r = a > r ? a : r;
    }
    return r;
}

inline __m256i int32x8(__m256 v, __m256 inv) {
    const __m256i q = _mm256_cvtps_epi32(_mm256_mul_ps(v, inv));  // MXCSR default: round to nearest even
    return _mm256_min_epi32(_mm256_max_epi32(q, _mm256_set1_epi32(-127)), _mm256_set1_epi32(127));
}

void f32_to_int8(const float * x, int8_t * y, int64_t n, float inv) {
    const __m256 vinv = _mm256_set1_ps(inv);
    int64_t      i    = 0;
    for (; i + 32 <= n; i += 32) {
        const __m256i a = int32x8(_mm256_loadu_ps(x + i), vinv);
        const __m256i b = int32x8(_mm256_loadu_ps(x + i + 8), vinv);
        const __m256i c = int32x8(_mm256_loadu_ps(x + i + 16), vinv);
        const __m256i d = int32x8(_mm256_loadu_ps(x + i + 24), vinv);
        // the packs work per 128-bit lane; one dword permute restores the order
        const __m256i ab   = _mm256_packs_epi32(a, b);
        const __m256i cd   = _mm256_packs_epi32(c, d);
        const __m256i abcd = _mm256_packs_epi16(ab, cd);
        const __m256i p    = _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256((__m256i *) (y + i), p);
    }
    for (; i < n; ++i) {
        y[i] = int8_rne(x[i], inv);
    }
}

}  // namespace

void fill_kernels_avx2(convert_kernels & k) {
    k.f32_to_bf16 = f32_to_bf16;
    k.absmax_bits = absmax_bits;
    k.f32_to_int8 = f32_to_int8;
}

}  // namespace xdna
