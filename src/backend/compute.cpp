#include "backend/compute.h"

#include "backend/claim.h"

#include "util/clock.h"
#include "util/log.h"
#include "util/trace.h"

#include <algorithm>
#include <cstdio>

namespace xdna {

compute_engine::compute_engine(split_planner & planner, split_planner & decode_planner, int min_batch, cpu_worker & cpu,
                               std::vector<worker *> others)
    : prompt_planner(planner), decode_planner(decode_planner), min_batch(min_batch), cpu(cpu), others(std::move(others)) {}

void compute_engine::account(worker_kind kind, int64_t rows, const work_result & r) {
    totals & t = sums[(int) kind];
    t.runs++;
    t.seconds += r.seconds;
    if (r.ok) t.rows += rows; else t.failures++;
}

std::string compute_engine::summary() const {
    std::string out;
    for (worker_kind k : { worker_kind::npu, worker_kind::gpu, worker_kind::cpu }) {
        const totals & t = sums[(int) k];
        if (t.runs == 0) continue;
        char buf[192];
        snprintf(buf, sizeof(buf), "%s%s: %lld rows, %.3f s", out.empty() ? "" : " | ", worker_kind_name(k),
                 (long long) t.rows, t.seconds);
        out += buf;
        if (t.busy > 0.0 && t.seconds > 0.0) {
            snprintf(buf, sizeof(buf), " (device busy %.0f%%)", 100.0 * t.busy / t.seconds);
            out += buf;
        }
        if (t.failures) out += " (" + std::to_string(t.failures) + " runs failed, redone on the CPU)";
    }
    return std::to_string(n_multiplies) + " multiplies; " + (out.empty() ? "no rows" : out);
}

ggml_status compute_engine::compute(const ggml_tensor * node) {
    n_multiplies++;
    trace::name_thread("llama.cpp thread: CPU worker");
    const double t_start = trace::on() ? now_seconds() : 0.0;
    const shape_key key = shape_key_of(node, cpu.is_repacked(node->src[0]));
    split_planner & planner = claim_tokens(node) < min_batch ? decode_planner : prompt_planner;

    // who can take part in this multiply (the planner decides who gets rows: next to the GPU, the NPU only joins
    // large multiplies)
    std::vector<worker *>    ws;
    std::vector<plan_worker> pw;
    for (worker * w : others) {
        if (w->accepts(node)) ws.push_back(w);
    }
    for (worker * w : ws) pw.push_back({ w->kind(), w->row_align(node), w->cost_hint(node) });
    ws.push_back(&cpu);
    pw.push_back({ worker_kind::cpu, cpu.row_align(node) });

    const std::vector<row_range> rows = planner.plan(key, node->src[0]->ne[1], pw);

    // start the device workers, then do the CPU's share here, then collect
    const size_t n_dev = ws.size() - 1;
    std::vector<double> busy0(n_dev, -1.0);
    for (size_t i = 0; i < n_dev; ++i) {
        if (rows[i].empty()) continue;
        busy0[i] = ws[i]->device_busy_seconds();
        ws[i]->begin(node, rows[i]);
    }
    bool npu_along = false;
    for (size_t i = 0; i < n_dev; ++i) npu_along = npu_along || (ws[i]->kind() == worker_kind::npu && !rows[i].empty());
    cpu.leave_a_core(npu_along);
    work_result cpu_res;
    {
        trace::scope ts("cpu rows", rows[n_dev].size());
        cpu_res = cpu.compute(node, rows[n_dev]);
    }
    cpu.leave_a_core(false);
    if (!cpu_res.ok) {
        // still collect the device workers before giving up, so none is left writing into the result
        for (size_t i = 0; i < n_dev; ++i) if (!rows[i].empty()) ws[i]->end();
        XDNA_LOG_ERROR("CPU worker failed on %s: %s", key.str().c_str(), cpu_res.error.c_str());
        return cpu_res.error == "aborted" ? GGML_STATUS_ABORTED : GGML_STATUS_FAILED;
    }
    planner.report(key, worker_kind::cpu, rows[n_dev].size(), cpu_res.seconds);
    if (!rows[n_dev].empty()) account(worker_kind::cpu, rows[n_dev].size(), cpu_res);

    for (size_t i = 0; i < n_dev; ++i) {
        if (rows[i].empty()) continue;
        const work_result r = ws[i]->end();
        if (busy0[i] >= 0.0) sums[(int) ws[i]->kind()].busy += ws[i]->device_busy_seconds() - busy0[i];
        planner.report(key, ws[i]->kind(), rows[i].size(), r.seconds - r.once_seconds, r.ok,
                       r.fixed_seconds >= 0.0 ? std::max(0.0, r.fixed_seconds - r.once_seconds) : -1.0);
        account(ws[i]->kind(), rows[i].size(), r);
        if (r.ok && !r.experts_left.empty()) {
            // experts with too few routed tokens for the device: the CPU does their rows too
            const work_result rest = cpu.compute_experts(node, rows[i], r.experts_left);
            if (!rest.ok) return GGML_STATUS_FAILED;
        }
        if (!r.ok) {
            // the result must still be right: the CPU redoes these rows
            XDNA_LOG_WARN("%s worker failed on %s (%s); its rows are recomputed on the CPU", ws[i]->name(),
                          key.str().c_str(), r.error.c_str());
            const work_result redo = cpu.compute(node, rows[i]);
            if (!redo.ok) return GGML_STATUS_FAILED;
        }
    }
    if (trace::on()) trace::add("multiply", t_start, now_seconds(), key.rows, std::string(node->name) + ": " + key.str());
    return GGML_STATUS_SUCCESS;
}

}  // namespace xdna
