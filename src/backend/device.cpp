#include "backend/device.h"

#include "backend/planner_file.h"
#include "convert/xdna_convert.h"
#include "config/config.h"
#include "util/log.h"
#include "workers/gpu/gpu_device.h"
#include "workers/npu/npu_worker.h"
#include "workers/npu/warmup.h"

#include <cstring>

namespace xdna {

namespace {

planner_options planner_options_from(double npu_share, const config & c) {
    planner_options o;
    o.npu_share = npu_share;
    o.gpu_share = c.gpu_share;
    o.moe_min_tokens = c.npu_moe_min_tokens;
    o.gpu_npu_min_gflop = c.gpu_npu_min_gflop;
    return o;
}

}  // namespace

npu_choice choose_npu(const config & c, bool with_xrt) {
    if (c.npu == npu_mode::off) return { false, "off (GGML_XDNA_NPU=off)" };
    if (c.npu == npu_mode::emulator) {
        if (with_xrt) {
            return { false, "GGML_XDNA_NPU=emulator, but this plugin was built against XRT, without the software XDNA1 "
                            "(-DGGML_XDNA_FORCE_EMULATOR=ON builds it)" };
        }
        return { true, "" };
    }
    if (!with_xrt) {
        return { false, "none to drive: this plugin was built without XRT (GGML_XDNA_NPU=emulator runs the software "
                        "XDNA1 instead)" };
    }
    return { true, "" };   // XRT: the device is opened, and a failure said in one line
}

device_state::device_state()
    : cfg(get_config()), planner(planner_options_from(cfg.npu_share, cfg)),
      decode_planner(planner_options_from(cfg.npu_decode, cfg)) {
    // built with XRT on Linux; on Windows, whether the XRT DLL beside the plugin is the real one or the emulator's
    const npu_choice n = choose_npu(cfg, npu_worker::xrt_is_hardware());
    if (n.open) {
        npu = npu_worker::create(cfg);
        if (!npu) npu_absent = "none (it did not start)";
    } else {
        npu_absent = n.why;
    }
    if (npu) {
        device_workers.push_back(npu.get());
        if (cfg.npu_warm) warmup = std::make_unique<npu::npu_warmup>(*npu);
    }
    // the GPU worker (GGML_XDNA_GPU): after the NPU's, as the planner lays rows out NPU, GPU, CPU
    if (worker * gpu = make_gpu_worker(cfg)) device_workers.push_back(gpu);
    // The CPU worker alone runs the CPU backend's own kernels plus the cost of splitting the graph: slower than
    // stock, never faster. So without an NPU or GPU worker there is no device at all and llama.cpp runs exactly as
    // without the plugin, unless the NPU was switched off on purpose (to measure or test the CPU and GPU workers).
    offered = !device_workers.empty() || cfg.npu == npu_mode::off;
}

device_state::~device_state() {
    warmup.reset();   // it uses the NPU worker
}

void device_state::offer_weight(const ggml_tensor * op) {
    // after the first prompt (graph_optimize comes with every graph) there is nothing to work out
    if (!warmup || op->op != GGML_OP_MUL_MAT || warmup->stopped()) return;
    if (npu->accepts(describe_multiply(op))) warmup->offer(op->src[0]);
}

// The planner state file for `threads` CPU worker threads, and its identity line; empty when nothing is kept: none
// asked for, or a fixed share (which overrides whatever auto learned), or no device worker to split with.
std::string device_state::planner_state_file(int threads, std::string * identity) const {
    if (cfg.planner_state.empty() || cfg.npu_share >= 0.0 || device_workers.empty()) return "";
    *identity = planner_file_identity(*this, threads);
    return planner_file_path(cfg.planner_state, *identity);
}

void device_state::prompt_arrived(int threads) {
    if (warmup) warmup->stop();
    if (state_read.exchange(true)) return;   // what an earlier run learned: read once, at the first prompt
    std::string id;
    const std::string path = planner_state_file(threads, &id);
    if (!path.empty()) planner_file_read(planner, path, id);
}

void device_state::keep_planner_state(int threads) {
    std::string id;
    const std::string path = planner_state_file(threads, &id);
    if (!path.empty()) planner_file_write(planner, path, id);
}

ggml_backend_dev_t device_state::cpu_device() {
    std::lock_guard<std::mutex> lock(mtx);
    if (!cpu_dev) cpu_dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    return cpu_dev;
}

ggml_backend_buffer_type_t device_state::repack_buft() {
    ggml_backend_dev_t cpu = cpu_device();
    std::lock_guard<std::mutex> lock(mtx);
    if (repack_looked_up || !cpu) return repack;
    repack_looked_up = true;
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(cpu);
    auto get_extra = (ggml_backend_dev_get_extra_bufts_t) ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts");
    for (ggml_backend_buffer_type_t * b = get_extra ? get_extra(cpu) : nullptr; b && *b; ++b) {
        if (strcmp(ggml_backend_buft_name(*b), "CPU_REPACK") == 0) repack = *b;
    }
    return repack;
}

claim_context device_state::claim_ctx() {
    claim_context c;
    c.min_batch     = cfg.min_batch;
    c.small_batches = cfg.npu_decode > 0.0;
    c.repack_buft   = repack_buft();
    c.cpu_dev       = cpu_device();
    c.npu_src1_prec = npu ? (cfg.npu_w8 ? prec_q8 : prec_bf16) : prec_default;   // the activations it feeds the NPU
    return c;
}

std::string device_state::description() const {
    if (!offered) {
        return "NPU: " + npu_absent + "; no GPU worker (GGML_XDNA_GPU names one): no device, llama.cpp runs as without "
               "the plugin";
    }
    std::string d = "XDNA split:";
    if (npu) d += " NPU (" + npu->description() + ") +";
    for (const worker * w : device_workers) {
        if (w->kind() != worker_kind::npu) d += std::string(" ") + w->name() + " +";
    }
    return d + " CPU";
}

void device_state::log_decision_once(const ggml_tensor * op, bool claimed, const std::string & why) {
    if (!cfg.debug || (op->op != GGML_OP_MUL_MAT && op->op != GGML_OP_MUL_MAT_ID)) return;
    std::string key = shape_key_of(op, xdna_tensor_in_repack_buffer(op->src[0])).str();
    std::string line = key + (claimed ? ": claimed" : std::string(": left to the CPU backend (") + why + ")");
    {
        std::lock_guard<std::mutex> lock(mtx);
        if (!logged.insert(line).second) return;
    }
    XDNA_LOG_DEBUG("route %s", line.c_str());
}

}  // namespace xdna
