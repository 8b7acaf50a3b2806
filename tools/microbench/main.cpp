// xdna-microbench: the plugin's own costs, with Google Benchmark.
//   claim/...    the claim policy's decision per graph node (bench_routing.cpp)
//   mul_mat/...  one small multiply on the CPU backend and through the XDNA backend's compute engine
//   sched/...    the same multiply between two CPU nodes through ggml's scheduler, CPU alone vs XDNA + CPU
//   planner/...  the split planner's decision and report (bench_planner.cpp)
// The conversion throughput per weight type is bench-convert's (tools/bench-convert), the NPU worker's host feed rate
// xdna-bench-npu-feed's (tools/bench-npu-feed); scripts/microbench.sh runs all three.
// Options besides Google Benchmark's own (--benchmark_filter=..., --benchmark_format=json, ...):
//   --threads=N     CPU threads of both backends (default 1)
//   --plugin=PATH   libggml-xdna.so (default: the one next to this program)
// The plugin runs without its NPU worker (GGML_XDNA_NPU=off unless set otherwise).
//   --verbose       keep ggml's and the plugin's informational log lines (each backend the benchmarks start and stop
//                   logs a few; they would bury the table)
#include "options.h"

#include "ggml.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace xdna_microbench {

options & opts() {
    static options o;
    return o;
}

}  // namespace xdna_microbench

namespace {

void quiet_log(ggml_log_level level, const char * text, void *) {
    if (level == GGML_LOG_LEVEL_WARN || level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

}  // namespace

int main(int argc, char ** argv) {
    bool verbose = false;
    std::vector<char *> rest;
    for (int i = 0; i < argc; ++i) {
        const std::string a = argv[i];
        if (a.rfind("--threads=", 0) == 0) {
            char * end = nullptr;
            const long n = std::strtol(a.c_str() + 10, &end, 10);
            if (*end || n < 1 || n > 1024) {
                std::fprintf(stderr, "xdna-microbench: --threads: '%s' is not a thread count\n", a.c_str() + 10);
                return 2;
            }
            xdna_microbench::opts().threads = (int) n;
        } else if (a.rfind("--plugin=", 0) == 0) {
            xdna_microbench::opts().plugin = a.substr(9);
        } else if (a == "--verbose") {
            verbose = true;
        } else {
            rest.push_back(argv[i]);
        }
    }
    if (!verbose) ggml_log_set(quiet_log, nullptr);
    // The routing overhead is measured with the plugin's CPU worker alone: an NPU worker (on the emulator here) would
    // add its own work to every multiply. An explicit GGML_XDNA_NPU (emulator) brings it back.
    setenv("GGML_XDNA_NPU", "off", 0);
    int n = (int) rest.size();
    benchmark::Initialize(&n, rest.data());
    if (benchmark::ReportUnrecognizedArguments(n, rest.data())) return 2;
    benchmark::AddCustomContext("threads", std::to_string(xdna_microbench::opts().threads));
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
