#include "config/config.h"

#include "os/os.h"
#include "util/log.h"
#include "util/trace.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace xdna {

const config_var config_vars[] = {
    { "GGML_XDNA_DISABLE",        "0",     "1 hides the backend entirely: no device, the NPU is not opened" },
    { "GGML_XDNA_MIN_BATCH",      "32",    "smallest token count the backend claims; a huge value (1000000) makes it claim nothing" },
    { "GGML_XDNA_DEBUG",          "0",     "1 logs each routing decision once per matrix shape, and the per-worker summary" },
    { "GGML_XDNA_REPORT",         "",      "file to append the end-of-run summary to (the multiplies' own time, what each worker did, and what the planner learned per shape), for scripts" },
    { "GGML_XDNA_TRACE",          "",      "file to write a timeline of every multiply to (Chrome trace-event JSON: Perfetto, chrome://tracing)" },
    { "GGML_XDNA_PLANNER_STATE",  "",      "file in which the auto split keeps what it learned between runs (read at the first prompt, written at exit), or auto: one per machine under the cache folder; ignored when written on another machine, build, NPU or kernel set; empty: nothing kept" },
    { "GGML_XDNA_NPU",            "auto",  "which NPU: auto (an XDNA1 NPU through XRT, if there is one; else none), off, or emulator (the software XDNA1, only when asked for)" },
    { "GGML_XDNA_NPU_SHARE",      "auto",  "NPU share of each matrix multiply: 0-1 (whole 256-row steps) or auto" },
    { "GGML_XDNA_NPU_W8",         "0",     "1 makes the NPU read weights as int8 (one scale per row and 1,024 weights)" },
    { "GGML_XDNA_NPU_CACHE_MB",   "4096",  "memory for the NPU's converted weights; weights beyond it are converted on every call" },
    { "GGML_XDNA_NPU_WARM",       "1",     "0 turns off the load-time warm-up (kernels loaded, weights converted in the background)" },
    { "GGML_XDNA_NPU_DECODE",     "0",     "experimental token generation on the NPU: 1 for all rows, or a fraction shared with the CPU" },
    { "GGML_XDNA_NPU_KERNELS",    "",      "kernel manifest to load; empty: the kernel set installed next to the plugin" },
    { "GGML_XDNA_GPU",            "",      "GPU worker device: a name, none, or rpc:HOST:PORT; empty: the first integrated GPU unless llama.cpp puts layers on its GPU (-ngl other than 0); a discrete GPU or lavapipe only when named" },
    { "GGML_XDNA_GPU_CACHE_MB",   "2048",  "GPU memory for the GPU worker's resident weights (least recently used out)" },
    { "GGML_XDNA_GPU_SHARE",      "auto",  "GPU worker's share of the rows the NPU leaves (the rest to the CPU): 0-1 or auto" },
    { nullptr, nullptr, nullptr },
};

const config_var test_vars[] = {
    { "XDNA_TEST_TEAM_DRIVES",    "auto",  "1: the CPU worker's team drives the NPU between slices of its rows wherever it has 2 threads or more; 0: never (the NPU worker's own thread drives it); auto: where the CPU worker's threads take every core of 4 or more" },
    { "XDNA_TEST_MOE_MIN_TOKENS", "16",    "mixture of experts: experts with fewer routed tokens than this stay on the CPU (1: every expert on the NPU)" },
    { "XDNA_TEST_NPU_TIMEOUT_MS", "5000",  "longest wait for one NPU run before it counts as failed" },
    { "XDNA_TEST_GPU_NPU_MIN_GFLOP", "4",  "next to a GPU worker, the NPU only joins multiplies of at least this many GFLOP (0: every one, for tiny models)" },
    { nullptr, nullptr, nullptr },
};

namespace {

struct reader {
    const std::function<const char *(const char *)> & get;
    std::vector<std::string> * warnings;

    const char * raw(const char * name) const {
        const char * v = get(name);
        return (v && *v) ? v : nullptr;
    }

    void warn(const char * name, const char * value, const char * expected) const {
        if (warnings) {
            warnings->push_back(std::string(name) + "=\"" + value + "\" is not " + expected + "; using the default");
        }
    }

    void boolean(const char * name, bool & out) const {
        const char * v = raw(name);
        if (!v) return;
        if (!strcmp(v, "1") || !strcasecmp(v, "on") || !strcasecmp(v, "true") || !strcasecmp(v, "yes")) { out = true; return; }
        if (!strcmp(v, "0") || !strcasecmp(v, "off") || !strcasecmp(v, "false") || !strcasecmp(v, "no")) { out = false; return; }
        warn(name, v, "a boolean (0 or 1)");
    }

    template <typename T>
    void integer(const char * name, T & out, long long lo, long long hi) const {
        const char * v = raw(name);
        if (!v) return;
        char * end = nullptr;
        errno = 0;
        long long x = strtoll(v, &end, 10);
        if (errno || end == v || *end != '\0' || x < lo || x > hi) {
            std::string what = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
            warn(name, v, what.c_str());
            return;
        }
        out = (T) x;
    }

    bool parse_real(const char * v, double & out, double lo, double hi) const {
        char * end = nullptr;
        errno = 0;
        double x = strtod(v, &end);
        if (errno || end == v || *end != '\0' || !std::isfinite(x) || x < lo || x > hi) return false;
        out = x;
        return true;
    }

    void real(const char * name, double & out, double lo, double hi) const {
        const char * v = raw(name);
        if (v && !parse_real(v, out, lo, hi)) {
            std::string what = "a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
            warn(name, v, what.c_str());
        }
    }

    // 0..1, or "auto" (stored as -1)
    void share(const char * name, double & out) const {
        const char * v = raw(name);
        if (!v) return;
        if (!strcasecmp(v, "auto")) { out = -1.0; return; }
        if (!parse_real(v, out, 0.0, 1.0)) warn(name, v, "a share in [0, 1] or auto");
    }

    // auto (-1) or a boolean
    void auto_boolean(const char * name, int & out) const {
        const char * v = raw(name);
        if (!v) return;
        if (!strcasecmp(v, "auto")) { out = -1; return; }
        bool b = out > 0;
        const size_t before = warnings ? warnings->size() : 0;
        boolean(name, b);
        if (warnings && warnings->size() > before) {
            warnings->back() = std::string(name) + "=\"" + v + "\" is not auto, 0 or 1; using the default";
            return;
        }
        out = b ? 1 : 0;
    }

    // 0/off, 1 (all rows), or a fraction
    void decode(const char * name, double & out) const {
        const char * v = raw(name);
        if (!v) return;
        if (!strcasecmp(v, "on") || !strcasecmp(v, "true")) { out = 1.0; return; }
        if (!strcasecmp(v, "off") || !strcasecmp(v, "false")) { out = 0.0; return; }
        if (!parse_real(v, out, 0.0, 1.0)) warn(name, v, "0, 1 or a fraction in between");
    }

    void npu(const char * name, npu_mode & out) const {
        const char * v = raw(name);
        if (!v) return;
        if (!strcasecmp(v, "auto")) { out = npu_mode::automatic; return; }
        if (!strcasecmp(v, "emulator")) { out = npu_mode::emulator; return; }
        bool on = true;
        const size_t before = warnings ? warnings->size() : 0;
        boolean(name, on);
        if (warnings && warnings->size() > before) {
            warnings->back() = std::string(name) + "=\"" + v + "\" is not auto, off or emulator; using the default";
            return;
        }
        if (!on) { out = npu_mode::off; return; }
        warn(name, v, "auto, off or emulator");   // "1": which NPU is not said
    }

    void string(const char * name, std::string & out) const {
        const char * v = raw(name);
        if (v) out = v;
    }
};

}  // namespace

config parse_config(const std::function<const char *(const char *)> & get, std::vector<std::string> * warnings) {
    config c;
    reader r{ get, warnings };
    r.boolean("GGML_XDNA_DISABLE", c.disable);
    r.integer("GGML_XDNA_MIN_BATCH", c.min_batch, 1, 1LL << 30);
    r.boolean("GGML_XDNA_DEBUG", c.debug);
    r.string("GGML_XDNA_REPORT", c.report);
    r.string("GGML_XDNA_TRACE", c.trace);
    r.string("GGML_XDNA_PLANNER_STATE", c.planner_state);
    r.npu("GGML_XDNA_NPU", c.npu);
    r.share("GGML_XDNA_NPU_SHARE", c.npu_share);
    r.boolean("GGML_XDNA_NPU_W8", c.npu_w8);
    r.integer("GGML_XDNA_NPU_CACHE_MB", c.npu_cache_mb, 0, 1LL << 24);
    r.boolean("GGML_XDNA_NPU_WARM", c.npu_warm);
    r.decode("GGML_XDNA_NPU_DECODE", c.npu_decode);
    r.string("GGML_XDNA_NPU_KERNELS", c.npu_kernels);
    r.string("GGML_XDNA_GPU", c.gpu);
    r.integer("GGML_XDNA_GPU_CACHE_MB", c.gpu_cache_mb, 0, 1LL << 24);
    r.auto_boolean("XDNA_TEST_TEAM_DRIVES", c.npu_team_drives);
    r.integer("XDNA_TEST_MOE_MIN_TOKENS", c.npu_moe_min_tokens, 1, 1 << 20);
    r.integer("XDNA_TEST_NPU_TIMEOUT_MS", c.npu_timeout_ms, 1, 3600 * 1000);
    r.real("XDNA_TEST_GPU_NPU_MIN_GFLOP", c.gpu_npu_min_gflop, 0.0, 1e9);
    r.share("GGML_XDNA_GPU_SHARE", c.gpu_share);
    return c;
}

const char * npu_mode_name(npu_mode m) {
    switch (m) {
        case npu_mode::automatic: return "auto";
        case npu_mode::off:       return "off";
        case npu_mode::emulator:  return "emulator";
    }
    return "?";
}

std::vector<std::string> unknown_vars(const std::vector<std::string> & env_names) {
    // the set-up scripts' own variables (the cache and build folders, extra CMake arguments): not the plugin's
    static const char * const scripts_vars[] = { "GGML_XDNA_CACHE", "GGML_XDNA_BUILD_DIR", "GGML_XDNA_CMAKE_ARGS" };
    std::vector<std::string> unknown;
    for (const auto & n : env_names) {
        if (n.rfind("GGML_XDNA_", 0) != 0) continue;
        bool known = false;
        for (const char * s : scripts_vars) known = known || n == s;
        for (const config_var * v = config_vars; v->name; ++v) known = known || n == v->name;
        if (!known) unknown.push_back(n + " is not a ggml-xdna variable (see docs/configuration.md); ignored");
    }
    return unknown;
}

const config & get_config() {
    static config cfg;
    static std::once_flag once;
    std::call_once(once, [] {
        std::vector<std::string> warnings;
        cfg = parse_config([](const char * n) { return os::env(n); }, &warnings);
        std::vector<std::string> names;
        for (const std::string & e : os::environment()) names.emplace_back(e.substr(0, e.find('=')));
        for (auto & u : unknown_vars(names)) warnings.push_back(std::move(u));
        for (const auto & w : warnings) {
            XDNA_LOG_WARN("%s", w.c_str());
        }
        log_set_debug(cfg.debug);
        trace::open(cfg.trace);
    });
    return cfg;
}

}  // namespace xdna
