// The NPU runtime: the XRT-facing layer of ggml-xdna. It reaches XRT only through the C interface of npu_xrt_c.h
// (linked in on Linux, a DLL on Windows), behind which is the real XRT or the software XDNA1 (emulator/); nothing
// here knows which, except what the device calls itself.
//
// Use (one runtime per process; its methods are thread-safe, buffers and runs belong to their caller):
//   auto rt = xdna::npu_runtime::open(opts);                         // device 0 + the manifest
//   const xdna::npu_kernel* k = rt->manifest().find(npu_dtype::bf16, npu_dtype::bf16, 512, 1024, 512);
//   xdna::npu_buffer a = rt->alloc(*k, npu_arg::a), b = ..., c = ...;   // host-only data buffers, once
//   fill a.data(), b.data(); a.sync_to_device(); b.sync_to_device();
//   xdna::npu_run run = rt->launch(*k, a, b, c);                      // returns at once
//   ... fill the other slot's buffers meanwhile ...
//   rt->wait(run);                                                    // throws npu_error on failure / timeout
//   (after a timeout the run stays with the runtime, "parked", until the driver ends it: its buffers are not reused)
//   c.sync_from_device(); read c.data()                               // tokens x rows, row-major
#pragma once

#include "npu_error.h"
#include "npu_manifest.h"
#include "npu_types.h"
#include "xdna1_timing.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "npu_xrt_c.h"

namespace xdna {

enum class npu_log_level { debug, info, warn, error };

struct npu_options {
    std::string manifest_path;      // empty: npu_default_manifest_path()
    int context_budget = 6;         // hardware contexts this process may hold (out-of-tree amdxdna: 6 system-wide)
    int timeout_ms = 5000;          // per wait(); 0 waits forever
    bool debug = false;             // log loads, unloads (with their cost) and failures at debug level
    // Where log lines go; default: stderr, prefixed "xdna-npu: ", debug lines only when debug is set.
    std::function<void(npu_log_level, const std::string&)> log;
};

// Where the kernel manifest is looked for when none is given: next to the library (or program) that contains the
// runtime, in kernels/manifest.json, ../kernels/manifest.json or ../share/ggml-xdna/kernels/manifest.json.
// Empty when none of them exists.
std::string npu_default_manifest_path();

enum class npu_arg { a = 0, b = 1, c = 2 };

// A host-only data buffer: what data() points at reaches the NPU only through sync_to_device(), and the NPU's
// results reach data() only through sync_from_device().
class npu_buffer {
public:
    npu_buffer() = default;
    void* data() { return m_host; }
    const void* data() const { return m_host; }
    template <typename T> T* as() { return static_cast<T*>(m_host); }
    size_t size() const { return m_size; }
    explicit operator bool() const { return m_host != nullptr; }

    // `bytes` of this buffer from `offset`, as a buffer of its own (an XRT sub-buffer): a kernel argument that reads
    // part of a larger buffer in place. It shares this buffer's memory, and its syncs are syncs of that range.
    // Only a buffer from alloc() can be viewed: a view of a view is refused, because XRT computes a nested
    // sub-buffer's device address from the root's address plus the innermost offset only (XRT issue 9952), so the
    // NPU would read the wrong bytes. Throws npu_error(npu_errc::buffer).
    npu_buffer view(size_t offset, size_t bytes) const;
    bool is_view() const { return m_view; }

    // bytes == SIZE_MAX: from offset to the end. Throws npu_error(npu_errc::buffer).
    void sync_to_device(size_t bytes = SIZE_MAX, size_t offset = 0);
    void sync_from_device(size_t bytes = SIZE_MAX, size_t offset = 0);

private:
    friend class npu_runtime;
    std::shared_ptr<xdna_xrt_bo> m_bo;   // shared like an xrt::bo: views and runs hold it too
    void* m_host = nullptr;
    size_t m_size = 0;
    bool m_view = false;
};

struct npu_loaded_design;

// One launched block; move-only. wait() it before reusing its buffers. A run is never destroyed before its state is
// final: XRT (2.23 on) aborts the process when a run is destroyed while its command is in progress.
class npu_run {
public:
    npu_run() = default;
    npu_run(npu_run&&) = default;
    npu_run& operator=(npu_run&&) = default;
    npu_run(const npu_run&) = delete;
    npu_run& operator=(const npu_run&) = delete;

    bool active() const { return m_kernel != nullptr; }
    const npu_kernel* kernel() const { return m_kernel; }

private:
    friend class npu_runtime;
    std::shared_ptr<xdna_xrt_run> m_run;
    std::shared_ptr<npu_loaded_design> m_design;   // keeps its hardware context alive while it runs
    std::shared_ptr<xdna_xrt_bo> m_args[3];         // A, B, C: kept while it runs, parked or not
    const npu_kernel* m_kernel = nullptr;
    std::chrono::steady_clock::time_point m_start;
};

struct npu_stats {
    uint64_t launches = 0, completed = 0, failed = 0, timed_out = 0;
    uint64_t parked = 0;                 // runs left in flight to the driver (timed out, or queued behind one)
    uint64_t reaped = 0;                 // of those, the ones the driver has ended since
    uint64_t loads = 0, unloads = 0;
    double load_ms = 0, unload_ms = 0;   // time spent creating / destroying hardware contexts
    double run_ms = 0;                   // launch to completed wait, summed over completed runs
    double busy_ms = 0;                  // the NPU busy with runs (the emulator's modelled time), in this process
};

class npu_runtime {
public:
    // Opens device 0 and loads the manifest; loads no design yet. Throws npu_error.
    static std::unique_ptr<npu_runtime> open(const npu_options& opts);
    ~npu_runtime();
    npu_runtime(const npu_runtime&) = delete;
    npu_runtime& operator=(const npu_runtime&) = delete;

    const npu_manifest& manifest() const { return m_manifest; }
    const std::string& device_name() const { return m_device_name; }
    bool emulated() const { return m_emulated; }
    // False when the device computes nothing (the emulator's null mode, for host-side benchmarks).
    bool results_valid() const { return m_results_valid; }
    const npu_options& options() const { return m_opts; }
    // The timing the device's runs take, to plan by: the emulator's own (its power mode, or a flat what-if rate); on
    // hardware the silicon model at the default power mode.
    const xdna1_device_timing& timing() const { return m_timing; }

    // Loads k's design into a hardware context now (unloading the least recently used one if the budget is full).
    void acquire(const npu_kernel& k);
    // A host-only buffer for argument `which` of k (bytes 0: exactly the block's size). Acquires k's design.
    npu_buffer alloc(const npu_kernel& k, npu_arg which, size_t bytes = 0);
    // Starts one block: opcode 3, k's instruction stream and word count, then A, B, C. Returns at once.
    npu_run launch(const npu_kernel& k, npu_buffer& a, npu_buffer& b, npu_buffer& c);
    // Waits for the run (timeout_ms < 0: the options' timeout). On failure or timeout its design is unloaded (the
    // next launch loads it afresh) and npu_error thrown; the runtime stays usable. A run that timed out cannot be
    // ended from the host (amdxdna refuses xrt::run::abort()) nor let go (XRT aborts): the runtime parks it, with its
    // buffers, kernel and hardware context, until the driver's watchdog ends it (in-tree amdxdna: 60 s; out-of-tree:
    // its TDR, 2-4 s once no context makes progress), and reaps it then. The caller must not reuse its buffers.
    void wait(npu_run& run, int timeout_ms = -1);
    // Hands a run to the runtime without waiting: parked as above while in flight (true), waited for if it has ended
    // (false; its failure is not thrown). For the other runs in flight of a call whose run timed out.
    bool park(npu_run& run);
    // Parked runs still in flight; those the driver has ended are reaped first.
    int parked();
    // Whether the run has ended (completed or failed) by now, without waiting (xrt::run::state()); wait() it then
    // to learn how, at no cost. For a thread that has other work to go back to meanwhile.
    bool finished(const npu_run& run) const;

    npu_stats stats() const;
    int designs_loaded() const;

private:
    explicit npu_runtime(const npu_options& opts);
    void log(npu_log_level level, const std::string& msg) const;
    std::shared_ptr<npu_loaded_design> ensure_loaded(int design);   // m_mu held
    std::shared_ptr<npu_loaded_design> load(int design);            // m_mu held
    bool evict_lru(int keep, const std::string& reason);            // m_mu held
    void drop(const std::shared_ptr<npu_loaded_design>& d);         // m_mu held
    const std::vector<uint32_t>& instr_words(const npu_kernel& k);  // m_mu held
    void park_locked(npu_run& run);                                 // m_mu held
    void reap();                                                    // m_mu held

    npu_options m_opts;
    npu_manifest m_manifest;
    std::shared_ptr<xdna_xrt_device> m_device;
    std::string m_device_name;
    bool m_emulated = false;
    bool m_results_valid = true;
    xdna1_device_timing m_timing;
    bool m_emulated_timing = false;                             // busy time from the emulator, not from waits
    std::chrono::steady_clock::time_point m_last_done;          // the last completed run's end (m_mu)

    mutable std::mutex m_mu;
    std::vector<std::shared_ptr<xdna_xrt_xclbin>> m_xclbins;    // per design, read and registered once
    std::vector<std::shared_ptr<npu_loaded_design>> m_loaded;   // per design, null when unloaded
    std::vector<std::vector<uint32_t>> m_instr;                 // per kernel, read once
    uint64_t m_clock = 0;                                       // LRU time
    npu_stats m_stats;
    std::vector<npu_run> m_parked;                              // in flight after a timeout (m_mu)
};

} // namespace xdna
