#include "workers/npu/kernel_choice.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace xdna::npu {

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

double npu_timing::launch_seconds(const npu_design & d, const npu_kernel & kn) const {
    xdna1_block b;
    b.M       = kn.tokens;
    b.K       = kn.k;
    b.N       = kn.rows;
    b.a_bytes = (int) npu_dtype_size(kn.a);
    b.b_bytes = (int) npu_dtype_size(kn.b);
    b.c_bytes = (int) npu_dtype_size(kn.c);
    b.macs    = kn.a == npu_dtype::i8 && kn.b == npu_dtype::i8 ? xdna1_macs::i8 : xdna1_macs::bf16;
    return device.queued_s + device.run_seconds(d.tile, b);
}

launch_cost npu_tiling::hint(const npu_timing & cost, int64_t launches_per_block, int64_t activations,
                              double weight_values_per_row) const {
    // a weight converted for the call: each of a launch's rows its share of that work, on the worker's thread
    const double row_s = cost.convert_weight_s * weight_values_per_row;
    launch_cost h;
    h.block_rows         = kernel->rows;
    h.launches_per_block = launches_per_block;
    h.launch_s           = cost.launch_seconds(*design, *kernel) + row_s * (double) kernel->rows;
    h.fixed_s            = cost.device.dispatch_s + cost.convert_s * (double) activations;
    for (int i = 0; i < launch_cost::max_wide && wide[i]; ++i) {
        h.wide_rows[i]  = wide[i]->rows;
        h.wide_units[i] = (cost.launch_seconds(*design, *wide[i]) + row_s * (double) wide[i]->rows) / h.launch_s;
    }
    return h;
}

std::vector<const npu_design *> choose_designs(const npu_manifest & m, npu_dtype a, npu_dtype b, int64_t k) {
    const bool w8 = b == npu_dtype::i8;
    int best_k = 0;   // k itself (K-complete) or the smallest K block
    for (const npu_design & d : m.designs()) {
        if (d.a != a || d.b != b || d.kernels.empty()) continue;
        if (w8 && d.k != 1024) continue;          // one scale per 1,024 weights: a block may not straddle two
        if (best_k != k && (d.k == k || best_k == 0 || d.k < best_k)) best_k = d.k;
    }
    std::vector<const npu_design *> out;
    for (const npu_design & d : m.designs()) {
        if (d.a == a && d.b == b && !d.kernels.empty() && d.k == best_k) out.push_back(&d);
    }
    return out;
}

npu_tiling choose_tiling(const npu_manifest & m, const std::vector<const npu_design *> & designs, int64_t tokens,
                         int64_t rows, int64_t k, const npu_timing & cost, int64_t max_rows, int held) {
    npu_tiling best;
    best.predicted_s = std::numeric_limits<double>::infinity();
    for (const npu_design * design : designs) {
        std::vector<const npu_kernel *> ks;   // by tokens, then widest first
        for (int idx : design->kernels) {
            if (m.kernels()[idx].rows <= max_rows) ks.push_back(&m.kernels()[idx]);
        }
        std::sort(ks.begin(), ks.end(), [](const npu_kernel * a, const npu_kernel * b) {
            return a->tokens != b->tokens ? a->tokens < b->tokens : a->rows > b->rows;
        });
        const double first = cost.device.dispatch_s + (held >= 0 && held != design->index ? cost.device.switch_s : 0.0);
        for (size_t i = 0, end = 0; i < ks.size(); i = end) {
            // one token size: its narrowest block is the unit, the widest max_wide others are used where rows fill them
            for (end = i; end < ks.size() && ks[end]->tokens == ks[i]->tokens;) ++end;
            npu_tiling t;
            t.design = design;
            t.kernel = ks[end - 1];
            for (size_t j = i; j + 1 < end && j - i < size_t(launch_cost::max_wide); ++j) t.wide[j - i] = ks[j];
            t.k_padded     = ceil_div(k, t.kernel->k) * t.kernel->k;
            t.token_blocks = ceil_div(tokens, t.kernel->tokens);
            t.k_blocks     = t.k_padded / t.kernel->k;
            const launch_cost h = t.hint(cost, t.token_blocks * t.k_blocks, 0);
            t.predicted_s = first + h.units(rows) * h.launch_s;
            if (t.predicted_s < best.predicted_s) best = t;
        }
    }
    return best;
}

}  // namespace xdna::npu
