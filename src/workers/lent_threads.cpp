#include "workers/lent_threads.h"

#include "util/spin.h"

#include <algorithm>
#include <thread>

namespace xdna {

int lent_threads::claim() {
    uint64_t t = ticket.load(std::memory_order_acquire);
    for (;;) {
        const uint32_t parts = uint32_t(t >> 16) & 0xffff, next = uint32_t(t) & 0xffff;
        if (next >= parts) return -1;
        if (ticket.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel, std::memory_order_acquire)) return int(next);
    }
}

void lent_threads::serve() {
    n_present.fetch_add(1, std::memory_order_seq_cst);
    for (unsigned spins = 0;; ++spins) {
        const int p = claim();
        if (p >= 0) {
            (*task)(p);
            taken.fetch_add(1, std::memory_order_relaxed);
            done.fetch_add(1, std::memory_order_release);
            spins = 0;
            continue;
        }
        // checked after claim(): close() comes only once every posted part is done
        if (over.load(std::memory_order_acquire)) break;
        spin_pause();
        // now and then the core goes to whoever else wants it (where threads outnumber cores)
        if ((spins & 255) == 255) std::this_thread::yield();
    }
    n_present.fetch_sub(1, std::memory_order_release);
}

bool lent_threads::split(int parts, const std::function<void(int)> & part) {
    if (n_present.load(std::memory_order_seq_cst) == 0) return false;
    share(parts, part);
    return true;
}

void lent_threads::share(int parts, const std::function<void(int)> & part) {
    parts = std::clamp(parts, 1, 0xffff);
    task = &part;
    done.store(0, std::memory_order_relaxed);
    ++generation;
    ticket.store((uint64_t(generation) << 32) | (uint64_t(parts) << 16), std::memory_order_release);
    int own = 0;   // parts this thread did
    const bool leave = leave_parts.load(std::memory_order_relaxed) && n_present.load(std::memory_order_seq_cst) > 0;
    for (int p; !leave && (p = claim()) >= 0; ++own) {
        part(p);
        done.fetch_add(1, std::memory_order_release);
    }
    while (done.load(std::memory_order_acquire) != parts) spin_pause();
    if (own < parts) pieces.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace xdna
