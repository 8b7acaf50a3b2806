// The plugin's configuration: every GGML_XDNA_* variable and the tests' XDNA_TEST_* knobs, read in one place
// (config.cpp), with their defaults. docs/configuration.md is checked against config_vars and test_vars by a test.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace xdna {

// GGML_XDNA_NPU: which NPU the plugin drives.
enum class npu_mode {
    automatic,   // an XDNA1 NPU through XRT, if the plugin was built against XRT and the device opens; else none
    off,         // no NPU worker (the device still takes multiplies for its CPU and GPU workers: for measuring them)
    emulator,    // the software XDNA1 (emulator builds only): for tests, benchmarks and demonstrations
};
const char * npu_mode_name(npu_mode m);

// One row of the configuration table.
struct config_var {
    const char * name;
    const char * default_value;
    const char * description;
};

// The table, in documentation order; terminated by { nullptr, ... }.
extern const config_var config_vars[];
// The tests' knobs (XDNA_TEST_*, outside the users' GGML_XDNA_* names): what the defaults decide for themselves,
// forced where a test needs a condition this machine would not give it. Read by the same parser; documented apart.
extern const config_var test_vars[];

struct config {
    bool   disable        = false;   // GGML_XDNA_DISABLE: no device at all
    int    min_batch      = 32;      // GGML_XDNA_MIN_BATCH: smallest token count claimed
    bool   debug          = false;   // GGML_XDNA_DEBUG: log routing decisions
    std::string report;              // GGML_XDNA_REPORT: file the end-of-run summary is appended to
    std::string trace;               // GGML_XDNA_TRACE: file the timeline is written to (Chrome trace events)
    std::string planner_state;       // GGML_XDNA_PLANNER_STATE: file the auto split keeps what it learned in

    // NPU worker
    npu_mode npu          = npu_mode::automatic;  // GGML_XDNA_NPU: auto, off or emulator
    double npu_share      = -1.0;    // GGML_XDNA_NPU_SHARE: 0..1 fixed share, < 0 = auto
    bool   npu_w8         = false;   // GGML_XDNA_NPU_W8: int8 NPU weights
    size_t npu_cache_mb   = 4096;    // GGML_XDNA_NPU_CACHE_MB: converted-weight cache budget
    bool   npu_warm       = true;    // GGML_XDNA_NPU_WARM: convert weights in the background at load
    double npu_decode     = 0.0;     // GGML_XDNA_NPU_DECODE: experimental NPU token generation share (0 = off)
    std::string npu_kernels;         // GGML_XDNA_NPU_KERNELS: kernel manifest (empty: the built-in set)

    // GPU worker
    std::string gpu;                 // GGML_XDNA_GPU: device name, "none", or empty for automatic choice
    size_t gpu_cache_mb   = 2048;    // GGML_XDNA_GPU_CACHE_MB: resident weight budget on the GPU
    double gpu_share      = -1.0;    // GGML_XDNA_GPU_SHARE: 0..1 fixed share of the rows the NPU leaves, < 0 = auto

    // Tests only (test_vars)
    int    npu_timeout_ms = 5000;    // XDNA_TEST_NPU_TIMEOUT_MS: wait limit for one NPU run
    int    npu_moe_min_tokens = 16;  // XDNA_TEST_MOE_MIN_TOKENS: experts with fewer routed tokens stay on the CPU
    int    npu_team_drives = -1;     // XDNA_TEST_TEAM_DRIVES: the CPU worker's team drives the NPU (-1 auto, 0, 1)
    double gpu_npu_min_gflop = 4.0;  // XDNA_TEST_GPU_NPU_MIN_GFLOP: the NPU joins a GPU split only above this
};

// Reads the configuration from `get` (the environment by default). Each malformed or unknown value adds one line to
// `warnings` and keeps the default.
config parse_config(const std::function<const char *(const char *)> & get, std::vector<std::string> * warnings);

// One warning per GGML_XDNA_* name in `env_names` that is not in the table (a typo would otherwise go unnoticed).
std::vector<std::string> unknown_vars(const std::vector<std::string> & env_names);

// The process's configuration, parsed from the environment once; warnings are logged once.
const config & get_config();

}  // namespace xdna
