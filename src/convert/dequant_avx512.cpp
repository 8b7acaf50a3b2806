// AVX-512 dequantization of the common ggml block types, to f32 or straight to bf16.
//
// Each kernel computes every value with exactly the operations of ggml's own dequantize_row_* (the reference, built
// for baseline x86-64): the same int -> float conversions, the same multiplies and adds in the same order, never
// fused (this file is compiled with -ffp-contract=off), so the results are bit-identical. Compiled with AVX-512
// enabled: include nothing else (see convert_kernels.h).

#include "avx512_common.h"
#include "convert_kernels.h"
#include "ggml_blocks.h"

#include <immintrin.h>

namespace xdna {

namespace avx512 {
alignas(64) float g_lut_iq4nl[16];
alignas(64) float g_lut_mxfp4[16];
}  // namespace avx512

namespace {

using namespace avx512;

// y = x * d + m
template <class S> void dq_q4_1(const void * vx, int64_t n, S s) {
    const blk_q4_1 * x  = (const blk_q4_1 *) vx;
    const __m512i    m4 = _mm512_set1_epi32(0xF);
    for (int64_t i = 0; i < n / 32; ++i) {
        const __m512  d = _mm512_set1_ps(f16(x[i].d));
        const __m512  m = _mm512_set1_ps(f16(x[i].m));
        const __m512i q = u8x16(x[i].qs);
        s.put(i * 32, _mm512_add_ps(_mm512_mul_ps(to_f(_mm512_and_si512(q, m4)), d), m));
        s.put(i * 32 + 16, _mm512_add_ps(_mm512_mul_ps(to_f(_mm512_srli_epi32(q, 4)), d), m));
    }
}

// the fifth bits: bit j of qh for value j (j < 16), bit j + 16 for value j + 16 (as 0x10)
inline void q5_high_bits(const uint8_t * qh, __m512i & h0, __m512i & h1) {
    uint32_t bits;
    __builtin_memcpy(&bits, qh, 4);
    // (no vector constant at namespace scope: its initializer would run AVX-512 code when the library loads)
    const __m512i k_lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i b      = _mm512_set1_epi32((int) bits);
    h0              = _mm512_slli_epi32(_mm512_and_si512(_mm512_srlv_epi32(b, k_lane), _mm512_set1_epi32(1)), 4);
    h1 = _mm512_slli_epi32(
        _mm512_and_si512(_mm512_srlv_epi32(b, _mm512_add_epi32(k_lane, _mm512_set1_epi32(16))), _mm512_set1_epi32(1)),
        4);
}

template <class S> void dq_q5_0(const void * vx, int64_t n, S s) {
    const blk_q5_0 * x   = (const blk_q5_0 *) vx;
    const __m512i    m4  = _mm512_set1_epi32(0xF);
    const __m512i    off = _mm512_set1_epi32(16);
    for (int64_t i = 0; i < n / 32; ++i) {
        const __m512 d = _mm512_set1_ps(f16(x[i].d));
        __m512i      h0, h1;
        q5_high_bits(x[i].qh, h0, h1);
        const __m512i q  = u8x16(x[i].qs);
        const __m512i x0 = _mm512_sub_epi32(_mm512_or_si512(_mm512_and_si512(q, m4), h0), off);
        const __m512i x1 = _mm512_sub_epi32(_mm512_or_si512(_mm512_srli_epi32(q, 4), h1), off);
        s.put(i * 32, _mm512_mul_ps(to_f(x0), d));
        s.put(i * 32 + 16, _mm512_mul_ps(to_f(x1), d));
    }
}

template <class S> void dq_q5_1(const void * vx, int64_t n, S s) {
    const blk_q5_1 * x  = (const blk_q5_1 *) vx;
    const __m512i    m4 = _mm512_set1_epi32(0xF);
    for (int64_t i = 0; i < n / 32; ++i) {
        const __m512 d = _mm512_set1_ps(f16(x[i].d));
        const __m512 m = _mm512_set1_ps(f16(x[i].m));
        __m512i      h0, h1;
        q5_high_bits(x[i].qh, h0, h1);
        const __m512i q  = u8x16(x[i].qs);
        const __m512i x0 = _mm512_or_si512(_mm512_and_si512(q, m4), h0);
        const __m512i x1 = _mm512_or_si512(_mm512_srli_epi32(q, 4), h1);
        s.put(i * 32, _mm512_add_ps(_mm512_mul_ps(to_f(x0), d), m));
        s.put(i * 32 + 16, _mm512_add_ps(_mm512_mul_ps(to_f(x1), d), m));
    }
}

template <class S> void dq_q8_0(const void * vx, int64_t n, S s) {
    const blk_q8_0 * x = (const blk_q8_0 *) vx;
    for (int64_t i = 0; i < n / 32; ++i) {
        const __m512 d = _mm512_set1_ps(f16(x[i].d));
        for (int h = 0; h < 2; ++h) {
            const __m512i q = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *) (x[i].qs + 16 * h)));
            s.put(i * 32 + 16 * h, _mm512_mul_ps(to_f(q), d));
        }
    }
}

template <class S> void dq_iq4_xs(const void * vx, int64_t n, S s) {
    const blk_iq4_xs * x   = (const blk_iq4_xs *) vx;
    const __m512       lut = _mm512_load_ps(g_lut_iq4nl);
    for (int64_t i = 0; i < n / 256; ++i) {
        const float d = f16(x[i].d);
        for (int ib = 0; ib < 8; ++ib) {
            const int   ls = ((x[i].scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((x[i].scales_h >> 2 * ib) & 3) << 4);
            const float dl = d * (float) (ls - 32);
            dq_lut4(lut, _mm512_set1_ps(dl), _mm_loadu_si128((const __m128i *) (x[i].qs + 16 * ib)), i * 256 + 32 * ib, s);
        }
    }
}

template <class S> void dq_q5_K(const void * vx, int64_t n, S s) {
    const blk_q5_K * x   = (const blk_q5_K *) vx;
    const __m512i    m4  = _mm512_set1_epi32(0xF);
    const __m512i    one = _mm512_set1_epi32(1);
    for (int64_t i = 0; i < n / 256; ++i) {
        const float   d = f16(x[i].d), dmin = f16(x[i].dmin);
        const __m512i qh[2] = { u8x16(x[i].qh), u8x16(x[i].qh + 16) };
        for (int j = 0; j < 4; ++j) {
            int sc, m;
            k4_scale_min(x[i].scales, 2 * j, sc, m);
            const __m512 d1 = _mm512_set1_ps(d * (float) sc), m1 = _mm512_set1_ps(dmin * (float) m);
            k4_scale_min(x[i].scales, 2 * j + 1, sc, m);
            const __m512 d2 = _mm512_set1_ps(d * (float) sc), m2 = _mm512_set1_ps(dmin * (float) m);
            const uint8_t * ql = x[i].qs + 32 * j;
            const int64_t   at = i * 256 + 64 * j;
            for (int h = 0; h < 2; ++h) {
                const __m512i v  = u8x16(ql + 16 * h);
                const __m512i b1 = _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(qh[h], 2 * j), one), 4);
                const __m512i b2 = _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(qh[h], 2 * j + 1), one), 4);
                const __m512i lo = _mm512_add_epi32(_mm512_and_si512(v, m4), b1);
                const __m512i hi = _mm512_add_epi32(_mm512_srli_epi32(v, 4), b2);
                s.put(at + 16 * h, _mm512_sub_ps(_mm512_mul_ps(d1, to_f(lo)), m1));
                s.put(at + 32 + 16 * h, _mm512_sub_ps(_mm512_mul_ps(d2, to_f(hi)), m2));
            }
        }
    }
}

// y = (d * sc) * q with q = (4 low bits | 2 high bits << 4) - 32, per 16-value sub-block
template <class S> void dq_q6_K(const void * vx, int64_t n, S s) {
    const blk_q6_K * x   = (const blk_q6_K *) vx;
    const __m512i    m4  = _mm512_set1_epi32(0xF);
    const __m512i    m2  = _mm512_set1_epi32(3);
    const __m512i    off = _mm512_set1_epi32(32);
    for (int64_t i = 0; i < n / 256; ++i) {
        const float d = f16(x[i].d);
        for (int half = 0; half < 2; ++half) {
            const uint8_t * ql = x[i].ql + 64 * half;
            const uint8_t * qh = x[i].qh + 32 * half;
            const int8_t *  sc = x[i].scales + 8 * half;
            const int64_t   at = i * 256 + 128 * half;
            for (int g = 0; g < 2; ++g) {  // values l = 16 g .. 16 g + 15 of each quarter
                const __m512i a  = u8x16(ql + 16 * g);
                const __m512i b  = u8x16(ql + 32 + 16 * g);
                const __m512i h  = u8x16(qh + 16 * g);
                const __m512i q1 = _mm512_sub_epi32(
                    _mm512_or_si512(_mm512_and_si512(a, m4), _mm512_slli_epi32(_mm512_and_si512(h, m2), 4)), off);
                const __m512i q2 = _mm512_sub_epi32(
                    _mm512_or_si512(_mm512_and_si512(b, m4),
                                    _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(h, 2), m2), 4)),
                    off);
                const __m512i q3 = _mm512_sub_epi32(
                    _mm512_or_si512(_mm512_srli_epi32(a, 4),
                                    _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(h, 4), m2), 4)),
                    off);
                const __m512i q4 = _mm512_sub_epi32(
                    _mm512_or_si512(_mm512_srli_epi32(b, 4),
                                    _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(h, 6), m2), 4)),
                    off);
                s.put(at + 16 * g, _mm512_mul_ps(_mm512_set1_ps(d * (float) sc[g + 0]), to_f(q1)));
                s.put(at + 32 + 16 * g, _mm512_mul_ps(_mm512_set1_ps(d * (float) sc[g + 2]), to_f(q2)));
                s.put(at + 64 + 16 * g, _mm512_mul_ps(_mm512_set1_ps(d * (float) sc[g + 4]), to_f(q3)));
                s.put(at + 96 + 16 * g, _mm512_mul_ps(_mm512_set1_ps(d * (float) sc[g + 6]), to_f(q4)));
            }
        }
    }
}

// Q3_K's 16 signed 6-bit sub-block scales: low 4 bits in the nibbles of bytes 0..7, high 2 bits in bytes 8..11.
inline void q3_scales(const uint8_t * b, int * out) {
    for (int i = 0; i < 16; ++i) {
        const int lo = i < 8 ? (b[i] & 0xF) : (b[i - 8] >> 4);
        const int hi = (b[8 + i % 4] >> (2 * (i / 4))) & 3;
        out[i]       = (lo | (hi << 4)) - 32;
    }
}

// y = (d * sc) * (q - (high bit ? 0 : 4)), q = 2 bits, per 16-value sub-block
template <class S> void dq_q3_K(const void * vx, int64_t n, S s) {
    const blk_q3_K * x    = (const blk_q3_K *) vx;
    const __m512i    m2   = _mm512_set1_epi32(3);
    const __m512i    four = _mm512_set1_epi32(4);
    for (int64_t i = 0; i < n / 256; ++i) {
        const float d = f16(x[i].d);
        int         sc[16];
        q3_scales(x[i].scales, sc);
        const __m512i hm0 = u8x16(x[i].hmask), hm1 = u8x16(x[i].hmask + 16);
        int64_t       at  = i * 256;
        int           is  = 0;
        for (int half = 0; half < 2; ++half) {
            const __m512i q0 = u8x16(x[i].qs + 32 * half);
            const __m512i q1 = u8x16(x[i].qs + 32 * half + 16);
            for (int j = 0; j < 4; ++j) {
                const int       bit = 4 * half + j;
                const __m512i   mb  = _mm512_set1_epi32(1 << bit);
                const __mmask16 h0  = _mm512_test_epi32_mask(hm0, mb), h1 = _mm512_test_epi32_mask(hm1, mb);
                // q - 4 where the high bit is clear
                const __m512i v0 = _mm512_mask_mov_epi32(
                    _mm512_sub_epi32(_mm512_and_si512(_mm512_srli_epi32(q0, 2 * j), m2), four), h0,
                    _mm512_and_si512(_mm512_srli_epi32(q0, 2 * j), m2));
                const __m512i v1 = _mm512_mask_mov_epi32(
                    _mm512_sub_epi32(_mm512_and_si512(_mm512_srli_epi32(q1, 2 * j), m2), four), h1,
                    _mm512_and_si512(_mm512_srli_epi32(q1, 2 * j), m2));
                s.put(at, _mm512_mul_ps(_mm512_set1_ps(d * (float) sc[is]), to_f(v0)));
                s.put(at + 16, _mm512_mul_ps(_mm512_set1_ps(d * (float) sc[is + 1]), to_f(v1)));
                at += 32;
                is += 2;
            }
        }
    }
}

template <class S> void dq_f16(const void * vx, int64_t n, S s) {
    const uint16_t * x = (const uint16_t *) vx;
    int64_t          i = 0;
    for (; i + 16 <= n; i += 16) {
        s.put(i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) (x + i))));
    }
    for (; i < n; ++i) {  // n is a multiple of 16 in every caller; kept for safety
        const float v = f16(x[i]);
        s.put_scalar(i, v);
    }
}

template <class S> void dq_bf16(const void * vx, int64_t n, S s) {
    const uint16_t * x = (const uint16_t *) vx;
    int64_t          i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512i v = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *) (x + i))), 16);
        s.put(i, _mm512_castsi512_ps(v));
    }
    for (; i < n; ++i) {
        const uint32_t b = (uint32_t) x[i] << 16;
        float          f;
        __builtin_memcpy(&f, &b, 4);
        s.put_scalar(i, f);
    }
}

template <void (*K)(const void *, int64_t, sink_f32)> void to_f32(const void * x, float * y, int64_t n) {
    K(x, n, sink_f32{ y });
}

template <void (*K)(const void *, int64_t, sink_bf16)> void to_bf16(const void * x, ggml_bf16_t * y, int64_t n) {
    K(x, n, sink_bf16{ y });
}

// Reads the 16 values of a 4-bit lookup type from ggml's own dequantization of a block with unit scale.
void read_lut(ggml_type type, uint8_t unit_scale_lo, uint8_t unit_scale_hi, size_t scale_bytes, float * lut) {
    uint8_t block[64] = {};
    block[0]          = unit_scale_lo;
    if (scale_bytes == 2) {
        block[1] = unit_scale_hi;
    }
    for (int j = 0; j < 16; ++j) {
        block[scale_bytes + j] = (uint8_t) j;  // low nibble j: value j of the table
    }
    float y[32];
    ggml_get_type_traits(type)->to_float(block, y, 32);
    for (int j = 0; j < 16; ++j) {
        lut[j] = y[j];
    }
}

}  // namespace

void fill_dequant_avx512(convert_kernels & k) {
    // The lookup types need ggml's tables; d = 1.0 (f16 0x3C00) for IQ4_NL, e = 128 (2^0) for MXFP4.
    read_lut(GGML_TYPE_IQ4_NL, 0x00, 0x3C, 2, g_lut_iq4nl);
    read_lut(GGML_TYPE_MXFP4, 128, 0, 1, g_lut_mxfp4);
    fill_dequant_avx512_x8(k);

    struct entry {
        ggml_type type;
        size_t    block_bytes;
        int64_t   block_elems;
        void (*f32)(const void *, float *, int64_t);
        void (*bf16)(const void *, ggml_bf16_t *, int64_t);
    };
    const entry entries[] = {
        { GGML_TYPE_Q4_1, sizeof(blk_q4_1), 32, to_f32<dq_q4_1>, to_bf16<dq_q4_1> },
        { GGML_TYPE_Q5_0, sizeof(blk_q5_0), 32, to_f32<dq_q5_0>, to_bf16<dq_q5_0> },
        { GGML_TYPE_Q5_1, sizeof(blk_q5_1), 32, to_f32<dq_q5_1>, to_bf16<dq_q5_1> },
        { GGML_TYPE_Q8_0, sizeof(blk_q8_0), 32, to_f32<dq_q8_0>, to_bf16<dq_q8_0> },
        { GGML_TYPE_Q3_K, sizeof(blk_q3_K), 256, to_f32<dq_q3_K>, to_bf16<dq_q3_K> },
        { GGML_TYPE_Q5_K, sizeof(blk_q5_K), 256, to_f32<dq_q5_K>, to_bf16<dq_q5_K> },
        { GGML_TYPE_Q6_K, sizeof(blk_q6_K), 256, to_f32<dq_q6_K>, to_bf16<dq_q6_K> },
        { GGML_TYPE_IQ4_XS, sizeof(blk_iq4_xs), 256, to_f32<dq_iq4_xs>, to_bf16<dq_iq4_xs> },
        { GGML_TYPE_F16, 2, 1, to_f32<dq_f16>, to_bf16<dq_f16> },
        { GGML_TYPE_BF16, 2, 1, to_f32<dq_bf16>, nullptr },
    };
    for (const entry & e : entries) {
        // a ggml whose block differs from the one written here keeps ggml's own dequantization
        if (ggml_type_size(e.type) != e.block_bytes || ggml_blck_size(e.type) != e.block_elems) {
            continue;
        }
        k.dequant_f32[e.type]  = e.f32;
        k.dequant_bf16[e.type] = e.bf16;
    }
}

}  // namespace xdna
