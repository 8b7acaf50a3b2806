// The NPU runtime (see npu_runtime.h): device, hardware contexts with least-recently-used unloading,
// instruction and data buffers, launches and waits, and the translation of every XRT failure into npu_error.
#include "npu_runtime.h"

#include "npu_instr.h"
#include "npu_xrt_api.h"

#include "util/trace.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <system_error>
#include <thread>

namespace xdna {

// One design in a hardware context: the context, its kernel and one instruction buffer per block.
struct npu_loaded_design {
    int design = 0;
    std::shared_ptr<xdna_xrt_context> ctx;
    std::shared_ptr<xdna_xrt_kernel> kernel;
    std::vector<std::shared_ptr<xdna_xrt_bo>> instr;   // by position in npu_design::kernels
    std::vector<uint32_t> instr_words; // word count of each
    uint64_t last_used = 0;
};

namespace {

// The C interface to XRT: set by the first npu_runtime::open() that finds it, and never unset (the handles below
// free themselves through it).
const npu_xrt_api* g_xrt = nullptr;

// A handle of the C interface, freed by its own function when the last owner lets go.
template <typename T> std::shared_ptr<T> own(T* handle, void (*free_fn)(T*)) {
    return std::shared_ptr<T>(handle, [free_fn](T* h) { if (h) free_fn(h); });
}

// The C interface's reason for the failure it just reported on this thread.
std::string xrt_error() {
    const char* e = g_xrt->last_error();
    return e && *e ? e : "XRT failed without saying why";
}

double seconds_of(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// The NPU's busy time, in microseconds: on hardware as the host sees it (launch, or the previous run's end, to the
// completed wait); the emulator tells its modelled runs exactly.
std::atomic<int64_t> g_busy_us{0};

void note_busy(double t0, double t1) {
    g_busy_us.fetch_add(int64_t((t1 - t0) * 1e6), std::memory_order_relaxed);
    trace::add_device("npu run", t0, t1);
}

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string fmt_ms(double ms) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.2f ms", ms);
    return buf;
}

// XRT's names of its run states (ert_cmd_state), as XRT itself prints them
const char* state_name(int s) {
    switch (s) {
        case XDNA_XRT_STATE_NEW:        return "ERT_CMD_STATE_NEW";
        case XDNA_XRT_STATE_QUEUED:     return "ERT_CMD_STATE_QUEUED";
        case XDNA_XRT_STATE_RUNNING:    return "ERT_CMD_STATE_RUNNING";
        case XDNA_XRT_STATE_COMPLETED:  return "ERT_CMD_STATE_COMPLETED";
        case XDNA_XRT_STATE_ERROR:      return "ERT_CMD_STATE_ERROR";
        case XDNA_XRT_STATE_ABORT:      return "ERT_CMD_STATE_ABORT";
        case XDNA_XRT_STATE_SUBMITTED:  return "ERT_CMD_STATE_SUBMITTED";
        case XDNA_XRT_STATE_TIMEOUT:    return "ERT_CMD_STATE_TIMEOUT";
        case XDNA_XRT_STATE_NORESPONSE: return "ERT_CMD_STATE_NORESPONSE";
        default:                        return "an unknown state";
    }
}

bool is_final(int s) {
    return s >= XDNA_XRT_STATE_COMPLETED && s != XDNA_XRT_STATE_SUBMITTED;
}

// The run's state now; "submitted" (in flight) when XRT cannot tell, so that a run is never let go unless it is
// known to have ended.
int state_of(const std::shared_ptr<xdna_xrt_run>& r) {
    int state = XDNA_XRT_STATE_SUBMITTED;
    return r && g_xrt->run_state(r.get(), &state) == XDNA_XRT_OK ? state : XDNA_XRT_STATE_SUBMITTED;
}

// How long a runtime being destroyed waits for the driver to end its parked runs: past it they are left in flight
// to the process's end, so that exit is neither aborted (XRT) nor held up for the in-tree driver's 60 s.
constexpr auto exit_wait = std::chrono::milliseconds(1000);

// Runs still in flight when their runtime went: never destroyed (a static that is never freed), reaped by the next
// runtime opened where they have ended; at process exit the driver ends them as it closes the device.
struct left_runs {
    std::mutex mu;
    std::vector<npu_run> runs;
};
left_runs& left_in_flight() {
    static left_runs* runs = new left_runs();
    return *runs;
}

} // namespace

// ---- buffers ----

npu_buffer npu_buffer::view(size_t offset, size_t bytes) const {
    if (!m_bo) throw npu_error(npu_errc::buffer, "view of an empty NPU buffer");
    if (m_view) {
        throw npu_error(npu_errc::buffer, "view of a view of an NPU buffer: XRT would give the nested sub-buffer a "
                                          "wrong device address (XRT issue 9952); make the view from the whole "
                                          "buffer");
    }
    if (offset > m_size || bytes == 0 || bytes > m_size - offset) {
        throw npu_error(npu_errc::buffer, "view of " + std::to_string(bytes) + " bytes at offset " +
                                              std::to_string(offset) + " of a " + std::to_string(m_size) +
                                              "-byte NPU buffer");
    }
    npu_buffer v;
    xdna_xrt_bo* sub = nullptr;
    if (g_xrt->bo_sub(m_bo.get(), bytes, offset, &sub) != XDNA_XRT_OK) {
        throw npu_error(npu_errc::buffer, "cannot make a view of an NPU buffer: " + xrt_error());
    }
    v.m_bo = own(sub, g_xrt->bo_free);
    v.m_host = static_cast<char*>(m_host) + offset;
    v.m_size = bytes;
    v.m_view = true;
    return v;
}

void npu_buffer::sync_to_device(size_t bytes, size_t offset) {
    if (!m_bo) throw npu_error(npu_errc::buffer, "sync of an empty NPU buffer");
    if (bytes == SIZE_MAX) bytes = offset <= m_size ? m_size - offset : 0;
    if (g_xrt->bo_sync(m_bo.get(), XDNA_XRT_SYNC_TO_DEVICE, bytes, offset) != XDNA_XRT_OK) {
        throw npu_error(npu_errc::buffer, "sync to the NPU failed: " + xrt_error());
    }
}

void npu_buffer::sync_from_device(size_t bytes, size_t offset) {
    if (!m_bo) throw npu_error(npu_errc::buffer, "sync of an empty NPU buffer");
    if (bytes == SIZE_MAX) bytes = offset <= m_size ? m_size - offset : 0;
    if (g_xrt->bo_sync(m_bo.get(), XDNA_XRT_SYNC_FROM_DEVICE, bytes, offset) != XDNA_XRT_OK) {
        throw npu_error(npu_errc::buffer, "sync from the NPU failed: " + xrt_error());
    }
}

// ---- opening ----

npu_runtime::npu_runtime(const npu_options& opts) : m_opts(opts) {}

npu_runtime::~npu_runtime() {
    std::lock_guard<std::mutex> lock(m_mu);
    const auto deadline = std::chrono::steady_clock::now() + exit_wait;
    for (reap(); !m_parked.empty() && std::chrono::steady_clock::now() < deadline; reap()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (m_parked.empty()) return;
    log(npu_log_level::warn, std::to_string(m_parked.size()) + " NPU run(s) that timed out are still in flight; they "
                             "are left to the driver, which ends them when the process closes the device");
    left_runs& left = left_in_flight();
    std::lock_guard<std::mutex> left_lock(left.mu);
    for (npu_run& r : m_parked) left.runs.push_back(std::move(r));
}

std::unique_ptr<npu_runtime> npu_runtime::open(const npu_options& opts) {
    if (opts.context_budget < 1) {
        throw npu_error(npu_errc::config, "NPU context budget must be at least 1, got " +
                                              std::to_string(opts.context_budget));
    }
    if (opts.timeout_ms < 0) {
        throw npu_error(npu_errc::config, "NPU timeout must be >= 0 ms, got " + std::to_string(opts.timeout_ms));
    }
    std::string why;
    const npu_xrt_api* xrt = npu_xrt(&why);
    if (!xrt) throw npu_error(npu_errc::device, "no XRT for the NPU: " + why);
    g_xrt = xrt;
    {
        left_runs& left = left_in_flight();
        std::lock_guard<std::mutex> lock(left.mu);
        left.runs.erase(std::remove_if(left.runs.begin(), left.runs.end(),
                                       [](const npu_run& r) { return is_final(state_of(r.m_run)); }),
                        left.runs.end());
    }
    std::unique_ptr<npu_runtime> rt(new npu_runtime(opts));
    std::string path = opts.manifest_path.empty() ? npu_default_manifest_path() : opts.manifest_path;
    if (path.empty()) {
        throw npu_error(npu_errc::manifest, "no NPU kernel manifest given and none found next to the library "
                                            "(kernels/manifest.json)");
    }
    rt->m_manifest = npu_manifest::load(path);
    const size_t nd = rt->m_manifest.designs().size();
    rt->m_xclbins.resize(nd);
    rt->m_loaded.resize(nd);
    rt->m_instr.resize(rt->m_manifest.kernels().size());
    xdna_xrt_device* dev = nullptr;
    char name[256];
    if (xrt->device_open(0, &dev) != XDNA_XRT_OK || xrt->device_name(dev, name, sizeof(name)) != XDNA_XRT_OK) {
        const std::string e = xrt_error();
        if (dev) xrt->device_close(dev);
        throw npu_error(npu_errc::device, "cannot open NPU device 0: " + e +
                                              " (is the amdxdna driver loaded and XRT installed?)");
    }
    rt->m_device = own(dev, xrt->device_close);
    rt->m_device_name = name;
    rt->m_emulated = rt->m_device_name.find("emulator") != std::string::npos;
    rt->m_results_valid = rt->m_device_name.find("results invalid") == std::string::npos;
    // the emulator tells the modelled span of each run, which the host cannot see, and the timing its runs are
    // charged by (real XRT tells neither: the silicon model at the default power mode is planned with)
    rt->m_emulated_timing = xrt->set_run_observer(note_busy) == XDNA_XRT_OK;
    xdna_xrt_timing timing;
    if (xrt->device_timing(dev, &timing) == XDNA_XRT_OK) {
        rt->m_timing.clock_hz = timing.clock_hz;
        rt->m_timing.dispatch_s = timing.dispatch_s;
        rt->m_timing.queued_s = timing.queued_s;
        rt->m_timing.switch_s = timing.switch_s;
        rt->m_timing.flat_bf16_flops = timing.flat_bf16_flops;
        rt->m_timing.flat_int8_ops = timing.flat_int8_ops;
    }
    if (!rt->m_manifest.emulator_kernels() && rt->m_emulated) {
        throw npu_error(npu_errc::manifest, "kernel manifest '" + path + "' lists hardware kernels, but the device is "
                                            "the software XDNA1 emulator, which runs only its own kernel set (the "
                                            "build's kernels/manifest.json)");
    }
    if (rt->m_manifest.emulator_kernels() && !rt->m_emulated) {
        throw npu_error(npu_errc::manifest, "kernel manifest '" + path + "' lists the software emulator's kernels, "
                                            "but the device is '" + rt->m_device_name + "'; build the real kernels "
                                            "(kernels/README.md)");
    }
    rt->log(npu_log_level::info, "NPU '" + rt->m_device_name + "', kernels from '" + path + "' (" +
                                     std::to_string(nd) + " designs, " +
                                     std::to_string(rt->m_manifest.kernels().size()) + " blocks), context budget " +
                                     std::to_string(opts.context_budget));
    return rt;
}

void npu_runtime::log(npu_log_level level, const std::string& msg) const {
    if (level == npu_log_level::debug && !m_opts.debug) {
        return;
    }
    if (m_opts.log) {
        m_opts.log(level, msg);
        return;
    }
    if (level == npu_log_level::info && !m_opts.debug) {
        return;
    }
    std::fprintf(stderr, "xdna-npu: %s\n", msg.c_str());
}

// ---- hardware contexts ----

const std::vector<uint32_t>& npu_runtime::instr_words(const npu_kernel& k) {
    std::vector<uint32_t>& w = m_instr[k.index];
    if (w.empty()) {
        std::vector<uint32_t> words = npu_load_instr(k.instr_path);
        if (!m_manifest.emulator_kernels()) npu_check_instr_header(words, "instruction file '" + k.instr_path + "'");
        w = std::move(words);
    }
    return w;
}

bool npu_runtime::evict_lru(int keep, const std::string& reason) {
    int victim = -1;
    for (size_t i = 0; i < m_loaded.size(); ++i) {
        if (m_loaded[i] && static_cast<int>(i) != keep &&
            (victim < 0 || m_loaded[i]->last_used < m_loaded[victim]->last_used)) {
            victim = static_cast<int>(i);
        }
    }
    if (victim < 0) {
        return false;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const bool in_use = m_loaded[victim].use_count() > 1;
    m_loaded[victim].reset();
    const double ms = ms_since(t0);
    ++m_stats.unloads;
    m_stats.unload_ms += ms;
    log(npu_log_level::debug, "unloaded design '" + m_manifest.designs()[victim].name + "' (least recently used) in " +
                                  fmt_ms(ms) + " " + reason + (in_use ? "; a run still holds its context" : ""));
    return true;
}

void npu_runtime::drop(const std::shared_ptr<npu_loaded_design>& d) {
    if (d && m_loaded[d->design] == d) {
        const auto t0 = std::chrono::steady_clock::now();
        m_loaded[d->design].reset();
        ++m_stats.unloads;
        m_stats.unload_ms += ms_since(t0);
    }
}

std::shared_ptr<npu_loaded_design> npu_runtime::load(int di) {
    const npu_design& d = m_manifest.designs()[di];
    const auto t0 = std::chrono::steady_clock::now();
    if (!m_xclbins[di]) {
        xdna_xrt_xclbin* x = nullptr;
        if (g_xrt->xclbin_register(m_device.get(), d.xclbin_path.c_str(), &x) != XDNA_XRT_OK) {
            throw npu_error(npu_errc::kernel, "design '" + d.name + "': cannot read and register xclbin '" +
                                                  d.xclbin_path + "': " + xrt_error());
        }
        m_xclbins[di] = own(x, g_xrt->xclbin_free);
    }
    auto ld = std::make_shared<npu_loaded_design>();
    ld->design = di;
    // Only this step can fail for want of a free context; the caller evicts and retries on npu_errc::context.
    xdna_xrt_context* ctx = nullptr;
    if (g_xrt->context_create(m_device.get(), m_xclbins[di].get(), &ctx) != XDNA_XRT_OK) {
        throw npu_error(npu_errc::context, "design '" + d.name + "': cannot create a hardware context: " + xrt_error());
    }
    ld->ctx = own(ctx, g_xrt->context_free);
    xdna_xrt_kernel* kernel = nullptr;
    if (g_xrt->kernel_open(ctx, d.kernel_name.c_str(), &kernel) != XDNA_XRT_OK) {
        throw npu_error(npu_errc::kernel, "design '" + d.name + "': kernel '" + d.kernel_name + "' of xclbin '" +
                                              d.xclbin_path + "': " + xrt_error());
    }
    ld->kernel = own(kernel, g_xrt->kernel_free);
    for (int ki : d.kernels) {
        const npu_kernel& k = m_manifest.kernels()[ki];
        const std::vector<uint32_t>& words = instr_words(k);
        // Instruction buffers live in the device heap: cacheable, in the instruction argument's group.
        const size_t bytes = words.size() * sizeof(uint32_t);
        int group = 0;
        xdna_xrt_bo* bo = nullptr;
        bool ok = g_xrt->kernel_group(kernel, 1, &group) == XDNA_XRT_OK &&
                  g_xrt->bo_alloc(m_device.get(), bytes, XDNA_XRT_BO_CACHEABLE, group, &bo) == XDNA_XRT_OK;
        std::shared_ptr<xdna_xrt_bo> owned = own(bo, g_xrt->bo_free);
        ok = ok && g_xrt->bo_write(bo, words.data(), bytes, 0) == XDNA_XRT_OK &&
             g_xrt->bo_sync(bo, XDNA_XRT_SYNC_TO_DEVICE, bytes, 0) == XDNA_XRT_OK;
        if (!ok) {
            throw npu_error(npu_errc::buffer, "design '" + d.name + "': instruction buffer for '" + k.name + "': " +
                                                  xrt_error());
        }
        ld->instr.push_back(std::move(owned));
        ld->instr_words.push_back(static_cast<uint32_t>(words.size()));
    }
    const double ms = ms_since(t0);
    ++m_stats.loads;
    m_stats.load_ms += ms;
    log(npu_log_level::debug, "loaded design '" + d.name + "' (" + std::to_string(d.kernels.size()) +
                                  " instruction streams) in " + fmt_ms(ms));
    return ld;
}

std::shared_ptr<npu_loaded_design> npu_runtime::ensure_loaded(int di) {
    std::shared_ptr<npu_loaded_design>& slot = m_loaded[di];
    if (!slot) {
        int loaded = 0;
        for (const auto& l : m_loaded) loaded += l != nullptr;
        const std::string why = "to load '" + m_manifest.designs()[di].name + "'";
        while (loaded >= m_opts.context_budget && evict_lru(di, why + " (budget " +
                                                                std::to_string(m_opts.context_budget) + ")")) {
            --loaded;
        }
        for (;;) {
            try {
                slot = load(di);
                break;
            } catch (const npu_error& e) {
                // Other processes may hold contexts: free one of ours and try again while we have any.
                if (e.code() != npu_errc::context || !evict_lru(di, why + " (the device refused a new context)")) {
                    if (e.code() == npu_errc::context) {
                        log(npu_log_level::error, e.what());
                        throw npu_error(npu_errc::context, std::string(e.what()) +
                                                               "; no context of this process left to free (the NPU "
                                                               "has 6 for all processes: is another one using it?)");
                    }
                    throw;
                }
            }
        }
    }
    slot->last_used = ++m_clock;
    return slot;
}

void npu_runtime::acquire(const npu_kernel& k) {
    std::lock_guard<std::mutex> lock(m_mu);
    ensure_loaded(k.design);
}

int npu_runtime::designs_loaded() const {
    std::lock_guard<std::mutex> lock(m_mu);
    int n = 0;
    for (const auto& l : m_loaded) n += l != nullptr;
    return n;
}

npu_stats npu_runtime::stats() const {
    std::lock_guard<std::mutex> lock(m_mu);
    npu_stats s = m_stats;
    s.busy_ms = 1e-3 * (double) g_busy_us.load(std::memory_order_relaxed);
    return s;
}

// ---- buffers and runs ----

npu_buffer npu_runtime::alloc(const npu_kernel& k, npu_arg which, size_t bytes) {
    const size_t need = which == npu_arg::a ? k.a_bytes() : which == npu_arg::b ? k.b_bytes() : k.c_bytes();
    if (bytes == 0) bytes = need;
    std::lock_guard<std::mutex> lock(m_mu);
    auto d = ensure_loaded(k.design);
    npu_buffer buf;
    // Data buffers are host memory the NPU reads through its own copy (XRT_BO_FLAGS_HOST_ONLY).
    int group = 0;
    xdna_xrt_bo* bo = nullptr;
    bool ok = g_xrt->kernel_group(d->kernel.get(), 3 + static_cast<int>(which), &group) == XDNA_XRT_OK &&
              g_xrt->bo_alloc(m_device.get(), bytes, XDNA_XRT_BO_HOST_ONLY, group, &bo) == XDNA_XRT_OK;
    buf.m_bo = own(bo, g_xrt->bo_free);
    buf.m_host = ok ? g_xrt->bo_map(bo) : nullptr;
    if (!buf.m_host) {
        throw npu_error(npu_errc::buffer, "cannot allocate a " + std::to_string(bytes) + "-byte NPU buffer for '" +
                                              k.name + "': " + xrt_error());
    }
    buf.m_size = bytes;
    return buf;
}

npu_run npu_runtime::launch(const npu_kernel& k, npu_buffer& a, npu_buffer& b, npu_buffer& c) {
    const struct { npu_buffer* buf; size_t need; const char* what; } args[] = {
        {&a, k.a_bytes(), "A"}, {&b, k.b_bytes(), "B"}, {&c, k.c_bytes(), "C"}};
    for (const auto& x : args) {
        if (!*x.buf) {
            throw npu_error(npu_errc::buffer, "launch of '" + k.name + "': buffer " + x.what + " is empty");
        }
        if (x.buf->size() < x.need) {
            throw npu_error(npu_errc::buffer, "launch of '" + k.name + "': buffer " + x.what + " holds " +
                                                  std::to_string(x.buf->size()) + " bytes, the " +
                                                  std::to_string(k.tokens) + "x" + std::to_string(k.k) + "x" +
                                                  std::to_string(k.rows) + " block needs " + std::to_string(x.need));
        }
    }
    if (&a == &b || &a == &c || &b == &c || a.m_bo == b.m_bo || a.m_bo == c.m_bo || b.m_bo == c.m_bo) {
        throw npu_error(npu_errc::buffer, "launch of '" + k.name + "': A, B and C must be three different buffers");
    }
    std::lock_guard<std::mutex> lock(m_mu);
    reap();
    npu_run run;
    run.m_design = ensure_loaded(k.design);
    const npu_design& d = m_manifest.design_of(k);
    size_t pos = 0;
    while (d.kernels[pos] != k.index) ++pos;
    // The NPU kernel's argument order: opcode 3 (the instruction sequence opcode mlir-aie's host code uses; 2 is
    // the deprecated transaction one), instruction buffer, its word count, then the data buffers as the
    // design's runtime sequence takes them: A, B, C.
    const unsigned int opcode = 3;
    run.m_start = std::chrono::steady_clock::now();
    xdna_xrt_run* r = nullptr;
    if (g_xrt->run_start(run.m_design->kernel.get(), opcode, run.m_design->instr[pos].get(),
                         run.m_design->instr_words[pos], a.m_bo.get(), b.m_bo.get(), c.m_bo.get(),
                         &r) != XDNA_XRT_OK) {
        ++m_stats.failed;
        throw npu_error(npu_errc::launch, "launch of '" + k.name + "' failed: " + xrt_error());
    }
    run.m_run = own(r, g_xrt->run_free);
    run.m_kernel = &k;
    run.m_args[0] = a.m_bo;
    run.m_args[1] = b.m_bo;
    run.m_args[2] = c.m_bo;
    ++m_stats.launches;
    return run;
}

bool npu_runtime::finished(const npu_run& run) const {
    if (!run.active()) return true;
    int state = 0;
    if (g_xrt->run_state(run.m_run.get(), &state) != XDNA_XRT_OK) return true;   // wait() then says what went wrong
    return is_final(state);
}

void npu_runtime::wait(npu_run& run, int timeout_ms) {
    if (!run.active()) {
        throw npu_error(npu_errc::launch, "wait on an NPU run that was never launched (or already waited for)");
    }
    const int ms = timeout_ms < 0 ? m_opts.timeout_ms : timeout_ms;
    const npu_kernel& k = *run.m_kernel;
    int state = XDNA_XRT_STATE_SUBMITTED;
    if (g_xrt->run_wait(run.m_run.get(), static_cast<unsigned int>(ms), &state) != XDNA_XRT_OK) {
        state = XDNA_XRT_STATE_SUBMITTED;
        log(npu_log_level::error, "waiting for '" + k.name + "': " + xrt_error());
    }
    // XRT's wait answers ERT_CMD_STATE_TIMEOUT both when its own timeout passes and for a run the driver ended in
    // that state: the run's state tells the two apart.
    if (state == XDNA_XRT_STATE_TIMEOUT || !is_final(state)) state = state_of(run.m_run);
    if (state == XDNA_XRT_STATE_COMPLETED) {
        std::lock_guard<std::mutex> lock(m_mu);
        ++m_stats.completed;
        m_stats.run_ms += ms_since(run.m_start);
        if (!m_emulated_timing) {
            const auto end = std::chrono::steady_clock::now();
            note_busy(seconds_of(std::max(run.m_start, m_last_done)), seconds_of(end));
            m_last_done = end;
        }
        run = npu_run();
        return;
    }
    std::string msg;
    npu_errc code;
    if (!is_final(state)) {
        // Still in flight: no xrt::run::abort() (amdxdna answers ERT_ABORT with "Unsupported op") and no letting go
        // (XRT aborts the process when a run in progress is destroyed). It is parked until the driver ends it.
        code = npu_errc::timeout;
        msg = "NPU run of '" + k.name + "' did not finish within " + std::to_string(ms) + " ms; it stays on the NPU, "
              "with its buffers and hardware context, until the driver ends it";
    } else {
        code = npu_errc::run_failed;
        msg = "NPU run of '" + k.name + "' ended in " + std::string(state_name(state)) +
              (state == XDNA_XRT_STATE_TIMEOUT ? " (the driver's watchdog ended it)" : "");
    }
    {
        // The context that failed may be unusable: unload it, so the next launch starts from a fresh one.
        std::lock_guard<std::mutex> lock(m_mu);
        if (code == npu_errc::timeout) {
            ++m_stats.timed_out;
            park_locked(run);
        } else {
            ++m_stats.failed;
            drop(run.m_design);
        }
    }
    log(npu_log_level::error, msg);
    run = npu_run();
    throw npu_error(code, msg);
}

void npu_runtime::park_locked(npu_run& run) {
    ++m_stats.parked;
    drop(run.m_design);
    m_parked.push_back(std::move(run));
    run = npu_run();
}

bool npu_runtime::park(npu_run& run) {
    if (!run.active()) return false;
    if (is_final(state_of(run.m_run))) {
        try {
            wait(run);
        } catch (const npu_error&) {
        }
        return false;
    }
    std::lock_guard<std::mutex> lock(m_mu);
    log(npu_log_level::debug, "NPU run of '" + run.m_kernel->name + "' left in flight to the driver");
    park_locked(run);
    return true;
}

void npu_runtime::reap() {
    for (auto it = m_parked.begin(); it != m_parked.end();) {
        const int s = state_of(it->m_run);
        if (!is_final(s)) {
            ++it;
            continue;
        }
        log(npu_log_level::warn, "NPU run of '" + it->m_kernel->name + "' left to the driver ended in " +
                                     state_name(s) + ", " + fmt_ms(ms_since(it->m_start)) + " after its launch; its "
                                     "buffers and hardware context are released");
        ++m_stats.reaped;
        it = m_parked.erase(it);
    }
}

int npu_runtime::parked() {
    std::lock_guard<std::mutex> lock(m_mu);
    reap();
    return static_cast<int>(m_parked.size());
}

} // namespace xdna
