#include "workers/lent_thread.h"

#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define XDNA_SPIN_PAUSE() _mm_pause()
#else
#define XDNA_SPIN_PAUSE() ((void) 0)
#endif

namespace xdna {

void lent_thread::serve() {
    present.store(true, std::memory_order_seq_cst);
    uint64_t seen = taken.load(std::memory_order_relaxed);
    for (unsigned spins = 0;; ++spins) {
        const uint64_t p = posted.load(std::memory_order_acquire);
        if (p != seen) {
            (*task)(1);
            seen = p;
            taken.store(p, std::memory_order_release);
            spins = 0;
            continue;
        }
        // checked after `posted`: close() comes only once every posted part is taken
        if (over.load(std::memory_order_acquire)) break;
        XDNA_SPIN_PAUSE();
        // now and then the core goes to whoever else wants it (where threads outnumber cores)
        if ((spins & 255) == 255) std::this_thread::yield();
    }
    present.store(false, std::memory_order_release);
}

bool lent_thread::split(const std::function<void(int)> & part) {
    if (!present.load(std::memory_order_seq_cst)) return false;
    task = &part;
    const uint64_t seq = posted.load(std::memory_order_relaxed) + 1;
    posted.store(seq, std::memory_order_release);
    part(0);
    while (taken.load(std::memory_order_acquire) != seq) XDNA_SPIN_PAUSE();
    return true;
}

}  // namespace xdna
