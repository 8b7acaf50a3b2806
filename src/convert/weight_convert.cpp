// Weight conversion: plain or repacked ggml weights to bf16, or to int8 with one scale per row and 1,024 weights.
//
// Each row is processed in chunks of XDNA_W8_GROUP columns (a multiple of every ggml block size): the chunk's plain
// blocks are dequantized exactly as ggml's to_float does and then rounded. A repacked row is read straight out of
// its 8-row group (by a kernel that reads the interleaved blocks, or un-repacked into a small stack buffer first), so
// any row range works.

#include "convert_kernels.h"
#include "repack_layout.h"
#include "xdna_convert.h"

#include <cstring>
#include <string>

namespace {

constexpr int64_t CHUNK = XDNA_W8_GROUP;
static_assert(CHUNK % 256 == 0, "a chunk must hold whole blocks of every type");

// Everything the row loop needs about a weight, checked once per call.
struct weight_desc {
    ggml_type        type;
    int64_t          K, N, n_expert;
    size_t           nb1, nb2, block_size;
    int64_t          block_elems;
    bool             repacked;
    ggml_to_float_t  to_float;
    const char *     data;
};

void set_err(std::string * err, const std::string & msg) {
    if (err != nullptr) {
        *err = msg;
    }
}

std::string tensor_label(const ggml_tensor * w) {
    return std::string(w->name[0] ? w->name : "(unnamed)") + " (" + ggml_type_name(w->type) + ")";
}

bool describe(const ggml_tensor * w, weight_desc & d, std::string * why) {
    if (w == nullptr) {
        set_err(why, "weight is null");
        return false;
    }
    const ggml_type type = w->type;
    if (type < 0 || type >= GGML_TYPE_COUNT) {
        set_err(why, "weight has an invalid type");
        return false;
    }
    const ggml_type_traits * tr = ggml_get_type_traits(type);
    if (type != GGML_TYPE_F32 && tr->to_float == nullptr) {
        set_err(why, tensor_label(w) + ": ggml cannot dequantize this type");
        return false;
    }
    if (w->ne[3] != 1) {
        set_err(why, tensor_label(w) + ": 4-D weights are not supported (ne3 = " + std::to_string(w->ne[3]) + ")");
        return false;
    }
    if (w->nb[0] != ggml_type_size(type) || w->ne[0] % ggml_blck_size(type) != 0 ||
        w->nb[1] < ggml_row_size(type, w->ne[0])) {
        set_err(why, tensor_label(w) + ": rows are not contiguous blocks");
        return false;
    }
    // (CPU_REPACK is host memory but does not say so: its buffer type has no is_host)
    const ggml_tensor * base = w->view_src ? w->view_src : w;
    if (base->buffer != nullptr && !ggml_backend_buffer_is_host(base->buffer) && !xdna_tensor_in_repack_buffer(w)) {
        set_err(why, tensor_label(w) + ": not in host memory (buffer " +
                         ggml_backend_buft_name(ggml_backend_buffer_get_type(base->buffer)) + ")");
        return false;
    }
    d.type        = type;
    d.K           = w->ne[0];
    d.N           = w->ne[1];
    d.n_expert    = w->ne[2];
    d.nb1         = w->nb[1];
    d.nb2         = w->nb[2];
    d.block_size  = ggml_type_size(type);
    d.block_elems = ggml_blck_size(type);
    d.to_float    = tr->to_float;
    d.data        = (const char *) w->data;
    d.repacked    = false;

    if (xdna_tensor_in_repack_buffer(w)) {
        const xdna_repack_type_info * info = xdna_repack_info(type);
        if (w->view_src != nullptr) {
            set_err(why, tensor_label(w) + ": a view of a repacked weight (convert the weight itself)");
            return false;
        }
        if (w->extra == nullptr) {
            // init_tensor gave it no layout, so the CPU never stored data in it either
            set_err(why, tensor_label(w) + ": in CPU_REPACK but without a repacked layout");
            return false;
        }
        if (info == nullptr || !info->verified) {
            set_err(why, tensor_label(w) + ": repacked layout not verified by the probe" +
                             (info && !info->note.empty() ? " (" + info->note + ")" : std::string()));
            return false;
        }
        if (w->extra != info->extra) {
            set_err(why, tensor_label(w) + ": unknown repacked layout (its traits differ from the probe's)");
            return false;
        }
        if (d.N % xdna::REPACK_ROWS != 0 || !ggml_is_contiguous(w)) {
            set_err(why, tensor_label(w) + ": repacked weight with rows not in whole 8-row groups");
            return false;
        }
        d.repacked = true;
    }
    return true;
}

// Checks the arguments of a conversion call; on success fills d.
bool check_call(const char * fn, const ggml_tensor * w, int64_t expert, int64_t r0, int64_t r1, const void * dst,
                int64_t ld, weight_desc & d, std::string * err) {
    std::string why;
    if (!describe(w, d, &why)) {
        set_err(err, std::string(fn) + ": " + why);
        return false;
    }
    const std::string who = std::string(fn) + ": " + tensor_label(w) + ": ";
    if (expert < 0 || expert >= d.n_expert) {
        set_err(err, who + "expert " + std::to_string(expert) + " outside 0.." + std::to_string(d.n_expert - 1));
        return false;
    }
    if (r0 < 0 || r1 < r0 || r1 > d.N) {
        set_err(err, who + "row range [" + std::to_string(r0) + ", " + std::to_string(r1) + ") outside [0, " +
                         std::to_string(d.N) + ")");
        return false;
    }
    if (r1 > r0 && (dst == nullptr || d.data == nullptr)) {
        set_err(err, who + (dst == nullptr ? "destination is null" : "weight has no data"));
        return false;
    }
    if (ld < d.K) {
        set_err(err, who + "destination row stride " + std::to_string(ld) + " is less than K = " + std::to_string(d.K));
        return false;
    }
    return true;
}

// The first byte of the 8-row group that holds row r of a repacked weight.
const char * row_group(const weight_desc & d, int64_t expert, int64_t r) {
    return d.data + expert * d.nb2 + (r / xdna::REPACK_ROWS) * xdna::REPACK_ROWS * d.nb1;
}

// Yields the plain blocks of columns [c0, c0 + n) of one row: in place for a plain weight, un-repacked into
// `scratch` for a repacked one.
const void * row_chunk_blocks(const weight_desc & d, int64_t expert, int64_t r, int64_t c0, int64_t n,
                              uint8_t * scratch) {
    const int64_t x0 = c0 / d.block_elems;
    if (!d.repacked) {
        return d.data + expert * d.nb2 + r * d.nb1 + x0 * d.block_size;
    }
    xdna::unrepack_row(d.type, row_group(d, expert, r), (int) (r % xdna::REPACK_ROWS), x0, x0 + n / d.block_elems,
                       scratch);
    return scratch;
}

// Largest plain-block bytes of one chunk of a repacked type (Q4_0 / IQ4_NL: 32 blocks x 18 bytes).
constexpr size_t SCRATCH_BYTES = 1024;

// f32 values of n columns of plain blocks (pointer into the source for F32, else dequantized into tmp).
const float * chunk_f32(const weight_desc & d, const xdna::convert_kernels & k, const void * blocks, int64_t n,
                        float * tmp) {
    if (d.type == GGML_TYPE_F32) {
        return (const float *) blocks;
    }
    if (k.dequant_f32[d.type] != nullptr) {
        k.dequant_f32[d.type](blocks, tmp, n);
    } else {
        d.to_float(blocks, tmp, n);
    }
    return tmp;
}

// f32 values of columns [c0, c0 + n) of one row (n <= CHUNK).
const float * row_chunk_f32(const weight_desc & d, const xdna::convert_kernels & k, int64_t expert, int64_t r,
                            int64_t c0, int64_t n, uint8_t * scratch, float * tmp) {
    if (d.repacked && k.x8_f32[d.type] != nullptr) {
        k.x8_f32[d.type](row_group(d, expert, r), (int) (r % xdna::REPACK_ROWS), c0 / d.block_elems, n, tmp);
        return tmp;
    }
    return chunk_f32(d, k, row_chunk_blocks(d, expert, r, c0, n, scratch), n, tmp);
}

}  // namespace

bool xdna_weight_convertible(const ggml_tensor * w, std::string * why) {
    weight_desc d;
    return describe(w, d, why);
}

bool xdna_weight_to_bf16(const ggml_tensor * w, int64_t expert, int64_t r0, int64_t r1, ggml_bf16_t * dst,
                         int64_t ld, std::string * err) {
    weight_desc d;
    if (!check_call("xdna_weight_to_bf16", w, expert, r0, r1, dst, ld, d, err)) {
        return false;
    }
    const xdna::convert_kernels & k = xdna::kernels();
    alignas(64) float   tmp[CHUNK];
    alignas(64) uint8_t scratch[SCRATCH_BYTES];

    for (int64_t r = r0; r < r1; ++r) {
        ggml_bf16_t * y = dst + (r - r0) * ld;
        for (int64_t c0 = 0; c0 < d.K; c0 += CHUNK) {
            const int64_t n = d.K - c0 < CHUNK ? d.K - c0 : CHUNK;
            if (d.repacked && k.x8_bf16[d.type] != nullptr) {
                k.x8_bf16[d.type](row_group(d, expert, r), (int) (r % xdna::REPACK_ROWS), c0 / d.block_elems, n, y + c0);
                continue;
            }
            const void * blocks = row_chunk_blocks(d, expert, r, c0, n, scratch);
            if (d.type == GGML_TYPE_BF16) {
                std::memcpy(y + c0, blocks, n * sizeof(ggml_bf16_t));
            } else if (k.dequant_bf16[d.type] != nullptr) {
                k.dequant_bf16[d.type](blocks, y + c0, n);
            } else {
                k.f32_to_bf16(chunk_f32(d, k, blocks, n, tmp), y + c0, n);
            }
        }
        if (ld > d.K) {
            std::memset(y + d.K, 0, (ld - d.K) * sizeof(ggml_bf16_t));
        }
    }
    return true;
}

bool xdna_weight_to_int8(const ggml_tensor * w, int64_t expert, int64_t r0, int64_t r1, int8_t * dst, int64_t ld,
                         float * scales, int64_t ld_scales, std::string * err) {
    weight_desc d;
    if (!check_call("xdna_weight_to_int8", w, expert, r0, r1, dst, ld, d, err)) {
        return false;
    }
    const int64_t n_groups = xdna_w8_groups(d.K);
    if (r1 > r0 && (scales == nullptr || ld_scales < n_groups)) {
        set_err(err, "xdna_weight_to_int8: " + tensor_label(w) + ": " +
                         (scales == nullptr ? std::string("scales is null")
                                            : "scale row stride " + std::to_string(ld_scales) + " is less than the " +
                                                  std::to_string(n_groups) + " groups of a row"));
        return false;
    }
    const xdna::convert_kernels & k = xdna::kernels();
    alignas(64) float   tmp[CHUNK];
    alignas(64) uint8_t scratch[SCRATCH_BYTES];

    for (int64_t r = r0; r < r1; ++r) {
        int8_t * y  = dst + (r - r0) * ld;
        float *  sc = scales + (r - r0) * ld_scales;
        for (int64_t c0 = 0; c0 < d.K; c0 += CHUNK) {
            const int64_t  n      = d.K - c0 < CHUNK ? d.K - c0 : CHUNK;
            const float *  x      = row_chunk_f32(d, k, expert, r, c0, n, scratch, tmp);
            const uint32_t amax   = k.absmax_bits(x, n);
            if (amax >= 0x7f800000u) {
                set_err(err, "xdna_weight_to_int8: " + tensor_label(w) + ": row " + std::to_string(r) + " of expert " +
                                 std::to_string(expert) + " has a NaN or Inf, which int8 cannot hold");
                return false;
            }
            float absmax;
            std::memcpy(&absmax, &amax, 4);
            const float scale = absmax / 127.0f;
            const float inv   = scale != 0.0f ? 1.0f / scale : 0.0f;
            sc[c0 / CHUNK]    = scale;
            k.f32_to_int8(x, y + c0, n, inv);
        }
        if (ld > d.K) {
            std::memset(y + d.K, 0, ld - d.K);
        }
    }
    return true;
}

bool xdna_weight_plain_rows(const ggml_tensor * w, int64_t expert, int64_t r0, int64_t r1, void * dst,
                            size_t dst_row_bytes, std::string * err) {
    weight_desc d;
    if (!check_call("xdna_weight_plain_rows", w, expert, r0, r1, dst, w ? w->ne[0] : 0, d, err)) {
        return false;
    }
    const size_t row_bytes = ggml_row_size(d.type, d.K);
    if (dst_row_bytes < row_bytes) {
        set_err(err, "xdna_weight_plain_rows: " + tensor_label(w) + ": destination row of " +
                         std::to_string(dst_row_bytes) + " bytes is less than the row's " + std::to_string(row_bytes));
        return false;
    }
    const int64_t nblocks = d.K / d.block_elems;
    for (int64_t r = r0; r < r1; ++r) {
        char * y = (char *) dst + (r - r0) * dst_row_bytes;
        if (d.repacked) {
            xdna::unrepack_row(d.type, row_group(d, expert, r), (int) (r % xdna::REPACK_ROWS), 0, nblocks, y);
        } else {
            std::memcpy(y, d.data + expert * d.nb2 + r * d.nb1, row_bytes);
        }
    }
    return true;
}
