// xrt::hw_context, xrt::kernel and xrt::run of the software XDNA1.
#include "emu_impl.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "os/os.h"

namespace xrt {

// ---- hw_context ----

hw_context_impl::hw_context_impl(std::shared_ptr<device_impl> d, std::shared_ptr<xclbin_impl> x,
                                 hw_context::access_mode m)
    : dev(std::move(d)), xclbin(std::move(x)), mode(m) {
    xdna_emu::npu::get().acquire_context(dev->cfg);
}

hw_context_impl::~hw_context_impl() {
    xdna_emu::npu::get().release_context();
}

static std::shared_ptr<xclbin_impl> registered_xclbin(const xrt::device& device, const xrt::uuid& id) {
    if (!device) throw xrt_error(EINVAL, "hw_context: empty device");
    device_impl& d = *device.get_handle();
    std::lock_guard<std::mutex> lock(d.mu);
    auto it = d.registered.find(id);
    if (it == d.registered.end()) {
        throw xrt_error(EINVAL, "hw_context: xclbin " + id.to_string() + " is not registered with the device");
    }
    return it->second;
}

hw_context::hw_context(const xrt::device& device, const xrt::uuid& xclbin_id, access_mode mode)
    : m_handle(std::make_shared<hw_context_impl>(device.get_handle(), registered_xclbin(device, xclbin_id), mode)) {}

hw_context::hw_context(const xrt::device& device, const xrt::uuid& xclbin_id, const cfg_param_type&)
    : hw_context(device, xclbin_id, access_mode::shared) {}

xrt::device hw_context::get_device() const {
    // The emulator's device is only a handle to the one NPU; a fresh handle on the same state would be wrong,
    // so the context keeps no xrt::device and this is not supported.
    throw xrt_error(ENOTSUP, "hw_context::get_device is not supported by the software XDNA1");
}

xrt::uuid hw_context::get_xclbin_uuid() const {
    return m_handle ? m_handle->xclbin->uuid : xrt::uuid();
}

xrt::xclbin hw_context::get_xclbin() const {
    throw xrt_error(ENOTSUP, "hw_context::get_xclbin is not supported by the software XDNA1");
}

hw_context::access_mode hw_context::get_mode() const {
    return m_handle ? m_handle->mode : access_mode::shared;
}

// ---- kernel ----

kernel::kernel(const xrt::hw_context& ctx, const std::string& name) {
    if (!ctx) throw xrt_error(EINVAL, "kernel: empty hardware context");
    for (const auto& k : ctx.get_handle()->xclbin->kernels) {
        if (k->name == name) {
            auto impl = std::make_shared<kernel_impl>();
            impl->ctx = ctx.get_handle();
            impl->desc = k;
            m_handle = std::move(impl);
            return;
        }
    }
    throw xrt_error(EINVAL, "No such kernel '" + name + "'");
}

int kernel::group_id(int argno) const {
    if (!m_handle) throw xrt_error(EINVAL, "group_id on an empty kernel");
    const auto& args = m_handle->desc->args;
    if (argno < 0 || static_cast<size_t>(argno) >= args.size()) {
        throw xrt_error(EINVAL, "kernel '" + m_handle->desc->name + "' has no argument " + std::to_string(argno));
    }
    if (!args[argno].global) {
        throw xrt_error(EINVAL, "kernel '" + m_handle->desc->name + "' argument " + std::to_string(argno) + " ('" +
                                    args[argno].name + "') is a scalar and has no memory group");
    }
    return args[argno].bank;
}

std::string kernel::get_name() const {
    return m_handle ? m_handle->desc->name : std::string();
}

xrt::xclbin kernel::get_xclbin() const {
    throw xrt_error(ENOTSUP, "kernel::get_xclbin is not supported by the software XDNA1");
}

// ---- run ----

run::command_error::command_error(ert_cmd_state state, const std::string& what) : m_state(state), m_what(what) {}

run_impl::~run_impl() {
    ert_cmd_state s;
    {
        std::lock_guard<std::mutex> lock(status->mu);
        s = status->seen(std::chrono::steady_clock::now());
    }
    // XRT (2.23 and later, run_impl's destructor) treats this as fatal: the command still owns the run's buffers
    // on the device. It aborts unless an exception is propagating.
    if (s == ERT_CMD_STATE_QUEUED || s == ERT_CMD_STATE_RUNNING || s == ERT_CMD_STATE_SUBMITTED) {
        xdna_emu::log(0, 0, "XRT: xrt::run destructed while command is still in progress");
        if (!std::uncaught_exceptions()) std::abort();
    }
}

run::run(const kernel& krnl) {
    if (!krnl) throw xrt_error(EINVAL, "run: empty kernel");
    m_handle = std::make_shared<run_impl>(krnl.get_handle());
}

static const arg_desc& checked_arg(const run_impl& r, int index) {
    const auto& args = r.kernel->desc->args;
    if (index < 0 || static_cast<size_t>(index) >= args.size()) {
        throw xrt_error(EINVAL, "kernel '" + r.kernel->desc->name + "' has " + std::to_string(args.size()) +
                                    " arguments, no argument " + std::to_string(index));
    }
    return args[index];
}

void run::set_arg_at_index(int index, const void* value, size_t bytes) {
    if (!m_handle) throw xrt_error(EINVAL, "set_arg on an empty run");
    const arg_desc& a = checked_arg(*m_handle, index);
    arg_value v;
    v.set = true;
    // XRT copies min(value size, declared size) bytes; the NPU is little-endian, as is every host here.
    std::memcpy(&v.scalar, value, std::min<size_t>({bytes, a.size, sizeof(v.scalar)}));
    m_handle->args[index] = v;
}

void run::set_arg_at_index(int index, const xrt::bo& boh) {
    if (!m_handle) throw xrt_error(EINVAL, "set_arg on an empty run");
    if (!boh) throw xrt_error(EINVAL, "set_arg with an empty buffer");
    const arg_desc& a = checked_arg(*m_handle, index);
    const std::string& kname = m_handle->kernel->desc->name;
    if (!a.global) {
        throw xrt_error(EINVAL, "kernel '" + kname + "' argument " + std::to_string(index) + " ('" + a.name +
                                    "') is a scalar; a buffer cannot be bound to it");
    }
    std::shared_ptr<bo_impl> b = boh.get_handle();
    if (static_cast<int>(b->grp) != a.bank) {
        // XRT warns, then binds a copy of the buffer made in the connected bank: the copy has the source's
        // device contents at this moment and never shares later syncs or results with it.
        const auto& cfg = m_handle->kernel->ctx->dev->cfg;
        xdna_emu::log(1, cfg.log_level,
                      "XRT warning: Kernel %s has no compute units with connectivity required for global argument at "
                      "index %d. The argument is allocated in bank %u, the compute unit is connected to bank %d. "
                      "Allocating local copy of argument buffer in connected bank.",
                      kname.c_str(), index, b->grp, a.bank);
        auto copy = std::make_shared<bo_impl>(b->dev, b->size, b->flags, static_cast<memory_group>(a.bank));
        std::memcpy(copy->device, b->device, b->size);
        b = std::move(copy);
    }
    arg_value v;
    v.set = true;
    v.is_bo = true;
    v.scalar = b->address;
    v.bo = std::move(b);
    m_handle->args[index] = std::move(v);
}

static bool is_final(ert_cmd_state s) {
    return s >= ERT_CMD_STATE_COMPLETED && s != ERT_CMD_STATE_SUBMITTED;
}

// A waiting thread wakes itself at a run's modelled end (run_status): without this its timed wait may end up to the
// default timer slack (50 us) late, and every run would look that much longer to the host than the model says.
static void precise_wakeups() {
    xdna::os::precise_timed_waits();
}

void run::start() {
    if (!m_handle) throw xrt_error(EINVAL, "start on an empty run");
    run_impl& r = *m_handle;
    const auto& cfg = r.kernel->ctx->dev->cfg;
    auto cmd = std::make_shared<xdna_emu::command>();
    {
        const std::shared_ptr<run_status> previous = r.status;
        std::lock_guard<std::mutex> lock(previous->mu);
        const ert_cmd_state s = previous->seen(std::chrono::steady_clock::now());
        if (s == ERT_CMD_STATE_QUEUED || s == ERT_CMD_STATE_RUNNING) {
            throw std::runtime_error("bad command state, can't launch");
        }
    }
    // A fresh status per start, so that a late notification of an earlier start cannot be mistaken for this one.
    // (Like XRT, one run object is not meant to be started and waited for from several threads at once.)
    auto fresh = std::make_shared<run_status>();
    fresh->state = ERT_CMD_STATE_QUEUED;
    r.status = fresh;
    cmd->serial = ++r.kernel->ctx->dev->runs_started;
    if (cfg.fault != xdna_emu::fault::none && cmd->serial > cfg.fault_after &&
        (cfg.fault_count == 0 || cmd->serial <= cfg.fault_after + cfg.fault_count)) {
        cmd->fault = cfg.fault;
    }
    cmd->kernel = r.kernel;
    cmd->status = r.status;
    cmd->args = r.args;
    cmd->submitted = std::chrono::steady_clock::now();
    xdna_emu::npu::get().submit(std::move(cmd));
}

ert_cmd_state run::abort() {
    if (!m_handle) throw xrt_error(EINVAL, "abort on an empty run");
    std::shared_ptr<run_status> st = m_handle->status;
    std::unique_lock<std::mutex> lock(st->mu);
    if (st->state == ERT_CMD_STATE_NEW) {
        throw xrt_error(EINVAL, "Cannot abort command that wasn't started");
    }
    const ert_cmd_state s = st->seen(std::chrono::steady_clock::now());
    if (!is_final(s)) {
        // XRT submits an ERT_ABORT command, and the amdxdna driver refuses that opcode ("Unsupported op"): the
        // run goes on until it ends or the driver's watchdog ends it.
        throw xrt_error(EOPNOTSUPP, "DRM_IOCTL_AMDXDNA_EXEC_CMD IOCTL failed (err=-95): Unsupported op (ERT_ABORT)");
    }
    return s;
}

ert_cmd_state run::wait(const std::chrono::milliseconds& timeout) const {
    if (!m_handle) throw xrt_error(EINVAL, "wait on an empty run");
    std::shared_ptr<run_status> st = m_handle->status;
    std::unique_lock<std::mutex> lock(st->mu);
    if (st->state == ERT_CMD_STATE_NEW) {
        return st->state;
    }
    using clock = std::chrono::steady_clock;
    const auto deadline = timeout.count() <= 0 ? clock::time_point::max() : clock::now() + timeout;
    for (;;) {
        const auto now = clock::now();
        const ert_cmd_state s = st->seen(now);
        if (is_final(s)) {
            return s;
        }
        if (now >= deadline) {
            return ERT_CMD_STATE_TIMEOUT;
        }
        if (is_final(st->state)) {
            // its end is known and still ahead: wake then (or at the deadline), not when the NPU's thread says so
            precise_wakeups();
            st->cv.wait_until(lock, std::min(st->ends, deadline));
        } else if (deadline == clock::time_point::max()) {
            st->cv.wait(lock);
        } else {
            st->cv.wait_until(lock, deadline);
        }
    }
}

std::cv_status run::wait2(const std::chrono::milliseconds& timeout) const {
    const ert_cmd_state s = wait(timeout);
    if (s == ERT_CMD_STATE_TIMEOUT) {
        return std::cv_status::timeout;
    }
    if (s != ERT_CMD_STATE_COMPLETED) {
        throw aie_error(s, "Command failed to complete successfully (" + std::to_string(static_cast<int>(s)) + ")");
    }
    return std::cv_status::no_timeout;
}

ert_cmd_state run::state() const {
    if (!m_handle) throw xrt_error(EINVAL, "state on an empty run");
    std::shared_ptr<run_status> st = m_handle->status;
    std::lock_guard<std::mutex> lock(st->mu);
    return st->seen(std::chrono::steady_clock::now());
}

} // namespace xrt
