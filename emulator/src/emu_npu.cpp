// The emulated NPU: hardware contexts, the instruction heap, and the in-order command queue that checks each
// run's argument contract and computes its block (see docs/emulator.md for what is checked and modelled).
#include "emu_impl.h"
#include "emu_matmul.h"
#include "os/os.h"
#include "xdna_emu/emu_extension.h"
#include "xdna1_timing.h"

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <limits>

namespace xdna_emu {

namespace {

std::atomic<run_observer> g_observer{nullptr};

double steady_seconds(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// Argument positions of the aiecc NPU kernel: opcode, instructions, instruction count, then bo0..bo4.
constexpr size_t ARG_OPCODE = 0, ARG_INSTR = 1, ARG_NINSTR = 2, ARG_A = 3, ARG_B = 4, ARG_C = 5;

struct checked_run {
    gemm_block block;
    xrt::bo_impl* instr = nullptr;
    xrt::bo_impl* a = nullptr;
    xrt::bo_impl* b = nullptr;
    xrt::bo_impl* c = nullptr;
    size_t instr_bytes = 0, a_bytes = 0, b_bytes = 0, c_bytes = 0;
};

std::string arg_label(const xrt::kernel_impl& k, size_t i) {
    return "argument " + std::to_string(i) + " ('" + k.desc->args[i].name + "')";
}

// The kernel argument contract of an NPU run; "" when the run may go ahead.
std::string check_run(const command& cmd, checked_run* out) {
    const xrt::kernel_impl& k = *cmd.kernel;
    const design& d = k.ctx->xclbin->design;
    const auto& args = cmd.args;
    if (args.size() <= ARG_C) {
        return "kernel '" + k.desc->name + "' has too few arguments for an NPU block multiply";
    }
    for (size_t i = 0; i <= ARG_C; ++i) {
        if (!args[i].set) {
            return arg_label(k, i) + " was never set";
        }
    }
    for (size_t i : {ARG_OPCODE, ARG_NINSTR}) {
        if (args[i].is_bo) {
            return arg_label(k, i) + " is a scalar but holds a buffer";
        }
    }
    for (size_t i : {ARG_INSTR, ARG_A, ARG_B, ARG_C}) {
        if (!args[i].is_bo) {
            char buf[64];
            std::snprintf(buf, sizeof(buf), "0x%" PRIx64, args[i].scalar);
            return arg_label(k, i) + " holds the scalar " + buf +
                   " where a buffer address belongs: the NPU would fault on it (argument order?)";
        }
    }
    if (args[ARG_OPCODE].scalar != 3) {
        return "opcode " + std::to_string(args[ARG_OPCODE].scalar) +
               ": an XDNA1 transaction stream runs with opcode 3 (AIE2_EXEC_BUFFER_KERNEL_OP_TXN)";
    }
    xrt::bo_impl* instr = args[ARG_INSTR].bo.get();
    if (!(instr->flags & XCL_BO_FLAGS_CACHEABLE)) {
        char buf[160];
        std::snprintf(buf, sizeof(buf),
                      "the instruction buffer (bo#%" PRIu64 ", flags 0x%x) is not in the device heap: the firmware "
                      "reads instructions only from XCL_BO_FLAGS_CACHEABLE buffers",
                      instr->id, instr->flags);
        return buf;
    }
    const uint64_t ninstr = args[ARG_NINSTR].scalar;
    if (ninstr * 4 > instr->size) {
        return "instruction count " + std::to_string(ninstr) + " exceeds the instruction buffer (" +
               std::to_string(instr->size / 4) + " words)";
    }
    const std::string bad = instr_decode(d, reinterpret_cast<const uint32_t*>(instr->device), ninstr, &out->block);
    if (!bad.empty()) {
        return bad + (ninstr ? " (was the instruction buffer synced to the device?)" : "");
    }
    if (ninstr != instr_words) {
        return "instruction count " + std::to_string(ninstr) + " differs from the stream's " +
               std::to_string(instr_words) + " words";
    }
    out->instr = instr;
    out->instr_bytes = ninstr * 4;
    out->a = args[ARG_A].bo.get();
    out->b = args[ARG_B].bo.get();
    out->c = args[ARG_C].bo.get();
    out->a_bytes = size_t(out->block.m) * out->block.k * dtype_size(d.a);
    out->b_bytes = size_t(out->block.n) * out->block.k * dtype_size(d.b);
    out->c_bytes = size_t(out->block.m) * out->block.n * dtype_size(d.c);
    const struct { xrt::bo_impl* bo; size_t need; size_t arg; const char* what; } data[] = {
        {out->a, out->a_bytes, ARG_A, "A"}, {out->b, out->b_bytes, ARG_B, "B"}, {out->c, out->c_bytes, ARG_C, "C"}};
    for (const auto& e : data) {
        if (e.bo->size < e.need) {
            return arg_label(k, e.arg) + " (" + e.what + ") holds " + std::to_string(e.bo->size) + " bytes, the " +
                   std::to_string(out->block.m) + "x" + std::to_string(out->block.k) + "x" +
                   std::to_string(out->block.n) + " block needs " + std::to_string(e.need) +
                   ": the NPU would read or write past it (argument order?)";
        }
    }
    // by the bytes the NPU touches, so that sub-buffers of one buffer alias only where they overlap (inputs may
    // share bytes, as two views of one weight; nothing may share the output's)
    auto overlap = [](const xrt::bo_impl* x, size_t nx, const xrt::bo_impl* y, size_t ny) {
        return x->device < y->device + ny && y->device < x->device + nx;
    };
    if (overlap(out->c, out->c_bytes, out->a, out->a_bytes) || overlap(out->c, out->c_bytes, out->b, out->b_bytes) ||
        overlap(instr, out->instr_bytes, out->a, out->a_bytes) || overlap(instr, out->instr_bytes, out->b, out->b_bytes) ||
        overlap(instr, out->instr_bytes, out->c, out->c_bytes) || out->a == out->b) {
        return "two arguments of one run share a buffer; inputs and outputs of a dispatch must not alias";
    }
    return "";
}

void warn_unsynced(const command& cmd, xrt::bo_impl* bo, size_t bytes, size_t arg, int log_level) {
    if (bo->warned_unsynced || !std::memcmp(bo->host, bo->device, bytes)) {
        return;
    }
    bo->warned_unsynced = true;
    log(1, log_level,
        "warning: run #%" PRIu64 " reads bo#%" PRIu64 " (%s) whose host copy differs from its device copy: "
        "sync(XCL_BO_SYNC_BO_TO_DEVICE) missing? The NPU is not cache-coherent and uses the device copy.",
        cmd.serial, bo->id, arg_label(*cmd.kernel, arg).c_str());
}

// The array's time for one block, by the device's timing (xdna1_timing.h)
double block_seconds(const design& d, const gemm_block& b, const config& cfg) {
    xdna::xdna1_tile t;
    t.m = int(d.tile_m);
    t.k = int(d.tile_k);
    t.n = int(d.tile_n);
    t.columns = int(d.columns);
    xdna::xdna1_block blk;
    blk.M = b.m;
    blk.K = b.k;
    blk.N = b.n;
    blk.a_bytes = int(dtype_size(d.a));
    blk.b_bytes = int(dtype_size(d.b));
    blk.c_bytes = int(dtype_size(d.c));
    blk.macs = d.a == dtype::i8 && d.b == dtype::i8 ? xdna::xdna1_macs::i8 : xdna::xdna1_macs::bf16;
    return cfg.timing().run_seconds(t, blk);
}

} // namespace

void set_run_observer(run_observer fn) {
    g_observer.store(fn);
}

npu& npu::get() {
    // Never destroyed, so that buffers and contexts released late in process exit still find it; only the
    // executor thread is stopped (at exit, or when the library holding the emulator is unloaded).
    static npu* instance = new npu();
    static struct stopper {
        // (unless the OS has ended the thread already at exit: Windows, where joining it would wait forever)
        ~stopper() {
            if (!xdna::os::threads_ended_at_exit()) instance->stop();
        }
    } stop_at_exit;
    return *instance;
}

void npu::stop() {
    {
        std::lock_guard<std::mutex> lock(m_mu);
        m_stopping = true;
    }
    m_cv.notify_all();
    if (m_thread.joinable()) {
        m_thread.join();
    }
}

void npu::acquire_context(const config& cfg) {
    std::lock_guard<std::mutex> lock(m_mu);
    if (m_contexts + cfg.other_contexts >= cfg.hwctx_limit) {
        log(1, cfg.log_level, "no free hardware context: %d in this process, %d elsewhere, limit %d", m_contexts,
            cfg.other_contexts, cfg.hwctx_limit);
        // What the out-of-tree amdxdna driver answers when its contexts are gone.
        throw std::system_error(ENOENT, std::generic_category(), "DRM_IOCTL_AMDXDNA_CREATE_HWCTX IOCTL failed (err=-2)");
    }
    ++m_contexts;
}

void npu::release_context() {
    std::lock_guard<std::mutex> lock(m_mu);
    --m_contexts;
}

int npu::contexts_in_use() {
    std::lock_guard<std::mutex> lock(m_mu);
    return m_contexts;
}

void npu::heap_alloc(size_t bytes, const config& cfg) {
    std::lock_guard<std::mutex> lock(m_mu);
    if (m_heap_used + bytes > cfg.heap_bytes) {
        log(1, cfg.log_level, "instruction heap exhausted: %zu KiB used of %zu KiB, %zu KiB more asked",
            m_heap_used >> 10, cfg.heap_bytes >> 10, bytes >> 10);
        throw std::system_error(ENOMEM, std::generic_category(), "DRM_IOCTL_AMDXDNA_CREATE_BO IOCTL failed (err=-12)");
    }
    m_heap_used += bytes;
}

void npu::pin(size_t bytes, const config& cfg) {
    std::lock_guard<std::mutex> lock(m_mu);
    if (cfg.memlock_bytes != SIZE_MAX && m_pinned + bytes > cfg.memlock_bytes) {
        log(1, cfg.log_level, "locked-memory limit reached: %zu KiB pinned of %zu KiB, %zu KiB more asked",
            m_pinned >> 10, cfg.memlock_bytes >> 10, bytes >> 10);
        throw std::system_error(ENOMEM, std::generic_category(), "DRM_IOCTL_AMDXDNA_CREATE_BO IOCTL failed (err=-12)");
    }
    m_pinned += bytes;
}

void npu::unpin(size_t bytes) {
    std::lock_guard<std::mutex> lock(m_mu);
    m_pinned -= bytes;
}

void npu::heap_free(size_t bytes) {
    std::lock_guard<std::mutex> lock(m_mu);
    m_heap_used -= bytes;
}

uint64_t npu::next_buffer(size_t bytes, uint64_t* id) {
    std::lock_guard<std::mutex> lock(m_mu);
    const uint64_t addr = m_next_address;
    m_next_address += (bytes + 4095) / 4096 * 4096;
    *id = m_next_id++;
    return addr;
}

uint64_t npu::next_id() {
    std::lock_guard<std::mutex> lock(m_mu);
    return m_next_id++;
}

void npu::submit(std::shared_ptr<command> cmd) {
    std::lock_guard<std::mutex> lock(m_mu);
    if (!m_thread.joinable()) {
        m_tdr_epoch = std::chrono::steady_clock::now();
        m_thread = std::thread(&npu::executor, this);
    }
    m_queue.push_back(std::move(cmd));
    m_cv.notify_all();
}

ert_cmd_state npu::execute(command& cmd, std::chrono::steady_clock::time_point* ends) {
    const xrt::kernel_impl& kernel = *cmd.kernel;
    xrt::run_status& status = *cmd.status;
    const config& cfg = kernel.ctx->dev->cfg;
    const design& d = kernel.ctx->xclbin->design;
    {
        std::lock_guard<std::mutex> lock(status.mu);
        status.state = ERT_CMD_STATE_RUNNING;
    }
    checked_run cr;
    const std::string bad = check_run(cmd, &cr);
    if (!bad.empty()) {
        log(0, cfg.log_level, "run #%" PRIu64 " of '%s' (%s) fails with ERT_CMD_STATE_ERROR: %s", cmd.serial,
            kernel.desc->name.c_str(), d.name.c_str(), bad.c_str());
        return ERT_CMD_STATE_ERROR;
    }
    if (cfg.check_sync && cfg.mode != mode::null) {
        warn_unsynced(cmd, cr.instr, cr.instr_bytes, ARG_INSTR, cfg.log_level);
        warn_unsynced(cmd, cr.a, cr.a_bytes, ARG_A, cfg.log_level);
        warn_unsynced(cmd, cr.b, cr.b_bytes, ARG_B, cfg.log_level);
    }
    if (cmd.fault == fault::error) {
        log(1, cfg.log_level, "injected fault: run #%" PRIu64 " fails with ERT_CMD_STATE_ERROR", cmd.serial);
        return ERT_CMD_STATE_ERROR;
    }
    if (cmd.fault == fault::timeout) {
        // Nothing the host does ends it (amdxdna refuses an abort): the executor keeps it hung until its hang time
        // passes or the driver's watchdog ends it (emu_driver.cpp); the runs behind it on its context wait.
        log(1, cfg.log_level, "injected fault: run #%" PRIu64 " hangs", cmd.serial);
        return ERT_CMD_STATE_RUNNING;
    }

    // The modelled device: a launch starts its dispatch latency after submission on an idle NPU; behind another
    // launch it starts a (shorter) queued gap after that one finishes, the firmware having fetched it meanwhile. A
    // run of another design than the one before it waits for the array to be reconfigured as well.
    const auto dispatch = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double, std::micro>(cfg.dispatch_us));
    const auto gap = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double, std::micro>(cfg.queued_us));
    const auto busy = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(block_seconds(d, cr.block, cfg)));
    std::chrono::steady_clock::time_point done;
    {
        std::lock_guard<std::mutex> lock(m_mu);
        const xrt::uuid& design_id = kernel.ctx->xclbin->uuid;
        auto start = std::max(cmd.submitted + dispatch, m_busy_until + gap);
        if (m_last_design && m_last_design != design_id) {
            start += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                std::chrono::duration<double, std::micro>(cfg.switch_us));
        }
        m_last_design = design_id;
        done = start + busy;
        m_busy_until = done;
        if (run_observer fn = g_observer.load()) {
            fn(steady_seconds(start), steady_seconds(done));
        }
    }

    const auto t0 = std::chrono::steady_clock::now();
    if (cfg.mode != mode::null) {
        gemm_args g{d.a, d.b, d.c, cr.a->device, cr.b->device, cr.c->device, cr.block.m, cr.block.n, cr.block.k,
                    cfg.threads, cfg.accum == accum::aligned};
        gemm_compute(g);
    }
    if (cmd.fault == fault::nan) {
        log(1, cfg.log_level, "injected fault: run #%" PRIu64 " returns NaN", cmd.serial);
        const size_t count = size_t(cr.block.m) * cr.block.n;
        if (d.c == dtype::f32) {
            float* c = reinterpret_cast<float*>(cr.c->device);
            std::fill(c, c + count, std::numeric_limits<float>::quiet_NaN());
        } else {
            int32_t* c = reinterpret_cast<int32_t*>(cr.c->device);
            std::fill(c, c + count, std::numeric_limits<int32_t>::min());
        }
    }
    if (cmd.fault == fault::bf16 && d.c == dtype::f32) {
        // What a kernel built with a bf16 output would return: every result rounded to bf16.
        log(1, cfg.log_level, "injected fault: run #%" PRIu64 " returns results rounded to bf16", cmd.serial);
        float* c = reinterpret_cast<float*>(cr.c->device);
        const size_t count = size_t(cr.block.m) * cr.block.n;
        for (size_t i = 0; i < count; ++i) c[i] = bf16_to_f32(f32_to_bf16(c[i]));
    }
    if (cmd.fault == fault::wrong && d.c == dtype::f32) {
        // finite results a broken kernel could return (each the negated product): wrong, yet no NaN to give it away
        log(1, cfg.log_level, "injected fault: run #%" PRIu64 " returns wrong results", cmd.serial);
        float* c = reinterpret_cast<float*>(cr.c->device);
        const size_t count = size_t(cr.block.m) * cr.block.n;
        for (size_t i = 0; i < count; ++i) c[i] = -c[i];
    }
    if (cfg.mode != mode::exact) {
        *ends = done;   // the host's wait wakes itself then (run_status); the NPU goes on to the next run's model
    }
    log(2, cfg.log_level, "run #%" PRIu64 ": %s %ux%ux%u, modelled %.3f ms, computed in %.3f ms", cmd.serial,
        d.name.c_str(), cr.block.m, cr.block.k, cr.block.n, std::chrono::duration<double, std::milli>(busy).count(),
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    return ERT_CMD_STATE_COMPLETED;
}

} // namespace xdna_emu
