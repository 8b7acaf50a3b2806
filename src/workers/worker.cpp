#include "workers/worker.h"

#include <atomic>

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

}  // namespace xdna
