#include "util/log_level.h"

#include <atomic>

namespace xdna {

static std::atomic<bool> g_debug{ false };

bool log_debug_on() { return g_debug.load(std::memory_order_relaxed); }
void log_set_debug(bool on) { g_debug.store(on, std::memory_order_relaxed); }

}  // namespace xdna
