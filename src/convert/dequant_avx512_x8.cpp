// AVX-512 dequantization of the five types the CPU backend repacks on x86, from plain blocks or straight from one row
// of a repacked 8-row group (no un-repacked copy in between).
//
// One kernel per type, written against an accessor that yields a block's scales and 16 plain quant bytes at a time;
// the plain accessor reads ggml's block, the x8 accessor gathers the same bytes from the interleaved block (see
// repack_layout.h for the layouts). The arithmetic is exactly that of ggml's dequantize_row_* (see
// dequant_avx512.cpp). Compiled with AVX-512 enabled: include nothing else (see convert_kernels.h).

#include "avx512_common.h"
#include "convert_kernels.h"
#include "ggml_blocks.h"
#include "repack_layout.h"

#include <immintrin.h>

namespace xdna {

namespace {

using namespace avx512;

inline uint64_t load64(const uint8_t * p) {
    uint64_t v;
    __builtin_memcpy(&v, p, 8);
    return v;
}

// Plain quant bytes [off, off + 16) of row j of an x8 block: chunks off / 8 and off / 8 + 1 of that row.
inline __m128i x8_qs16(const uint8_t * qs, int j, int off) {
    const int c = off / 8;
    return _mm_set_epi64x((long long) load64(qs + ((c + 1) * 8 + j) * 8), (long long) load64(qs + (c * 8 + j) * 8));
}

inline __m128i plain_qs16(const uint8_t * qs, int off) {
    return _mm_loadu_si128((const __m128i *) (qs + off));
}

// ---- accessors

struct q4_0_plain {
    const blk_q4_0 * x;
    float            d(int64_t i) const { return f16(x[i].d); }
    __m128i          qs(int64_t i) const { return plain_qs16(x[i].qs, 0); }
};

template <int J> struct q4_0_x8 {
    const blk_q4_0x8 * x;
    float              d(int64_t i) const { return f16(x[i].d[J]); }
    // the repack XORed every byte with 0x88; XOR again for the plain nibbles
    __m128i qs(int64_t i) const { return _mm_xor_si128(x8_qs16(x[i].qs, J, 0), _mm_set1_epi8((char) 0x88)); }
};

struct q4_K_plain {
    const blk_q4_K * x;
    float            d(int64_t i) const { return f16(x[i].d); }
    float            dmin(int64_t i) const { return f16(x[i].dmin); }
    void             scale_min(int64_t i, int sb, int & sc, int & m) const { k4_scale_min(x[i].scales, sb, sc, m); }
    __m128i          qs(int64_t i, int off) const { return plain_qs16(x[i].qs, off); }
};

// Q4_K x8: sub-block sb's 12 bytes hold the (scale, min) of the 8 rows in the k4 packing, row J at index J.
// (The row is a template argument: with it known, the scale unpacking compiles to fixed byte offsets, which took a
// third of the time when it was a run-time value.)
template <int J> struct q4_K_x8 {
    const blk_q4_Kx8 * x;
    float              d(int64_t i) const { return f16(x[i].d[J]); }
    float              dmin(int64_t i) const { return f16(x[i].dmin[J]); }
    void    scale_min(int64_t i, int sb, int & sc, int & m) const { k4_scale_min(x[i].scales + 12 * sb, J, sc, m); }
    __m128i qs(int64_t i, int off) const { return x8_qs16(x[i].qs, J, off); }
};

struct q2_K_plain {
    const blk_q2_K * x;
    float            d(int64_t i) const { return f16(x[i].d); }
    float            dmin(int64_t i) const { return f16(x[i].dmin); }
    uint8_t          scale(int64_t i, int t) const { return x[i].scales[t]; }
    __m128i          qs(int64_t i, int off) const { return plain_qs16(x[i].qs, off); }
};

// Q2_K x8: plain scale t of row J sits at (t / 2) * 16 + 2 J + t % 2.
template <int J> struct q2_K_x8 {
    const blk_q2_Kx8 * x;
    float              d(int64_t i) const { return f16(x[i].d[J]); }
    float              dmin(int64_t i) const { return f16(x[i].dmin[J]); }
    uint8_t            scale(int64_t i, int t) const { return x[i].scales[(t / 2) * 16 + 2 * J + (t % 2)]; }
    __m128i            qs(int64_t i, int off) const { return x8_qs16(x[i].qs, J, off); }
};

struct iq4_nl_plain {
    const blk_iq4_nl * x;
    float              d(int64_t i) const { return f16(x[i].d); }
    __m128i            qs(int64_t i) const { return plain_qs16(x[i].qs, 0); }
};

template <int J> struct iq4_nl_x8 {
    const blk_iq4_nlx8 * x;
    float                d(int64_t i) const { return f16(x[i].d[J]); }
    __m128i              qs(int64_t i) const { return x8_qs16(x[i].qs, J, 0); }
};

// MXFP4's scale is 2^(e - 128) (half of the E8M0 value, as ggml's table holds twice the E2M1 values), a subnormal
// for e < 2.
inline float e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? (0x00200000u << e) : ((uint32_t) (e - 1) << 23);
    float          f;
    __builtin_memcpy(&f, &bits, 4);
    return f;
}

struct mxfp4_plain {
    const blk_mxfp4 * x;
    float             d(int64_t i) const { return e8m0_half(x[i].e); }
    __m128i           qs(int64_t i) const { return plain_qs16(x[i].qs, 0); }
};

template <int J> struct mxfp4_x8 {
    const blk_mxfp4x8 * x;
    float               d(int64_t i) const { return e8m0_half(x[i].e[J]); }
    __m128i             qs(int64_t i) const { return x8_qs16(x[i].qs, J, 0); }
};

// ---- kernels (nb blocks)

// y = x * d with x = nibble - 8
template <class A, class S> void dq_q4_0(A a, int64_t nb, S s) {
    const __m512i m4  = _mm512_set1_epi32(0xF);
    const __m512i off = _mm512_set1_epi32(8);
    for (int64_t i = 0; i < nb; ++i) {
        const __m512  d = _mm512_set1_ps(a.d(i));
        const __m512i q = u8x16(a.qs(i));
        s.put(i * 32, _mm512_mul_ps(to_f(_mm512_sub_epi32(_mm512_and_si512(q, m4), off)), d));
        s.put(i * 32 + 16, _mm512_mul_ps(to_f(_mm512_sub_epi32(_mm512_srli_epi32(q, 4), off)), d));
    }
}

// y = (d * sc) * q - (dmin * m), per 32-value sub-block
template <class A, class S> void dq_q4_K(A a, int64_t nb, S s) {
    const __m512i m4 = _mm512_set1_epi32(0xF);
    for (int64_t i = 0; i < nb; ++i) {
        const float d = a.d(i), dmin = a.dmin(i);
        for (int j = 0; j < 4; ++j) {
            int sc, m;
            a.scale_min(i, 2 * j, sc, m);
            const __m512 d1 = _mm512_set1_ps(d * (float) sc), m1 = _mm512_set1_ps(dmin * (float) m);
            a.scale_min(i, 2 * j + 1, sc, m);
            const __m512  d2 = _mm512_set1_ps(d * (float) sc), m2 = _mm512_set1_ps(dmin * (float) m);
            const int64_t at = i * 256 + 64 * j;
            for (int h = 0; h < 2; ++h) {
                const __m512i v = u8x16(a.qs(i, 32 * j + 16 * h));
                s.put(at + 16 * h, _mm512_sub_ps(_mm512_mul_ps(d1, to_f(_mm512_and_si512(v, m4))), m1));
                s.put(at + 32 + 16 * h, _mm512_sub_ps(_mm512_mul_ps(d2, to_f(_mm512_srli_epi32(v, 4))), m2));
            }
        }
    }
}

// y = (d * (sc & 15)) * q - (dmin * (sc >> 4)), q = 2 bits, per 16-value sub-block
template <class A, class S> void dq_q2_K(A a, int64_t nb, S s) {
    const __m512i m2 = _mm512_set1_epi32(3);
    for (int64_t i = 0; i < nb; ++i) {
        const float d = a.d(i), dmin = a.dmin(i);
        int64_t     at = i * 256;
        for (int half = 0; half < 2; ++half) {
            const __m512i q0 = u8x16(a.qs(i, 32 * half));
            const __m512i q1 = u8x16(a.qs(i, 32 * half + 16));
            for (int j = 0; j < 4; ++j) {
                const uint8_t sa = a.scale(i, 8 * half + 2 * j), sb = a.scale(i, 8 * half + 2 * j + 1);
                const __m512  da = _mm512_set1_ps(d * (float) (sa & 0xF)), ma = _mm512_set1_ps(dmin * (float) (sa >> 4));
                const __m512  db = _mm512_set1_ps(d * (float) (sb & 0xF)), mb = _mm512_set1_ps(dmin * (float) (sb >> 4));
                const __m512i va = _mm512_and_si512(_mm512_srli_epi32(q0, 2 * j), m2);
                const __m512i vb = _mm512_and_si512(_mm512_srli_epi32(q1, 2 * j), m2);
                s.put(at, _mm512_sub_ps(_mm512_mul_ps(da, to_f(va)), ma));
                s.put(at + 16, _mm512_sub_ps(_mm512_mul_ps(db, to_f(vb)), mb));
                at += 32;
            }
        }
    }
}

// y = lut[nibble] * d (IQ4_NL, MXFP4)
template <const float * LUT, class A, class S> void dq_lut(A a, int64_t nb, S s) {
    const __m512 lut = _mm512_load_ps(LUT);
    for (int64_t i = 0; i < nb; ++i) {
        dq_lut4(lut, _mm512_set1_ps(a.d(i)), a.qs(i), i * 32, s);
    }
}

template <class A, class S> void dq_iq4_nl(A a, int64_t nb, S s) {
    dq_lut<g_lut_iq4nl>(a, nb, s);
}

template <class A, class S> void dq_mxfp4(A a, int64_t nb, S s) {
    dq_lut<g_lut_mxfp4>(a, nb, s);
}

// ---- entry points: plain blocks, or row j of a group from x8 block x0

// Row j of a group, dispatched to the accessor for that row.
template <template <int> class X8, class BLKX8, class S, void (*K0)(X8<0>, int64_t, S), void (*K1)(X8<1>, int64_t, S),
          void (*K2)(X8<2>, int64_t, S), void (*K3)(X8<3>, int64_t, S), void (*K4)(X8<4>, int64_t, S),
          void (*K5)(X8<5>, int64_t, S), void (*K6)(X8<6>, int64_t, S), void (*K7)(X8<7>, int64_t, S)>
void x8_row(const void * g, int j, int64_t nb, S s) {
    const BLKX8 * x = (const BLKX8 *) g;
    switch (j) {
        case 0: K0(X8<0>{ x }, nb, s); break;
        case 1: K1(X8<1>{ x }, nb, s); break;
        case 2: K2(X8<2>{ x }, nb, s); break;
        case 3: K3(X8<3>{ x }, nb, s); break;
        case 4: K4(X8<4>{ x }, nb, s); break;
        case 5: K5(X8<5>{ x }, nb, s); break;
        case 6: K6(X8<6>{ x }, nb, s); break;
        default: K7(X8<7>{ x }, nb, s); break;
    }
}

#define XDNA_X8_ROW(NAME, BLKX8, S)                                                                            \
    x8_row<NAME##_x8, BLKX8, S, dq_##NAME<NAME##_x8<0>, S>, dq_##NAME<NAME##_x8<1>, S>, dq_##NAME<NAME##_x8<2>, S>, \
           dq_##NAME<NAME##_x8<3>, S>, dq_##NAME<NAME##_x8<4>, S>, dq_##NAME<NAME##_x8<5>, S>,                  \
           dq_##NAME<NAME##_x8<6>, S>, dq_##NAME<NAME##_x8<7>, S>>

#define XDNA_X8_ENTRIES(NAME, BLK, BLKX8, ELEMS)                                                                  \
    void NAME##_plain_f32(const void * x, float * y, int64_t n) {                                                 \
        dq_##NAME(NAME##_plain{ (const BLK *) x }, n / (ELEMS), sink_f32{ y });                                   \
    }                                                                                                             \
    void NAME##_plain_bf16(const void * x, ggml_bf16_t * y, int64_t n) {                                          \
        dq_##NAME(NAME##_plain{ (const BLK *) x }, n / (ELEMS), sink_bf16{ y });                                  \
    }                                                                                                             \
    void NAME##_x8_f32(const void * g, int j, int64_t x0, int64_t n, float * y) {                                 \
        XDNA_X8_ROW(NAME, BLKX8, sink_f32)((const BLKX8 *) g + x0, j, n / (ELEMS), sink_f32{ y });                \
    }                                                                                                             \
    void NAME##_x8_bf16(const void * g, int j, int64_t x0, int64_t n, ggml_bf16_t * y) {                          \
        XDNA_X8_ROW(NAME, BLKX8, sink_bf16)((const BLKX8 *) g + x0, j, n / (ELEMS), sink_bf16{ y });              \
    }

XDNA_X8_ENTRIES(q4_0, blk_q4_0, blk_q4_0x8, 32)
XDNA_X8_ENTRIES(q4_K, blk_q4_K, blk_q4_Kx8, 256)
XDNA_X8_ENTRIES(q2_K, blk_q2_K, blk_q2_Kx8, 256)
XDNA_X8_ENTRIES(iq4_nl, blk_iq4_nl, blk_iq4_nlx8, 32)
XDNA_X8_ENTRIES(mxfp4, blk_mxfp4, blk_mxfp4x8, 32)

#undef XDNA_X8_ENTRIES
#undef XDNA_X8_ROW

}  // namespace

void fill_dequant_avx512_x8(convert_kernels & k) {
    struct entry {
        ggml_type type;
        size_t    block_bytes;
        int64_t   block_elems;
        void (*plain_f32)(const void *, float *, int64_t);
        void (*plain_bf16)(const void *, ggml_bf16_t *, int64_t);
        void (*x8_f32)(const void *, int, int64_t, int64_t, float *);
        void (*x8_bf16)(const void *, int, int64_t, int64_t, ggml_bf16_t *);
    };
    const entry entries[] = {
        { GGML_TYPE_Q4_0, sizeof(blk_q4_0), 32, q4_0_plain_f32, q4_0_plain_bf16, q4_0_x8_f32, q4_0_x8_bf16 },
        { GGML_TYPE_Q4_K, sizeof(blk_q4_K), 256, q4_K_plain_f32, q4_K_plain_bf16, q4_K_x8_f32, q4_K_x8_bf16 },
        { GGML_TYPE_Q2_K, sizeof(blk_q2_K), 256, q2_K_plain_f32, q2_K_plain_bf16, q2_K_x8_f32, q2_K_x8_bf16 },
        { GGML_TYPE_IQ4_NL, sizeof(blk_iq4_nl), 32, iq4_nl_plain_f32, iq4_nl_plain_bf16, iq4_nl_x8_f32,
          iq4_nl_x8_bf16 },
        { GGML_TYPE_MXFP4, sizeof(blk_mxfp4), 32, mxfp4_plain_f32, mxfp4_plain_bf16, mxfp4_x8_f32, mxfp4_x8_bf16 },
    };
    for (const entry & e : entries) {
        // a ggml whose block differs from the one written here keeps ggml's own dequantization
        if (ggml_type_size(e.type) != e.block_bytes || ggml_blck_size(e.type) != e.block_elems) {
            continue;
        }
        k.dequant_f32[e.type]  = e.plain_f32;
        k.dequant_bf16[e.type] = e.plain_bf16;
        k.x8_f32[e.type]       = e.x8_f32;
        k.x8_bf16[e.type]      = e.x8_bf16;
    }
}

}  // namespace xdna
