#include "workers/work_record.h"

#include <cstdio>
#include <string>

namespace xdna {

const char * worker_kind_name(worker_kind kind) {
    switch (kind) {
        case worker_kind::npu: return "npu";
        case worker_kind::gpu: return "gpu";
        case worker_kind::cpu: return "cpu";
    }
    return "?";
}

const char * work_failure_name(work_failure f) {
    switch (f) {
        case work_failure::none:               return "no failure";
        case work_failure::aborted:            return "aborted";
        case work_failure::cpu_backend:        return "the CPU backend failed";
        case work_failure::misaligned_rows:    return "rows not aligned to the weight's layout";
        case work_failure::no_kernel:          return "no NPU kernel for this weight";
        case work_failure::weight_conversion:  return "weight conversion failed";
        case work_failure::device_memory:      return "no device memory";
        case work_failure::device_run:         return "the device run failed";
        case work_failure::nonfinite_output:   return "NaN, Inf or impossible values in the device's output";
        case work_failure::device_unavailable: return "the device is unavailable";
        case work_failure::bad_routing:        return "expert id out of range";
        case work_failure::unsupported:        return "the device does not support this multiply";
    }
    return "?";
}

std::string work_record::why() const {
    const std::string name = work_failure_name(reason);
    return detail.empty() ? name : name + ": " + detail;
}

void work_totals::add(const work_record & r) {
    sum & t = sums[(int) r.kind];
    t.runs++;
    t.seconds += r.seconds;
    if (r.busy_seconds > 0.0) t.busy += r.busy_seconds;
    if (r.team_results >= 0) {
        t.driven++;
        t.team_results += r.team_results;
        t.team_seconds += r.team_seconds;
    }
    if (!r.ok()) {
        t.failures++;
        return;
    }
    t.rows += r.result_rows();
}

std::string work_totals::line() const {
    std::string out;
    for (worker_kind k : { worker_kind::npu, worker_kind::gpu, worker_kind::cpu }) {
        const sum & t = sums[(int) k];
        if (t.runs == 0) continue;
        char buf[192];
        snprintf(buf, sizeof(buf), "%s%s: %lld rows, %.3f s", out.empty() ? "" : " | ", worker_kind_name(k),
                 (long long) t.rows, t.seconds);
        out += buf;
        if (t.busy > 0.0 && t.seconds > 0.0) {
            snprintf(buf, sizeof(buf), " (device busy %.0f%%)", 100.0 * t.busy / t.seconds);
            out += buf;
        }
        if (t.driven) {
            snprintf(buf, sizeof(buf),
                     " (driven by the CPU's team in %lld runs, %lld results taken between its slices in %.3f s)",
                     (long long) t.driven, (long long) t.team_results, t.team_seconds);
            out += buf;
        }
        if (t.failures) out += " (" + std::to_string(t.failures) + " runs failed, redone on the CPU)";
    }
    return out.empty() ? "no rows" : out;
}

}  // namespace xdna
