#pragma once

// Helpers shared by the AVX-512 files (internal; include only from files compiled with AVX-512 enabled).

#include "ggml.h"

#include <immintrin.h>

namespace xdna {
namespace avx512 {

// 16 floats (as bits) to 16 bf16 with ggml's rule (see bf16_bits in scalar-ops.h).
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

}  // namespace avx512
}  // namespace xdna
