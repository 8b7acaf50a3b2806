#include "planner/planner.h"

#include "util/log.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace xdna {

std::string shape_key::str() const {
    char buf[160];
    snprintf(buf, sizeof(buf), "%s %s%s K=%lld rows=%lld tokens=%lld%s", ggml_op_name((ggml_op) op),
             ggml_type_name((ggml_type) type), repacked ? "(repacked)" : "", (long long) k, (long long) rows,
             (long long) tokens, experts > 1 ? (" experts=" + std::to_string(experts)).c_str() : "");
    return buf;
}

size_t shape_key_hash::operator()(const shape_key & s) const {
    size_t h = 1469598103934665603ull;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix(s.op); mix(s.type); mix(s.k); mix(s.rows); mix(s.tokens); mix(s.experts); mix(s.repacked);
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

split_planner::split_planner(planner_options o) : opts(o) {}

namespace {

int64_t round_down(int64_t v, int64_t a) { return a > 1 ? v / a * a : v; }

}  // namespace

std::vector<row_range> split_planner::plan(const shape_key & key, int64_t n_rows, const std::vector<plan_worker> & workers) {
    std::lock_guard<std::mutex> lock(mtx);
    shape_state & st = shapes[key];
    st.calls++;

    // how many rows each worker gets, in worker order
    std::vector<int64_t> want(workers.size(), 0);
    int cpu_i = -1, npu_i = -1, gpu_i = -1;
    for (size_t i = 0; i < workers.size(); ++i) {
        if (workers[i].kind == worker_kind::cpu) cpu_i = (int) i;
        if (workers[i].kind == worker_kind::npu) npu_i = (int) i;
        if (workers[i].kind == worker_kind::gpu) gpu_i = (int) i;
    }
    const int64_t step = npu_i >= 0 ? std::max<int64_t>(opts.npu_step, workers[npu_i].align) : 1;

    if (npu_i >= 0) {
        int64_t npu_rows = 0;
        if (opts.npu_share >= 0.0) {
            npu_rows = round_down((int64_t) std::llround(opts.npu_share * n_rows), step);
            if (opts.npu_share >= 1.0) npu_rows = n_rows;   // every row, the tail block included
        } else {
            // auto: give the NPU the share that makes it finish with the others, from the learned speeds
            const speed & npu = st.w[(int) worker_kind::npu];
            double others = 0.0;   // rows per second of the other workers together
            for (size_t i = 0; i < workers.size(); ++i) {
                if ((int) i == npu_i) continue;
                const speed & s = st.w[(int) workers[i].kind];
                if (s.samples > 0 && s.sec_per_row > 0) others += 1.0 / s.sec_per_row;
            }
            if (npu.samples == 0 || others == 0.0) {
                npu_rows = std::min<int64_t>(step, n_rows);    // first calls: one step to measure with
            } else {
                const double npu_rate = 1.0 / npu.sec_per_row;
                const double ideal = n_rows * npu_rate / (npu_rate + others);
                // the NPU's rows come in whole steps: pick the neighbour that finishes earliest
                int64_t lo = round_down((int64_t) ideal, step), hi = std::min(n_rows, lo + step);
                auto makespan = [&](int64_t r) {
                    return std::max(r * npu.sec_per_row, (n_rows - r) / others);
                };
                npu_rows = makespan(hi) < makespan(lo) ? hi : lo;
            }
            if (npu_rows == 0) {
                // dropped out: one step again now and then, so one bad measurement cannot keep it off for good
                if (++st.npu_skipped >= opts.reprobe_every) npu_rows = std::min<int64_t>(step, n_rows);
            }
        }
        if (npu_rows > 0) st.npu_skipped = 0;
        want[npu_i] = npu_rows;
    }
    if (gpu_i >= 0) {
        // the GPU and the CPU share what the NPU leaves, in proportion to their learned speeds (evenly at first)
        const int64_t left = n_rows - (npu_i >= 0 ? want[npu_i] : 0);
        const speed & g = st.w[(int) worker_kind::gpu];
        const speed & c = st.w[(int) worker_kind::cpu];
        double frac = 0.5;
        if (g.samples > 0 && c.samples > 0 && g.sec_per_row > 0 && c.sec_per_row > 0) {
            frac = (1.0 / g.sec_per_row) / (1.0 / g.sec_per_row + 1.0 / c.sec_per_row);
        }
        int64_t a = std::max(workers[gpu_i].align, cpu_i >= 0 ? workers[cpu_i].align : 1);
        want[gpu_i] = cpu_i >= 0 ? round_down((int64_t) std::llround(frac * left), a) : left;
    }
    // the CPU takes the rest
    int64_t given = 0;
    for (size_t i = 0; i < workers.size(); ++i) if ((int) i != cpu_i) given += want[i];
    if (cpu_i >= 0) want[cpu_i] = n_rows - given;

    // lay the ranges out: NPU, GPU, CPU
    std::vector<row_range> out(workers.size());
    int64_t at = 0;
    for (int idx : { npu_i, gpu_i, cpu_i }) {
        if (idx < 0) continue;
        out[idx] = { at, at + want[idx] };
        at += want[idx];
    }
    GGML_ASSERT(at == n_rows);

    if (get_config().debug) {
        std::string d;
        for (size_t i = 0; i < workers.size(); ++i) {
            d += std::string(d.empty() ? "" : ", ") + worker_kind_name(workers[i].kind) + " " +
                 std::to_string(out[i].size());
        }
        if (d != st.last_plan) {
            XDNA_LOG_DEBUG("split %s: %s rows", key.str().c_str(), d.c_str());
            st.last_plan = d;
        }
    }
    return out;
}

void split_planner::report(const shape_key & key, worker_kind kind, int64_t rows, double seconds, bool ok) {
    if (rows <= 0) return;
    std::lock_guard<std::mutex> lock(mtx);
    if (!ok) return;   // a failed run says nothing about speed; the workers' owner decides about failures

    speed & s = shapes[key].w[(int) kind];
    const double per_row = seconds / (double) rows;
    // an exponential average damps noise; the first sample is taken as it is
    s.sec_per_row = s.samples == 0 ? per_row : 0.7 * s.sec_per_row + 0.3 * per_row;
    s.samples++;
}

}  // namespace xdna
