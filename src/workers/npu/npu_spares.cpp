// The NPU worker's spare host threads: on cores nobody computes on (worker::idle_cores), they serve the worker's
// host work (lent_threads) from a call's start, beside the threads the CPU worker lends once its rows are done.
#include "workers/npu/npu_worker.h"

#include "util/trace.h"

namespace xdna {

// A spare thread: serves every call it is woken for (its index under the number wanted), until the call is over.
void npu_worker::spare_loop(int index) {
    trace::name_thread("NPU worker (spare host thread)");
    uint64_t seen = 0;
    for (;;) {
        {
            std::unique_lock<std::mutex> lock(spare_mu);
            spare_cv.wait(lock, [&] { return spare_stop || (spare_calls != seen && index < spare_serving); });
            if (spare_stop) return;
            seen = spare_calls;
        }
        helper.serve();   // returns once the call is over (helper.close()), at once if it already is
    }
}

void npu_worker::wake_spares() {
    const int want = spares_wanted.load(std::memory_order_relaxed);
    if (want <= 0 && spares.empty()) return;   // the usual case (no idle core): no lock on every multiply
    std::lock_guard<std::mutex> lock(spare_mu);
    spare_serving = want;
    if (want <= 0) return;
    while ((int) spares.size() < want) spares.emplace_back(&npu_worker::spare_loop, this, (int) spares.size());
    ++spare_calls;
    spare_cv.notify_all();
}

void npu_worker::stop_spares() {
    {
        std::lock_guard<std::mutex> lock(spare_mu);
        spare_stop = true;
    }
    spare_cv.notify_all();
    for (std::thread & t : spares) t.join();
    spares.clear();
}

}  // namespace xdna
