#include "repack_layout.h"

#include <cstring>

namespace xdna {

namespace {

// Row j's quants: plain bytes [c * 8, c * 8 + 8) are chunk c * 8 + j of the x8 block.
template <int QS_BYTES>
inline void gather_qs(const uint8_t * x8_qs, int j, uint8_t * out) {
    for (int c = 0; c < QS_BYTES / 8; ++c) {
        std::memcpy(out + c * 8, x8_qs + (c * 8 + j) * 8, 8);
    }
}

// Q4_0 stores offset-8 nibbles as signed nibbles: every byte was XOR-ed with 0x88, which is its own inverse.
inline void gather_qs_q4_0(const uint8_t * x8_qs, int j, uint8_t * out) {
    for (int c = 0; c < 2; ++c) {
        uint64_t v;
        std::memcpy(&v, x8_qs + (c * 8 + j) * 8, 8);
        v ^= 0x8888888888888888ULL;
        std::memcpy(out + c * 8, &v, 8);
    }
}

// Q4_K packs the 6-bit (scale, min) of 8 sub-blocks into 12 bytes ("k4" packing: entries 0..3 in the low 6 bits of
// bytes 0..3 / 4..7, entries 4..7 split between bytes 8..11 and the top 2 bits of bytes 0..7). The repacked block
// uses the same packing per sub-block, with the row in place of the sub-block.
inline void k4_unpack(const uint8_t * q, int i, uint8_t & s, uint8_t & m) {
    if (i < 4) {
        s = q[i] & 63;
        m = q[i + 4] & 63;
    } else {
        s = (uint8_t) ((q[i + 4] & 0x0F) | ((q[i - 4] >> 6) << 4));
        m = (uint8_t) ((q[i + 4] >> 4) | ((q[i] >> 6) << 4));
    }
}

inline void k4_pack(const uint8_t * s, const uint8_t * m, uint8_t * q) {
    for (int i = 0; i < 4; ++i) {
        q[i]     = (uint8_t) ((s[i] & 63) | ((s[i + 4] >> 4) << 6));
        q[i + 4] = (uint8_t) ((m[i] & 63) | ((m[i + 4] >> 4) << 6));
        q[i + 8] = (uint8_t) ((s[i + 4] & 0x0F) | ((m[i + 4] & 0x0F) << 4));
    }
}

void unrepack_q4_0(const blk_q4_0x8 * src, int j, int64_t n, blk_q4_0 * dst) {
    for (int64_t x = 0; x < n; ++x) {
        dst[x].d = src[x].d[j];
        gather_qs_q4_0(src[x].qs, j, dst[x].qs);
    }
}

void unrepack_q4_K(const blk_q4_Kx8 * src, int j, int64_t n, blk_q4_K * dst) {
    for (int64_t x = 0; x < n; ++x) {
        dst[x].d    = src[x].d[j];
        dst[x].dmin = src[x].dmin[j];
        uint8_t s[8], m[8];
        for (int sb = 0; sb < 8; ++sb) {
            k4_unpack(src[x].scales + sb * 12, j, s[sb], m[sb]);
        }
        k4_pack(s, m, dst[x].scales);
        gather_qs<128>(src[x].qs, j, dst[x].qs);
    }
}

// Q2_K: x8 scale byte i is plain scale (i / 16) * 2 + i % 2 of row (i % 16) / 2, so plain scale t of row j sits at
// (t / 2) * 16 + 2 * j + t % 2.
void unrepack_q2_K(const blk_q2_Kx8 * src, int j, int64_t n, blk_q2_K * dst) {
    for (int64_t x = 0; x < n; ++x) {
        dst[x].d    = src[x].d[j];
        dst[x].dmin = src[x].dmin[j];
        for (int t = 0; t < 16; ++t) {
            dst[x].scales[t] = src[x].scales[(t / 2) * 16 + 2 * j + (t % 2)];
        }
        gather_qs<64>(src[x].qs, j, dst[x].qs);
    }
}

void unrepack_iq4_nl(const blk_iq4_nlx8 * src, int j, int64_t n, blk_iq4_nl * dst) {
    for (int64_t x = 0; x < n; ++x) {
        dst[x].d = src[x].d[j];
        gather_qs<16>(src[x].qs, j, dst[x].qs);
    }
}

void unrepack_mxfp4(const blk_mxfp4x8 * src, int j, int64_t n, blk_mxfp4 * dst) {
    for (int64_t x = 0; x < n; ++x) {
        dst[x].e = src[x].e[j];
        gather_qs<16>(src[x].qs, j, dst[x].qs);
    }
}

}  // namespace

size_t repack_plain_block_size(ggml_type type) {
    switch (type) {
        case GGML_TYPE_Q4_0:   return sizeof(blk_q4_0);
        case GGML_TYPE_Q4_K:   return sizeof(blk_q4_K);
        case GGML_TYPE_Q2_K:   return sizeof(blk_q2_K);
        case GGML_TYPE_IQ4_NL: return sizeof(blk_iq4_nl);
        case GGML_TYPE_MXFP4:  return sizeof(blk_mxfp4);
        default:               return 0;
    }
}

int64_t repack_block_elems(ggml_type type) {
    switch (type) {
        case GGML_TYPE_Q4_0:
        case GGML_TYPE_IQ4_NL:
        case GGML_TYPE_MXFP4:  return 32;
        case GGML_TYPE_Q4_K:
        case GGML_TYPE_Q2_K:   return 256;
        default:               return 0;
    }
}

bool unrepack_row(ggml_type type, const void * group, int j, int64_t x0, int64_t x1, void * dst) {
    const int64_t n = x1 - x0;
    switch (type) {
        case GGML_TYPE_Q4_0:
            unrepack_q4_0((const blk_q4_0x8 *) group + x0, j, n, (blk_q4_0 *) dst);
            return true;
        case GGML_TYPE_Q4_K:
            unrepack_q4_K((const blk_q4_Kx8 *) group + x0, j, n, (blk_q4_K *) dst);
            return true;
        case GGML_TYPE_Q2_K:
            unrepack_q2_K((const blk_q2_Kx8 *) group + x0, j, n, (blk_q2_K *) dst);
            return true;
        case GGML_TYPE_IQ4_NL:
            unrepack_iq4_nl((const blk_iq4_nlx8 *) group + x0, j, n, (blk_iq4_nl *) dst);
            return true;
        case GGML_TYPE_MXFP4:
            unrepack_mxfp4((const blk_mxfp4x8 *) group + x0, j, n, (blk_mxfp4 *) dst);
            return true;
        default:
            return false;
    }
}

}  // namespace xdna

bool xdna_unrepack_group(ggml_type type, const void * src, int64_t nblocks, void * dst) {
    const size_t bs = xdna::repack_plain_block_size(type);
    if (bs == 0 || src == nullptr || dst == nullptr || nblocks < 0) {
        return false;
    }
    for (int j = 0; j < xdna::REPACK_ROWS; ++j) {
        xdna::unrepack_row(type, src, j, 0, nblocks, (char *) dst + (size_t) j * nblocks * bs);
    }
    return true;
}
