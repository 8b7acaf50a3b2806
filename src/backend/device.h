// Process-wide state of the XDNA device: the configuration, the claim policy's context, the split planner and the
// device workers shared by every backend instance (one NPU per process).
#pragma once

#include "backend/claim.h"
#include "config/config.h"
#include "planner/planner.h"
#include "workers/worker.h"

#include "ggml-backend.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace xdna {

class npu_worker;
namespace npu { class npu_warmup; }

// Whether to open an NPU: GGML_XDNA_NPU against how the plugin was built. The emulator only when asked for: a plugin
// with no NPU to drive runs without an NPU worker.
struct npu_choice {
    bool        open = false;
    std::string why;   // when not: why, for the load line
};
npu_choice choose_npu(const config & c, bool built_with_xrt);

struct device_state {
    device_state();
    ~device_state();

    // the registry's CPU device and its CPU_REPACK buffer type (the CPU backend may register after the plugin,
    // so both are looked up when first needed)
    ggml_backend_dev_t cpu_device();
    ggml_backend_buffer_type_t repack_buft();
    claim_context claim_ctx();

    // The load line: the workers, or why there is no device.
    std::string description() const;

    // logs a routing decision once per shape and verdict (GGML_XDNA_DEBUG=1)
    void log_decision_once(const ggml_tensor * op, bool claimed, const std::string & why);

    // a node of a graph handed to the backend: a multiply's weight the NPU takes is offered to the load-time warm-up
    void offer_weight(const ggml_tensor * op);
    // a graph is about to be computed, with `threads` CPU worker threads: the warm-up stops, and the first time the
    // planner state file (GGML_XDNA_PLANNER_STATE) is read
    void prompt_arrived(int threads);
    // the backend is freed: what the planner learned goes to the planner state file
    void keep_planner_state(int threads);

    const config &        cfg;
    split_planner         planner;          // prompt processing: GGML_XDNA_NPU_SHARE (auto by default)
    split_planner         decode_planner;   // the experimental NPU decode: GGML_XDNA_NPU_DECODE's fixed share
    std::vector<worker *> device_workers;   // NPU and GPU workers of the process, in that order
    std::unique_ptr<npu_worker> npu;
    std::unique_ptr<npu::npu_warmup> warmup;
    // false: no worker would gain anything over stock llama.cpp, so the registry offers no device
    bool                  offered = true;
    std::string           npu_absent;       // why there is no NPU worker

  private:
    std::mutex                 mtx;
    ggml_backend_dev_t         cpu_dev = nullptr;
    ggml_backend_buffer_type_t repack  = nullptr;
    bool                       repack_looked_up = false;
    std::set<std::string>      logged;
    std::atomic<bool>          state_read{ false };

    std::string planner_state_file(int threads, std::string * identity) const;
};

}  // namespace xdna
