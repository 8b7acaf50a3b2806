#include "workers/worker.h"

#include <atomic>
#include <string>

namespace xdna {

static std::atomic<uint64_t> g_graphs{ 0 };

uint64_t graph_epoch() { return g_graphs.load(std::memory_order_acquire); }
void next_graph() { g_graphs.fetch_add(1, std::memory_order_acq_rel); }

}  // namespace xdna
