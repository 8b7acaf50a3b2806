#include "workers/worker.h"

#include <atomic>
#include <string>

namespace xdna {

static std::atomic<uint64_t> g_graphs{ 0 };

uint64_t graph_epoch() { return g_graphs.load(std::memory_order_acquire); }
void next_graph() { g_graphs.fetch_add(1, std::memory_order_acq_rel); }

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

std::string work_result::why() const {
    const std::string name = work_failure_name(reason);
    return detail.empty() ? name : name + ": " + detail;
}

}  // namespace xdna
