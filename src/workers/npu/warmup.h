// The load-time warm-up (GGML_XDNA_NPU_WARM): while llama.cpp sets the model up, a background thread loads the NPU's
// kernels and converts the weights the backend will be given (offered when ggml hands the backend its split of the
// graph, graph_optimize, first at the context's reserve).
// The first prompt stops it: weights it had not reached are converted on first use. One log line says how many
// weights and bytes it converted, in how long.
#pragma once

#include "ggml.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

namespace xdna {
class npu_worker;
}  // namespace xdna

namespace xdna::npu {

class npu_warmup {
  public:
    explicit npu_warmup(npu_worker & npu);
    ~npu_warmup();

    // A model weight the NPU will need; converted in the background unless the warm-up has stopped.
    void offer(const ggml_tensor * weight);
    // A prompt arrived: stop after the weight in hand.
    void stop();
    // Whether stop() was called: offers are then refused, so a caller can skip working out what to offer.
    bool stopped() const { return closed.load(std::memory_order_acquire); }

  private:
    void loop();

    npu_worker &            npu;
    std::mutex              mtx;
    std::condition_variable cv;
    std::deque<ggml_tensor> queue;     // copies of the tensor headers (the data stays the model's)
    std::set<const void *>  seen;
    std::thread             thread;
    bool                    stopping = false, started = false;
    std::atomic<bool>       closed{ false };   // stopping, readable without the lock
    size_t                  n_done = 0, bytes_done = 0;
    double                  t_start = 0.0;
};

}  // namespace xdna::npu
