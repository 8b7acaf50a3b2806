// What the split planner says of itself: the decision line of a plan (logged when a share changes), the one-line
// summary for the end of a run, and one line per shape of what it learned (GGML_XDNA_DEBUG=1 at exit).
#include "planner/planner.h"

#include <algorithm>
#include <cstdio>

namespace xdna {

namespace {

std::string fmt_seconds(double s) {
    char buf[32];
    if (s < 1e-6) snprintf(buf, sizeof(buf), "%.1f ns", s * 1e9);
    else if (s < 1e-3) snprintf(buf, sizeof(buf), "%.1f us", s * 1e6);
    else if (s < 1.0) snprintf(buf, sizeof(buf), "%.2f ms", s * 1e3);
    else snprintf(buf, sizeof(buf), "%.3f s", s);
    return buf;
}

}  // namespace

const char * plan_reason_name(plan_reason r) {
    switch (r) {
        case plan_reason::probe:          return "probe";
        case plan_reason::reprobe:        return "re-probe";
        case plan_reason::auto_split:     return "auto";
        case plan_reason::measured_slower: return "auto, kept out: measured slower than without the NPU";
        case plan_reason::whole_measured_faster: return "auto, every row: measured faster than the split";
        case plan_reason::neighbour_measured_faster: return "auto, moved: measured faster than the share beside it";
        case plan_reason::fixed_share:    return "fixed NPU share";
        case plan_reason::only_worker:    return "only worker";
        case plan_reason::below_gpu_size: return "below the size at which the NPU joins a GPU";
        case plan_reason::no_npu:         return "no NPU worker";
    }
    return "?";
}

// The decision line: the rows per worker, why, and each worker's predicted time.
std::string split_planner::plan_line(const shape_key & key, const shape_state & st, const int64_t rows[3],
                                     plan_reason why, const bool has[3]) const {
    std::string line = "split " + key.str() + ":";
    const char * sep = " ";
    for (int k : { NPU, GPU, CPU }) {
        if (!has[k]) continue;
        line += sep + std::string(worker_kind_name((worker_kind) k)) + " " + std::to_string(rows[k]);
        sep = " | ";
    }
    line += std::string(" rows (") + plan_reason_name(why);
    if (why == plan_reason::fixed_share) {
        char share[32];
        snprintf(share, sizeof(share), " %g", opts.npu_share);
        line += share;
    }
    for (int k : { NPU, GPU, CPU }) {
        const cost_model & m = k == CPU ? cpu_model(st, has[GPU], rows[NPU] > 0) : st.model[k];
        if (!has[k] || rows[k] == 0 || !m.known()) continue;
        const double t = k == NPU ? npu_wait(st, rows[k]) : k == GPU ? gpu_time(st, rows[k]) : m.predict((double) rows[k]);
        line += std::string("; ") + worker_kind_name((worker_kind) k) + " ~" + fmt_seconds(t);
    }
    return line + ")";
}

std::string split_planner::summary() const {
    std::lock_guard<std::mutex> lock(mtx);
    char buf[512];
    int64_t changes = 0;
    for (const auto & s : shapes) changes += s.second.changes;
    if (opts.npu_share >= 0.0) snprintf(buf, sizeof(buf), "planner (fixed NPU share %g): ", opts.npu_share);
    else snprintf(buf, sizeof(buf), "planner (auto split): ");
    std::string out = buf;
    snprintf(buf, sizeof(buf),
             "%lld multiplies over %zu shapes, %lld share changes, %lld re-probes, %lld size probes, %lld CPU-alone probes, "
             "%lld shares kept out as measured slower, %lld given every row as measured faster so, "
             "%lld shares beside measured (%lld faster)",
             (long long) n_plans, shapes.size(), (long long) changes, (long long) n_reprobes, (long long) n_explores,
             (long long) n_alone, (long long) n_kept_out, (long long) n_whole_won,
             (long long) n_near, (long long) n_near_won);
    out += buf;
    return out;
}

std::vector<std::string> split_planner::shape_report() const {
    std::lock_guard<std::mutex> lock(mtx);
    std::vector<std::string> lines;
    for (const auto & [key, st] : shapes) {
        std::string l = key.str() + ":";
        const char * sep = " ";
        for (int k : { NPU, GPU, CPU }) {
            if (st.last[k] < 0) continue;
            l += sep + std::string(worker_kind_name((worker_kind) k)) + " " + std::to_string(st.last[k]);
            sep = " | ";
        }
        l += " rows;";
        for (int k : { NPU, GPU, CPU, CPU + 1 }) {
            const cost_model & m = k > CPU ? st.cpu_alone : st.model[k];
            if (m.samples() == 0) continue;
            const bool launches = k == NPU && st.hint.blocks();
            const std::string name = k > CPU ? "cpu alone" : k == CPU ? "cpu next to the npu" : worker_kind_name((worker_kind) k);
            const double icpt = k == NPU && st.npu_split ? st.npu_fixed.slope() : k == GPU ? gpu_fixed_part(st) : m.intercept();
            l += " " + name + " " + fmt_seconds(icpt) + " + " + fmt_seconds(m.slope()) +
                 (launches ? "/launch" : "/row") + ",";
        }
        if (st.npu_head.samples() > 0) l += " begun " + fmt_seconds(st.npu_head.slope()) + " ahead,";
        l += " " + std::to_string(st.calls) + " multiplies, " + std::to_string(st.changes) + " share changes";
        if (st.kept_out.times) l += ", kept out " + std::to_string(st.kept_out.times) + " times as measured slower";
        if (st.whole_won.times) l += ", every row " + std::to_string(st.whole_won.times) + " times as measured faster so";
        if (st.near_won.times) l += ", moved " + std::to_string(st.near_won.times) + " times to a share measured faster";
        lines.push_back(std::move(l));
    }
    std::sort(lines.begin(), lines.end());
    return lines;
}

}  // namespace xdna
