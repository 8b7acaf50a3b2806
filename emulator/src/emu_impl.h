// The software XDNA1's objects behind the XRT handles, and the one emulated NPU they share.
#pragma once

#include "emu_config.h"
#include "xdna_emu/emu_format.h"
#include "xrt/xrt_bo.h"
#include "xrt/xrt_device.h"
#include "xrt/xrt_hw_context.h"
#include "xrt/xrt_kernel.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace xrt {

// How XRT's own runtime reports errors: a std::system_error with a message (xrt_core::error in XRT).
std::system_error xrt_error(int err, const std::string& what);

struct arg_desc {
    std::string name;
    bool global = false;   // a buffer (bound by address) rather than a scalar
    int bank = -1;         // memory bank (group id) a global argument is connected to
    size_t size = 8;       // declared size in bytes
};

class xclbin_kernel_impl {
public:
    std::string name;
    std::vector<arg_desc> args;
};

class xclbin_impl {
public:
    std::string path;
    xrt::uuid uuid;
    std::string platform;
    std::vector<std::shared_ptr<xclbin_kernel_impl>> kernels;
    xdna_emu::design design;
};

class device_impl : public std::enable_shared_from_this<device_impl> {
public:
    explicit device_impl(xdna_emu::config c) : cfg(std::move(c)) {}

    const xdna_emu::config cfg;
    std::mutex mu;
    std::map<xrt::uuid, std::shared_ptr<xclbin_impl>> registered;
    std::atomic<uint64_t> runs_started{0};   // counts starts, for fault injection
};

class bo_impl {
public:
    bo_impl(std::shared_ptr<device_impl> dev, size_t size, uint32_t flags, memory_group grp);
    // A sub-buffer: `size` bytes at `offset` of `parent`, sharing both of its copies (xrt::bo(parent, size, offset)).
    bo_impl(std::shared_ptr<bo_impl> parent, size_t size, size_t offset);
    ~bo_impl();
    bo_impl(const bo_impl&) = delete;
    bo_impl& operator=(const bo_impl&) = delete;

    std::shared_ptr<device_impl> dev;
    const size_t size;
    const uint32_t flags;
    const memory_group grp;
    uint64_t address = 0;
    uint64_t id = 0;
    size_t heap_bytes = 0;      // taken from the instruction heap (cacheable buffers)
    size_t pinned_bytes = 0;    // counted against the locked-memory limit (host-only data buffers)
    unsigned char* host = nullptr;   // what map() returns, page aligned like XRT's
    unsigned char* device = nullptr; // what the NPU sees
    std::shared_ptr<bo_impl> parent; // a sub-buffer's: it owns the storage
    size_t offset = 0;               // of a sub-buffer in its parent
    bool warned_unsynced = false;    // guarded by the emulated NPU's executor (one warning per buffer)
};

class hw_context_impl {
public:
    hw_context_impl(std::shared_ptr<device_impl> dev, std::shared_ptr<xclbin_impl> xclbin,
                    hw_context::access_mode mode);
    ~hw_context_impl();
    hw_context_impl(const hw_context_impl&) = delete;
    hw_context_impl& operator=(const hw_context_impl&) = delete;

    std::shared_ptr<device_impl> dev;
    std::shared_ptr<xclbin_impl> xclbin;
    hw_context::access_mode mode;
};

class kernel_impl {
public:
    std::shared_ptr<hw_context_impl> ctx;
    std::shared_ptr<xclbin_kernel_impl> desc;
};

struct arg_value {
    bool set = false;
    bool is_bo = false;
    uint64_t scalar = 0;               // the argument's bytes, little-endian, zero-extended
    std::shared_ptr<bo_impl> bo;
};

// The state of a run, shared by the host's handle and the command the NPU executes. Kept apart from the run so
// that the NPU can let go of the run (and with it the kernel and its hardware context) before it reports the
// run done: a host that waited and dropped its handles then finds the context free, as with XRT.
//
// A run's end is published ahead of time: the NPU sets its final state with the modelled time of its end (`ends`),
// and until then the run reads as running. The host's wait wakes itself at that time, so the host sees the end as
// soon as the device's model says it comes, with no hand-off through the NPU's thread (a second wake-up, 35-50 us
// late in the median and up to 0.6-0.8 ms at the 99th percentile on a busy 16-core VM). The modelled dispatch
// latency is a measured round trip (launch to the wait's return, `xrt-smi validate`), so it holds the hardware's
// completion interrupt and the waiter's wake-up already.
struct run_status {
    std::mutex mu;
    std::condition_variable cv;
    ert_cmd_state state = ERT_CMD_STATE_NEW;   // guarded by mu; a final state holds from `ends` on
    std::chrono::steady_clock::time_point ends{};   // guarded by mu

    // The state as the host sees it at `now` (under mu)
    ert_cmd_state seen(std::chrono::steady_clock::time_point now) const {
        return now < ends ? ERT_CMD_STATE_RUNNING : state;
    }
};

class run_impl {
public:
    explicit run_impl(std::shared_ptr<kernel_impl> k)
        : kernel(std::move(k)), args(kernel->desc->args.size()), status(std::make_shared<run_status>()) {}
    // As XRT's (2.23 on): destroyed while its command is queued or running, it aborts the process, unless an
    // exception is propagating. Only the host's handles own a run; the NPU's command does not keep it alive.
    ~run_impl();
    run_impl(const run_impl&) = delete;
    run_impl& operator=(const run_impl&) = delete;

    std::shared_ptr<kernel_impl> kernel;
    std::vector<arg_value> args;       // as set by the host; copied into each started command
    std::shared_ptr<run_status> status;
};

} // namespace xrt

namespace xdna_emu {

// One started run as the NPU's command queue holds it.
struct command {
    std::shared_ptr<xrt::kernel_impl> kernel; // released by the NPU before it publishes the final state
    std::shared_ptr<xrt::run_status> status;
    uint64_t serial = 0;                      // which run of its device this is (1-based), for logs and faults
    std::vector<xrt::arg_value> args;
    enum fault fault = fault::none;
    std::chrono::steady_clock::time_point submitted;
};

// The one emulated NPU of this machine: hardware contexts, the instruction heap, the command queue and the thread
// that executes it in order, and the modelled time at which the device becomes idle.
class npu {
public:
    static npu& get();
    void stop();

    void acquire_context(const config& cfg);
    void release_context();
    int contexts_in_use();

    void heap_alloc(size_t bytes, const config& cfg);
    void heap_free(size_t bytes);
    void pin(size_t bytes, const config& cfg);     // host-only data buffers, against the locked-memory limit
    void unpin(size_t bytes);

    uint64_t next_buffer(size_t bytes, uint64_t* id);
    uint64_t next_id();   // a buffer id without an address range of its own (sub-buffers)
    void submit(std::shared_ptr<command> cmd);

private:
    npu() = default;
    void executor();
    // Runs cmd; `ends`: when a completed run's end comes by the model (left alone: now). ERT_CMD_STATE_RUNNING: it
    // hangs (an injected fault), and stays in m_hung until it resumes or the driver's watchdog ends it.
    ert_cmd_state execute(command& cmd, std::chrono::steady_clock::time_point* ends);

    // A hung job, and the driver's watchdog over it (emu_driver.cpp)
    struct hung_job {
        std::shared_ptr<command> cmd;
        std::chrono::steady_clock::time_point since;
    };
    using ended_list = std::vector<std::pair<std::shared_ptr<command>, ert_cmd_state>>;
    // m_mu held: the next command whose context has no hung job (runs of one context execute in order)
    std::shared_ptr<command> next_runnable();
    // m_mu held: hung jobs that resume (their hang time over: back to the queue's front) and jobs the watchdog ends
    void watchdog(std::chrono::steady_clock::time_point now, ended_list* ended);
    // m_mu held: when watchdog() has something to do next (max: nothing)
    std::chrono::steady_clock::time_point next_watchdog_event(std::chrono::steady_clock::time_point now) const;
    void end_pending(ended_list* ended, const xrt::hw_context_impl* only, ert_cmd_state state);   // m_mu held
    static void publish(command& cmd, ert_cmd_state state, std::chrono::steady_clock::time_point ends);

    std::mutex m_mu;
    std::condition_variable m_cv;
    std::deque<std::shared_ptr<command>> m_queue;
    bool m_stopping = false;
    std::thread m_thread;
    int m_contexts = 0;
    size_t m_heap_used = 0;
    size_t m_pinned = 0;
    uint64_t m_next_address = 0x4000000;
    uint64_t m_next_id = 1;
    std::chrono::steady_clock::time_point m_busy_until{};
    xrt::uuid m_last_design;   // the design the array holds (of the last run timed), for the switching cost
    std::vector<hung_job> m_hung;
    std::chrono::steady_clock::time_point m_progress{};   // the last run that ended by itself (the TDR's progress)
    std::chrono::steady_clock::time_point m_tdr_epoch{};  // the out-of-tree TDR's timer: started at the first run
    std::chrono::steady_clock::time_point m_tdr_checked{};   // its last check
};

} // namespace xdna_emu
