// The software XDNA1's arithmetic speed: one block per iteration, reported as GFLOP/s (2 m n k per block).
//   bench-emu-matmul [--benchmark_filter=...]
#include "emu_matmul.h"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

using namespace xdna_emu;

static void run(benchmark::State& state, dtype a, dtype b, dtype c) {
    const uint32_t m = static_cast<uint32_t>(state.range(0)), n = static_cast<uint32_t>(state.range(1));
    const uint32_t k = 1024;
    const int threads = static_cast<int>(state.range(2));
    std::vector<uint8_t> A(size_t(m) * k * dtype_size(a)), B(size_t(n) * k * dtype_size(b));
    std::vector<uint8_t> C(size_t(m) * n * 4);
    for (size_t i = 0; i < A.size(); ++i) A[i] = static_cast<uint8_t>(i * 37 % 127);
    for (size_t i = 0; i < B.size(); ++i) B[i] = static_cast<uint8_t>(i * 53 % 113);
    for (auto _ : state) {
        gemm_compute({a, b, c, A.data(), B.data(), C.data(), m, n, k, threads});
        benchmark::DoNotOptimize(C.data());
    }
    state.counters["GFLOP/s"] = benchmark::Counter(2.0 * m * n * k * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

static void bf16(benchmark::State& s) { run(s, dtype::bf16, dtype::bf16, dtype::f32); }
static void int8(benchmark::State& s) { run(s, dtype::i8, dtype::i8, dtype::i32); }

// tokens, weight rows, threads (K = 1024). GFLOP/s is per CPU second of the calling thread, so it stays
// meaningful on a busy machine; a run with more threads would need real time instead.
BENCHMARK(bf16)->Args({64, 256, 1})->Args({512, 512, 1})->Unit(benchmark::kMillisecond);
BENCHMARK(int8)->Args({64, 256, 1})->Args({512, 512, 1})->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
