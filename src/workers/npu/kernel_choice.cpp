#include "workers/npu/kernel_choice.h"

#include <limits>

namespace xdna::npu {

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

double npu_cost_model::launch_seconds(const npu_kernel & kn) const {
    return queued_s + kn.flops() / (kn.b == npu_dtype::i8 ? ops_per_s_i8 : flops_per_s);
}

npu_cost_hint npu_cost_model::hint(const npu_kernel & kn, int64_t launches_per_block, int64_t activations) const {
    npu_cost_hint h;
    h.block_rows         = kn.rows;
    h.launches_per_block = launches_per_block;
    h.launch_s           = launch_seconds(kn);
    h.fixed_s            = dispatch_s + convert_s * (double) activations;
    return h;
}

const npu_design * choose_design(const npu_manifest & m, npu_dtype a, npu_dtype b, int64_t k) {
    const npu_design * best = nullptr;
    const bool w8 = b == npu_dtype::i8;
    for (const npu_design & d : m.designs()) {
        if (d.a != a || d.b != b || d.kernels.empty()) continue;
        if (w8 && d.k != 1024) continue;          // one scale per 1,024 weights: a block may not straddle two
        if (d.k == k) return &d;                  // K-complete: no host-side sums
        if (!best || d.k < best->k) best = &d;
    }
    return best;
}

npu_tiling choose_tiling(const npu_manifest & m, const npu_design & design, int64_t tokens, int64_t rows, int64_t k,
                         const npu_cost_model & cost) {
    npu_tiling best;
    best.predicted_s = std::numeric_limits<double>::infinity();
    for (int idx : design.kernels) {
        const npu_kernel & kn = m.kernels()[idx];
        npu_tiling t;
        t.kernel       = &kn;
        t.k_padded     = ceil_div(k, kn.k) * kn.k;
        t.token_blocks = ceil_div(tokens, kn.tokens);
        t.row_blocks   = ceil_div(rows, kn.rows);
        t.k_blocks     = t.k_padded / kn.k;
        t.predicted_s  = cost.dispatch_s + (double) t.launches() * cost.launch_seconds(kn);
        if (t.predicted_s < best.predicted_s) best = t;
    }
    return best;
}

}  // namespace xdna::npu
