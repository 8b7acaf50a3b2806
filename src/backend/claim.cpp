#include "backend/claim.h"

#include "ggml.h"

#include <cstring>
#include <string>

namespace xdna {

namespace {

bool fail(std::string * why, const char * reason) {
    if (why) *why = reason;
    return false;
}

bool is_layout_op(ggml_op op) {
    return op == GGML_OP_NONE || op == GGML_OP_VIEW || op == GGML_OP_RESHAPE || op == GGML_OP_PERMUTE ||
           op == GGML_OP_TRANSPOSE;
}

bool known_prec(int32_t p) {
    return p == prec_default || p == prec_f32 || p == prec_bf16 || p == prec_f16 || p == prec_q8 || p == prec_q4;
}

int32_t op_param(const ggml_tensor * op, int i) {
    int32_t v;
    memcpy(&v, (const char *) op->op_params + i * sizeof(int32_t), sizeof(v));
    return v;
}

}  // namespace

int32_t claim_acc_request(const ggml_tensor * op) {
    return op_param(op, 0);
}

int32_t claim_src1_request(const ggml_tensor * op) {
    return op_param(op, 3);
}

bool claim_src1_allows(const ggml_tensor * op, int32_t to) {
    const int32_t req = claim_src1_request(op);
    return req == prec_default || to == prec_default || to <= req;
}

bool claim_weight_buft(ggml_backend_buffer_type_t buft, const claim_context & ctx) {
    return ggml_backend_buft_is_host(buft) || (ctx.repack_buft && buft == ctx.repack_buft);
}

int64_t claim_tokens(const ggml_tensor * op) {
    // MUL_MAT: src1 is [K, tokens]; MUL_MAT_ID: src1 is [K, expert slots, tokens]
    return op->op == GGML_OP_MUL_MAT_ID ? op->src[1]->ne[2] : op->src[1]->ne[1];
}

bool claim(const ggml_tensor * op, const claim_context & ctx, std::string * why) {
    if (is_layout_op(op->op)) {
        return true;
    }
    if (op->op != GGML_OP_MUL_MAT && op->op != GGML_OP_MUL_MAT_ID) {
        return fail(why, "not a matrix multiply");
    }
    const bool is_id = op->op == GGML_OP_MUL_MAT_ID;
    const ggml_tensor * w = op->src[0];
    const ggml_tensor * x = op->src[1];

    // the weight: a leaf (model weights are leaves; KV-cache views and computed tensors change between calls)
    if (w->op != GGML_OP_NONE || w->view_src != nullptr) return fail(why, "src0 is not a leaf weight");
    if (!ggml_is_contiguous(w)) return fail(why, "src0 is not contiguous");
    if (is_id ? w->ne[3] != 1 : (w->ne[2] != 1 || w->ne[3] != 1)) return fail(why, "src0 has batch dimensions");
    if (w->type != GGML_TYPE_F32 && ggml_get_type_traits(w->type)->to_float == nullptr) {
        return fail(why, "weight type cannot be converted");
    }
    if (w->buffer && !claim_weight_buft(ggml_backend_buffer_get_type(w->buffer), ctx)) {
        return fail(why, "weight is not in host memory");
    }

    // activations and result: f32 with contiguous rows
    if (x->type != GGML_TYPE_F32 || op->type != GGML_TYPE_F32) return fail(why, "activations or result are not f32");
    if (x->nb[0] != sizeof(float) || op->nb[0] != sizeof(float)) return fail(why, "rows are not contiguous");
    if (!is_id && (x->ne[2] != 1 || x->ne[3] != 1)) return fail(why, "src1 has batch dimensions");
    if (is_id && (x->ne[3] != 1 || op->src[2] == nullptr || op->src[2]->type != GGML_TYPE_I32)) {
        return fail(why, "unsupported MUL_MAT_ID layout");
    }
    if (x->ne[0] != w->ne[0]) return fail(why, "shape mismatch");

    // precision requests: any accumulator request is met (f32 or better everywhere); an accumulator "request" of Q8 or
    // Q4, or a value this build does not know, is left to the CPU backend
    const int32_t acc = claim_acc_request(op);
    if (!known_prec(acc) || acc == prec_q8 || acc == prec_q4) return fail(why, "accumulator precision request not allowed or unknown");
    if (!known_prec(claim_src1_request(op))) return fail(why, "unknown src1 precision request");
    if (!claim_src1_allows(op, ctx.npu_src1_prec)) return fail(why, "src1 precision request the NPU worker cannot honour");

    // prompt processing only (unless the experimental NPU decode asks for small batches)
    if (claim_tokens(op) < ctx.min_batch && !ctx.small_batches) return fail(why, "fewer tokens than GGML_XDNA_MIN_BATCH");

    // the CPU worker is every multiply's fallback, so it must be able to compute all of it
    if (ctx.cpu_dev && !ggml_backend_dev_supports_op(ctx.cpu_dev, op)) return fail(why, "the CPU backend cannot compute it");
    return true;
}

}  // namespace xdna
