#pragma once

// Helpers shared by the AVX-512 files (internal; include only from files compiled with AVX-512 enabled).

#include "ggml.h"

#include <immintrin.h>

namespace xdna {
namespace avx512 {

// 16 floats (as bits) to 16 bf16 with ggml's rule (see bf16_bits in scalar_ops.h).
static inline __m256i bf16x16(__m512i u) {
    const __m512i   hi  = _mm512_srli_epi32(u, 16);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                  _mm512_set1_epi32(0x7f800000));
    const __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
    __m512i       r   = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
    r                 = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(hi, _mm512_set1_epi32(64)));
    return _mm512_cvtepi32_epi16(r);
}

// Where the dequantization kernels put their 16-float vectors: f32 or bf16 output.
struct sink_f32 {
    float * y;
    void    put(int64_t i, __m512 v) const { _mm512_storeu_ps(y + i, v); }
    void    put_scalar(int64_t i, float v) const { y[i] = v; }
};

struct sink_bf16 {
    ggml_bf16_t * y;
    void          put(int64_t i, __m512 v) const {
        _mm256_storeu_si256((__m256i *) (y + i), bf16x16(_mm512_castps_si512(v)));
    }
    void put_scalar(int64_t i, float v) const {
        const __m512i u = _mm512_castps_si512(_mm512_set1_ps(v));
        y[i].bits       = (uint16_t) _mm_extract_epi16(_mm256_castsi256_si128(bf16x16(u)), 0);
    }
};

static inline float f16(uint16_t h) {
    return _cvtsh_ss(h);  // exact, like ggml's fp16 -> fp32
}

static inline __m512i u8x16(__m128i v) {
    return _mm512_cvtepu8_epi32(v);
}

static inline __m512i u8x16(const uint8_t * p) {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *) p));
}

static inline __m512 to_f(__m512i v) {
    return _mm512_cvtepi32_ps(v);
}

// The 6-bit (scale, min) pair j of a Q4_K / Q5_K "k4" packing of 8 pairs in 12 bytes.
static inline void k4_scale_min(const uint8_t * q, int j, int & sc, int & m) {
    if (j < 4) {
        sc = q[j] & 63;
        m  = q[j + 4] & 63;
    } else {
        sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        m  = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

// 32 values of a 4-bit lookup type: lut[low nibble of 16 bytes] * d, then lut[high nibble] * d.
template <class S> static inline void dq_lut4(const __m512 lut, __m512 d, __m128i qs, int64_t at, S s) {
    const __m512i q = u8x16(qs);
    s.put(at, _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_and_si512(q, _mm512_set1_epi32(0xF)), lut), d));
    s.put(at + 16, _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), lut), d));
}

// ggml's 4-bit lookup types (IQ4_NL / IQ4_XS, MXFP4): their 16 values, read once from ggml's own dequantization
// (dequant_avx512.cpp).
extern float g_lut_iq4nl[16];
extern float g_lut_mxfp4[16];

}  // namespace avx512
}  // namespace xdna
