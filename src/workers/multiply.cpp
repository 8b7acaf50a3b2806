#include "workers/multiply.h"

#include "convert/xdna_convert.h"

#include <cstdio>
#include <cstring>

namespace xdna {

std::string shape_key::str() const {
    char buf[160];
    snprintf(buf, sizeof(buf), "%s %s%s K=%lld rows=%lld tokens=%lld%s%s%s%s", ggml_op_name((ggml_op) op),
             ggml_type_name((ggml_type) type), repacked ? "(repacked)" : "", (long long) k, (long long) rows,
             (long long) tokens, experts > 1 ? (" experts=" + std::to_string(experts)).c_str() : "",
             nodes > 1 ? (" x" + std::to_string(nodes)).c_str() : "", per_call ? " weights per call" : "",
             ahead ? " begun ahead" : "");
    return buf;
}

size_t shape_key_hash::operator()(const shape_key & s) const {
    size_t h = 1469598103934665603ull;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix(s.op); mix(s.type); mix(s.k); mix(s.rows); mix(s.tokens); mix(s.experts); mix(s.repacked); mix(s.nodes); mix(s.per_call); mix(s.ahead);
    return h;
}

shape_key shape_key_of(const ggml_tensor * node, bool repacked) {
    shape_key k;
    const ggml_tensor * w = node->src[0];
    k.op       = node->op;
    k.type     = w->type;
    k.k        = w->ne[0];
    k.rows     = w->ne[1];
    k.experts  = node->op == GGML_OP_MUL_MAT_ID ? w->ne[2] : 1;
    k.tokens   = node->op == GGML_OP_MUL_MAT_ID ? node->src[1]->ne[2] : node->src[1]->ne[1];
    k.repacked = repacked;
    return k;
}

bool moe_routing::read(const ggml_tensor * ids, int64_t n_experts, std::string * why) {
    const int64_t n_used = ids->ne[0], n_tok = ids->ne[1];
    first.assign(n_experts + 1, 0);
    pairs.assign(n_used * n_tok, {});
    // counting sort by expert: one pass to count, one to place (token order kept within each expert)
    auto id_at = [ids](int64_t t, int64_t s) {
        return *(const int32_t *) ((const char *) ids->data + t * ids->nb[1] + s * ids->nb[0]);
    };
    for (int64_t t = 0; t < n_tok; ++t) {
        for (int64_t s = 0; s < n_used; ++s) {
            const int32_t e = id_at(t, s);
            if (e < 0 || e >= n_experts) {
                if (why) *why = "expert id " + std::to_string(e) + " out of range [0, " + std::to_string(n_experts) + ")";
                first.clear();
                pairs.clear();
                return false;
            }
            first[e + 1]++;
        }
    }
    for (int64_t e = 0; e < n_experts; ++e) first[e + 1] += first[e];
    std::vector<int64_t> at(first.begin(), first.end() - 1);
    for (int64_t t = 0; t < n_tok; ++t) {
        for (int64_t s = 0; s < n_used; ++s) pairs[at[id_at(t, s)]++] = { (int32_t) t, (int32_t) s };
    }
    return true;
}

bool multiply::any_on_cpu() const {
    for (uint8_t c : cpu_expert) {
        if (c) return true;
    }
    return false;
}

multiply describe_multiply(const ggml_tensor * node, const ggml_tensor * twin) {
    multiply m;
    m.node     = node;
    m.twin     = twin;
    m.repacked = xdna_tensor_in_repack_buffer(node->src[0]);
    m.key      = shape_key_of(node, m.repacked);
    m.key.nodes = m.nodes();
    if (node->op == GGML_OP_MUL_MAT_ID) m.routing.read(node->src[2], node->src[0]->ne[2], &m.routing_error);
    return m;
}

static bool same_layout(const ggml_tensor * a, const ggml_tensor * b) {
    if (a->type != b->type) return false;
    for (int d = 0; d < GGML_MAX_DIMS; ++d) {
        if (a->ne[d] != b->ne[d] || a->nb[d] != b->nb[d]) return false;
    }
    return true;
}

bool can_pair(const ggml_tensor * a, const ggml_tensor * b) {
    if (a->op != GGML_OP_MUL_MAT || b->op != GGML_OP_MUL_MAT) return false;
    const ggml_tensor * xa = a->src[1], * xb = b->src[1];
    if (xa != xb && (xa->data == nullptr || xa->data != xb->data || !same_layout(xa, xb))) return false;
    if (b->src[1] == a || b->src[0] == a) return false;
    if (memcmp(a->op_params, b->op_params, sizeof(a->op_params)) != 0) return false;   // the same precision requests
    if (!same_layout(a->src[0], b->src[0]) || !same_layout(a, b)) return false;
    // 2-D weights and inputs only: a batch of matrices (attention's) is not what the workers split
    if (a->src[0]->ne[2] * a->src[0]->ne[3] != 1 || xa->ne[2] * xa->ne[3] != 1) return false;
    return xdna_tensor_in_repack_buffer(a->src[0]) == xdna_tensor_in_repack_buffer(b->src[0]);
}

}  // namespace xdna
