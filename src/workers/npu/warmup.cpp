#include "workers/npu/warmup.h"

#include "util/clock.h"
#include "util/log.h"
#include "workers/npu/npu_worker.h"

namespace xdna::npu {

npu_warmup::npu_warmup(npu_worker & npu) : npu(npu) {}

npu_warmup::~npu_warmup() {
    stop();
}

void npu_warmup::offer(const ggml_tensor * weight) {
    if (!weight_cache::cacheable(weight)) return;
    std::lock_guard<std::mutex> lock(mtx);
    if (stopping || !seen.insert(weight->data).second) return;
    queue.push_back(*weight);
    if (!started) {
        started = true;
        t_start = now_seconds();
        thread = std::thread([this] { loop(); });
    }
    cv.notify_all();
}

void npu_warmup::stop() {
    {
        std::lock_guard<std::mutex> lock(mtx);
        if (stopping) return;
        stopping = true;
        closed.store(true, std::memory_order_release);
    }
    cv.notify_all();
    if (thread.joinable()) thread.join();
}

void npu_warmup::loop() {
    try {
        npu.load_designs();
    } catch (const std::exception & e) {
        XDNA_LOG_WARN("NPU warm-up could not load the kernels: %s", e.what());
    }
    std::unique_lock<std::mutex> lock(mtx);
    size_t pending_at_stop = 0;
    for (;;) {
        // wait a little for more weights: they are offered one multiply at a time
        cv.wait_for(lock, std::chrono::milliseconds(200), [this] { return stopping || !queue.empty(); });
        if (stopping) { pending_at_stop = queue.size(); break; }
        if (queue.empty()) break;
        ggml_tensor w = queue.front();
        queue.pop_front();
        lock.unlock();
        const size_t before = npu.cache().bytes();
        const bool ok = npu.prepare_weight(&w);
        const size_t after = npu.cache().bytes();
        lock.lock();
        if (ok) { n_done++; bytes_done += after > before ? after - before : 0; }
    }
    XDNA_LOG_INFO("NPU warm-up: %zu weights converted (%.1f MiB) in %.2f s%s", n_done, bytes_done / 1048576.0,
                  now_seconds() - t_start,
                  pending_at_stop ? (", stopped by the first prompt; " + std::to_string(pending_at_stop) +
                                     " weights left to convert on first use").c_str() : "");
}

}  // namespace xdna::npu
