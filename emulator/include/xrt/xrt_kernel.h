// Software XDNA1: xrt::kernel and xrt::run (the subset of XRT's xrt/xrt_kernel.h the project uses).
// Argument passing follows XRT: a scalar is copied as min(its size, the argument's declared size) bytes, a buffer
// is bound to its index after its memory bank is checked against the kernel's connectivity.
#ifndef XDNA_EMU_XRT_KERNEL_H
#define XDNA_EMU_XRT_KERNEL_H

#include "xrt/deprecated/xrt.h"
#include "xrt/detail/ert.h"
#include "xrt/xrt_bo.h"
#include "xrt/xrt_device.h"
#include "xrt/xrt_hw_context.h"
#include "xrt/xrt_uuid.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <utility>

namespace xrt {

class kernel;
class run_impl;

class run {
public:
    // Thrown by wait2() when a run ends in any state but ERT_CMD_STATE_COMPLETED.
    class command_error : public std::exception {
    public:
        command_error(ert_cmd_state state, const std::string& what);
        ert_cmd_state get_command_state() const { return m_state; }
        const char* what() const noexcept override { return m_what.c_str(); }

    private:
        ert_cmd_state m_state;
        std::string m_what;
    };
    // What XRT throws for NPU (DPU) kernels; the emulator's runs are all NPU runs.
    class aie_error : public command_error {
    public:
        using command_error::command_error;
    };

    run() = default;
    explicit run(const kernel& krnl);

    void start();
    ert_cmd_state abort();

    // Returns the final state, or ERT_CMD_STATE_TIMEOUT when the timeout passes first (0 ms: no timeout).
    ert_cmd_state wait(const std::chrono::milliseconds& timeout = std::chrono::milliseconds{0}) const;
    ert_cmd_state wait(unsigned int timeout_ms) const { return wait(timeout_ms * std::chrono::milliseconds{1}); }
    std::cv_status wait2(const std::chrono::milliseconds& timeout) const;
    void wait2() const { wait2(std::chrono::milliseconds{0}); }

    ert_cmd_state state() const;

    template <typename ArgType> void set_arg(int index, ArgType&& arg) { set_arg_at_index(index, &arg, sizeof(arg)); }
    void set_arg(int index, xrt::bo& boh) { set_arg_at_index(index, boh); }
    void set_arg(int index, const xrt::bo& boh) { set_arg_at_index(index, boh); }
    void set_arg(int index, xrt::bo&& boh) { set_arg_at_index(index, boh); }
    void set_arg(int index, const void* value, size_t bytes) { set_arg_at_index(index, value, bytes); }

    template <typename... Args> void operator()(Args&&... args) {
        set_args_from(0, std::forward<Args>(args)...);
        start();
    }

    explicit operator bool() const { return m_handle != nullptr; }
    bool operator<(const run& rhs) const { return m_handle < rhs.m_handle; }
    const std::shared_ptr<run_impl>& get_handle() const { return m_handle; }

private:
    void set_arg_at_index(int index, const void* value, size_t bytes);
    void set_arg_at_index(int index, const xrt::bo& boh);

    void set_args_from(int) {}
    template <typename ArgType, typename... Args> void set_args_from(int index, ArgType&& arg, Args&&... rest) {
        set_arg(index, std::forward<ArgType>(arg));
        set_args_from(index + 1, std::forward<Args>(rest)...);
    }

    std::shared_ptr<run_impl> m_handle;
};

class kernel_impl;

class kernel {
public:
    enum class cu_access_mode : uint8_t { exclusive = 0, shared = 1, none = 2 };

    kernel() = default;
    // Throws when the context's xclbin has no kernel of that name ("No such kernel '<name>'", as XRT).
    kernel(const xrt::hw_context& ctx, const std::string& name);

    template <typename... Args> run operator()(Args&&... args) {
        run r(*this);
        r(std::forward<Args>(args)...);
        return r;
    }

    // The memory bank a buffer for argument argno must be allocated in; throws for a scalar argument.
    int group_id(int argno) const;
    std::string get_name() const;
    xrt::xclbin get_xclbin() const;

    explicit operator bool() const { return m_handle != nullptr; }
    const std::shared_ptr<kernel_impl>& get_handle() const { return m_handle; }

private:
    std::shared_ptr<kernel_impl> m_handle;
};

} // namespace xrt

#endif
