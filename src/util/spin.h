// Busy-waiting for a hand-off between threads that each have a core of their own. A thread asleep on a condition
// variable wakes 15-65 us after it is signalled on the development VMs (the NPU worker's, 10th to 90th percentile, -t 8
// on 16 vCPUs, GGML_XDNA_TRACE); one that spins sees the signal within a microsecond.
#pragma once

#include "util/clock.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace xdna {

// One step of a spin: tells the core that this thread is waiting (x86 PAUSE), so that its sibling hyperthread runs on.
inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
}

// Spins until ready() holds or max_seconds have passed; whether ready() held.
template <class F> bool spin_until(F && ready, double max_seconds) {
    const double give_up = now_seconds() + max_seconds;
    for (unsigned i = 1;; ++i) {
        if (ready()) return true;
        spin_pause();
        if (i % 64 == 0 && now_seconds() > give_up) return ready();
    }
}

}  // namespace xdna
