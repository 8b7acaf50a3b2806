#include "workers/npu/kernel_choice.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace xdna::npu {

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

double npu_cost_model::launch_seconds(const npu_kernel & kn) const {
    return queued_s + kn.flops() / (kn.b == npu_dtype::i8 ? ops_per_s_i8 : flops_per_s);
}

npu_cost_hint npu_tiling::hint(const npu_cost_model & cost, int64_t launches_per_block, int64_t activations) const {
    npu_cost_hint h;
    h.block_rows         = kernel->rows;
    h.launches_per_block = launches_per_block;
    h.launch_s           = cost.launch_seconds(*kernel);
    h.fixed_s            = cost.dispatch_s + cost.convert_s * (double) activations;
    for (int i = 0; i < npu_cost_hint::max_wide && wide[i]; ++i) {
        h.wide_rows[i]  = wide[i]->rows;
        h.wide_units[i] = cost.launch_seconds(*wide[i]) / h.launch_s;
    }
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
                         const npu_cost_model & cost, int64_t max_rows) {
    npu_tiling best;
    best.predicted_s = std::numeric_limits<double>::infinity();
    std::vector<const npu_kernel *> ks;   // by tokens, then widest first
    for (int idx : design.kernels) {
        if (m.kernels()[idx].rows <= max_rows) ks.push_back(&m.kernels()[idx]);
    }
    std::sort(ks.begin(), ks.end(), [](const npu_kernel * a, const npu_kernel * b) {
        return a->tokens != b->tokens ? a->tokens < b->tokens : a->rows > b->rows;
    });
    for (size_t i = 0, end = 0; i < ks.size(); i = end) {
        // one token size: its narrowest block is the unit, the widest max_wide others are used where rows fill them
        for (end = i; end < ks.size() && ks[end]->tokens == ks[i]->tokens;) ++end;
        npu_tiling t;
        t.kernel = ks[end - 1];
        for (size_t j = i; j + 1 < end && j - i < size_t(npu_cost_hint::max_wide); ++j) t.wide[j - i] = ks[j];
        t.k_padded     = ceil_div(k, t.kernel->k) * t.kernel->k;
        t.token_blocks = ceil_div(tokens, t.kernel->tokens);
        t.k_blocks     = t.k_padded / t.kernel->k;
        const npu_cost_hint h = t.hint(cost, t.token_blocks * t.k_blocks, 0);
        t.predicted_s = cost.dispatch_s + h.units(rows) * h.launch_s;
        if (t.predicted_s < best.predicted_s) best = t;
    }
    return best;
}

}  // namespace xdna::npu
