#pragma once

#include <chrono>

namespace xdna {

// Monotonic time in seconds.
inline double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace xdna
