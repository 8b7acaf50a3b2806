// Throughput of the NPU worker's conversions on one thread, as GB/s (10^9 bytes) of output:
//   weight/<type>/<plain|repacked>/<bf16|int8>/<isa>: a whole K x N weight (default 2048 x 5632, a small model's
//       ffn_up) to bf16, or to int8 plus its scales;
//   act/<bf16|int8>/<isa>: T x K f32 activations (default 512 x 2048) to bf16 or int8.
// Options besides Google Benchmark's own: --k=, --n=, --tokens=, --types=q4_0,q8_0,... (default: all), --isa=best|all.
// Example: bench-convert --benchmark_filter='weight/q4_K' --isa=all

#include "xdna_convert.h"

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"

#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

// Google Benchmark 1.8 replaced Run::error_occurred with Run::skipped: whichever this version has
template <typename R> auto run_failed(const R & r, int) -> decltype(bool(r.error_occurred)) { return r.error_occurred; }
template <typename R> bool run_failed(const R & r, long) { return r.skipped != 0; }

}  // namespace

namespace {

int64_t     g_K = 2048, g_N = 5632, g_T = 512;
std::string g_types;  // comma-separated type names; empty: all
bool        g_all_isas = false;

void load_cpu_backend() {
    // the CPU backend logs every tensor it repacks; keep warnings and errors only
    ggml_log_set([](ggml_log_level level, const char * text, void *) {
        if (level >= GGML_LOG_LEVEL_WARN) {
            std::fputs(text, stderr);
        }
    }, nullptr);
    if (ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU) != nullptr) {
        return;
    }
    Dl_info info{};
    if (dladdr((void *) &ggml_backend_load_all_from_path, &info) != 0 && info.dli_fname != nullptr) {
        std::string dir = info.dli_fname;
        dir             = dir.substr(0, dir.find_last_of('/'));
        if (ggml_backend_load((dir + "/libggml-cpu.so").c_str()) == nullptr) {
            ggml_backend_load_all_from_path(dir.c_str());
        }
    }
}

// Test weights: ggml's own quantization of normal random floats, as in a real model (the int8 speed depends on the
// values: a block scale far from its neighbours' makes subnormal products). The grid types (IQ1_*, IQ2_*, IQ3_*), whose
// quantizer takes minutes at this size, get random block bytes that dequantize to finite values instead.
std::vector<uint8_t> make_data(ggml_type type, int64_t K, int64_t N) {
    std::mt19937_64      rng(42 + type);
    std::vector<uint8_t> out(ggml_row_size(type, K) * N);
    const bool grid_type = type == GGML_TYPE_IQ1_S || type == GGML_TYPE_IQ1_M || type == GGML_TYPE_IQ2_XXS ||
                           type == GGML_TYPE_IQ2_XS || type == GGML_TYPE_IQ2_S || type == GGML_TYPE_IQ3_XXS ||
                           type == GGML_TYPE_IQ3_S;
    if (!grid_type) {
        std::normal_distribution<float> nd(0.0f, 1.0f);
        std::vector<float>              f(K * N);
        for (auto & v : f) {
            v = nd(rng);
        }
        if (type == GGML_TYPE_F32) {
            std::memcpy(out.data(), f.data(), out.size());
        } else {
            ggml_quantize_chunk(type, f.data(), out.data(), 0, N, K, nullptr);
        }
        return out;
    }
    const size_t       bs = ggml_type_size(type);
    const int64_t      be = ggml_blck_size(type);
    std::vector<float> tmp(be);
    auto               to_float = ggml_get_type_traits(type)->to_float;
    for (size_t b = 0; b < out.size() / bs; ++b) {
        uint8_t * blk = out.data() + b * bs;
        for (int attempt = 0; attempt < 1000; ++attempt) {
            for (size_t i = 0; i < bs; ++i) {
                blk[i] = (uint8_t) rng();
            }
            to_float(blk, tmp.data(), be);
            bool finite = true;
            for (float v : tmp) {
                finite = finite && std::isfinite(v);
            }
            if (finite) {
                break;
            }
        }
    }
    return out;
}

struct bench_weight {
    ggml_context *        ctx = nullptr;
    ggml_backend_buffer_t buf = nullptr;
    ggml_tensor *         t   = nullptr;
    ~bench_weight() {
        if (buf) {
            ggml_backend_buffer_free(buf);
        }
        if (ctx) {
            ggml_free(ctx);
        }
    }
};

std::unique_ptr<bench_weight> make_weight(ggml_type type, bool repacked) {
    auto                 w    = std::make_unique<bench_weight>();
    std::vector<uint8_t> data = make_data(type, g_K, g_N);
    if (repacked) {
        const auto & p = xdna_repack_probe();
        const auto * i = xdna_repack_info(type);
        if (p.buft == nullptr || i == nullptr || !i->verified) {
            return nullptr;
        }
        ggml_init_params ip = { ggml_tensor_overhead(), nullptr, true };
        w->ctx              = ggml_init(ip);
        w->t                = ggml_new_tensor_2d(w->ctx, type, g_K, g_N);
        w->buf              = ggml_backend_alloc_ctx_tensors_from_buft(w->ctx, p.buft);
        if (w->buf == nullptr || w->t->extra == nullptr) {
            return nullptr;
        }
        ggml_backend_tensor_set(w->t, data.data(), 0, data.size());
    } else {
        ggml_init_params ip = { ggml_tensor_overhead() + data.size() + 64, nullptr, false };
        w->ctx              = ggml_init(ip);
        w->t                = ggml_new_tensor_2d(w->ctx, type, g_K, g_N);
        std::memcpy(w->t->data, data.data(), data.size());
    }
    return w;
}

// Google Benchmark calls a benchmark several times while it sizes the iteration count, and the benchmarks of one
// weight run one after the other: keep the last weight.
bench_weight * cached_weight(ggml_type type, bool repacked) {
    static std::unique_ptr<bench_weight> w;
    static ggml_type                     w_type     = GGML_TYPE_COUNT;
    static bool                          w_repacked = false;
    if (w_type != type || w_repacked != repacked) {
        w.reset();
        w          = make_weight(type, repacked);
        w_type     = type;
        w_repacked = repacked;
    }
    return w.get();
}

void bench_weight_conversion(benchmark::State & state, ggml_type type, bool repacked, bool int8, xdna_convert_isa isa) {
    bench_weight * w = cached_weight(type, repacked);
    if (!w) {
        state.SkipWithError("not repacked by this CPU backend");
        return;
    }
    xdna_convert_isa_set(isa);
    const int64_t            n_groups = xdna_w8_groups(g_K);
    std::vector<ggml_bf16_t> out_bf16(int8 ? 0 : g_K * g_N);
    std::vector<int8_t>      out_i8(int8 ? g_K * g_N : 0);
    std::vector<float>       scales(int8 ? n_groups * g_N : 0);
    std::string              err;
    for (auto _ : state) {
        const bool ok = int8 ? xdna_weight_to_int8(w->t, 0, 0, g_N, out_i8.data(), g_K, scales.data(), n_groups, &err)
                             : xdna_weight_to_bf16(w->t, 0, 0, g_N, out_bf16.data(), g_K, &err);
        if (!ok) {
            state.SkipWithError(err.c_str());
            break;
        }
        benchmark::ClobberMemory();
    }
    const double out_bytes = int8 ? (double) g_K * g_N + 4.0 * n_groups * g_N : 2.0 * g_K * g_N;
    state.counters["GB/s"] = benchmark::Counter(out_bytes * state.iterations(), benchmark::Counter::kIsRate,
                                                benchmark::Counter::kIs1000);
    state.counters["in_MB"] = (double) ggml_nbytes(w->t) / 1e6;
    xdna_convert_isa_set(xdna_convert_isa_best());
}

void bench_act_conversion(benchmark::State & state, bool int8, xdna_convert_isa isa) {
    std::mt19937_64                 rng(7);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float>              x(g_T * g_K);
    for (auto & v : x) {
        v = nd(rng);
    }
    xdna_convert_isa_set(isa);
    std::vector<ggml_bf16_t> out_bf16(int8 ? 0 : g_T * g_K);
    std::vector<int8_t>      out_i8(int8 ? g_T * g_K : 0);
    std::vector<float>       scales(g_T);
    for (auto _ : state) {
        if (int8) {
            xdna_act_to_int8(x.data(), g_K * sizeof(float), g_T, g_K, out_i8.data(), g_K, scales.data());
        } else {
            xdna_act_to_bf16(x.data(), g_K * sizeof(float), g_T, g_K, out_bf16.data(), g_K);
        }
        benchmark::ClobberMemory();
    }
    const double out_bytes = int8 ? (double) g_T * g_K + 4.0 * g_T : 2.0 * g_T * g_K;
    state.counters["GB/s"] = benchmark::Counter(out_bytes * state.iterations(), benchmark::Counter::kIsRate,
                                                benchmark::Counter::kIs1000);
    xdna_convert_isa_set(xdna_convert_isa_best());
}

// Google Benchmark's console output, plus a summary table at the end: one line per type and layout (and ISA), the
// GB/s of bf16 and of int8 output side by side.
class table_reporter : public benchmark::ConsoleReporter {
  public:
    table_reporter() : ConsoleReporter(isatty(fileno(stdout)) ? OO_Defaults : OO_None) {}

    void ReportRuns(const std::vector<Run> & runs) override {
        ConsoleReporter::ReportRuns(runs);
        for (const Run & r : runs) {
            if (run_failed(r, 0) || r.run_type != Run::RT_Iteration) {
                continue;
            }
            std::string name = r.benchmark_name();
            name             = name.substr(0, name.find("/min_time"));
            auto it          = r.counters.find("GB/s");
            if (it == r.counters.end()) {
                continue;
            }
            // weight/<type>/<layout>/<fmt>/<isa> or act/<fmt>/<isa>: the row is everything but <fmt>
            std::vector<std::string> parts;
            for (size_t a = 0, b; a <= name.size(); a = b + 1) {
                b = name.find('/', a);
                if (b == std::string::npos) {
                    b = name.size();
                }
                parts.push_back(name.substr(a, b - a));
            }
            const size_t fmt_at = parts.size() - 2;
            std::string  row;
            for (size_t i = 0; i < parts.size(); ++i) {
                if (i != fmt_at) {
                    row += (row.empty() ? "" : " ") + parts[i];
                }
            }
            if (rows_.empty() || rows_.back().first != row) {
                rows_.push_back({ row, { -1.0, -1.0 } });
                for (auto & e : rows_) {  // the same row reported earlier (other format first)
                    if (e.first == row && &e != &rows_.back()) {
                        rows_.pop_back();
                        break;
                    }
                }
            }
            for (auto & e : rows_) {
                if (e.first == row) {
                    e.second[parts[fmt_at] == "int8" ? 1 : 0] = it->second.value / 1e9;
                }
            }
        }
    }

    void print_table() const {
        std::printf("\n%-36s %12s %12s\n", "conversion (one thread)", "bf16 GB/s", "int8 GB/s");
        for (const auto & e : rows_) {
            std::printf("%-36s %12s %12s\n", e.first.c_str(), fmt(e.second[0]).c_str(), fmt(e.second[1]).c_str());
        }
    }

  private:
    static std::string fmt(double v) {
        char buf[32];
        std::snprintf(buf, sizeof(buf), v < 0 ? "-" : "%.2f", v);
        return buf;
    }

    std::vector<std::pair<std::string, std::array<double, 2>>> rows_;
};

bool type_selected(ggml_type t) {
    if (g_types.empty()) {
        return true;
    }
    const std::string list = "," + g_types + ",";
    return list.find("," + std::string(ggml_type_name(t)) + ",") != std::string::npos;
}

}  // namespace

int main(int argc, char ** argv) {
    std::vector<char *> rest;
    for (int i = 0; i < argc; ++i) {
        const std::string a = argv[i];
        if (a.rfind("--k=", 0) == 0) {
            g_K = std::stoll(a.substr(4));
        } else if (a.rfind("--n=", 0) == 0) {
            g_N = std::stoll(a.substr(4));
        } else if (a.rfind("--tokens=", 0) == 0) {
            g_T = std::stoll(a.substr(9));
        } else if (a.rfind("--types=", 0) == 0) {
            g_types = a.substr(8);
        } else if (a == "--isa=all") {
            g_all_isas = true;
        } else if (a == "--isa=best") {
            g_all_isas = false;
        } else {
            rest.push_back(argv[i]);
        }
    }
    int rest_argc = (int) rest.size();
    benchmark::Initialize(&rest_argc, rest.data());

    load_cpu_backend();
    std::vector<xdna_convert_isa> isas;
    for (int i = g_all_isas ? 0 : (int) xdna_convert_isa_best(); i <= (int) xdna_convert_isa_best(); ++i) {
        isas.push_back((xdna_convert_isa) i);
    }
    std::printf("weight %lld x %lld (K x N), activations %lld x %lld; repack: %s\n", (long long) g_K, (long long) g_N,
                (long long) g_T, (long long) g_K,
                xdna_repack_probe().buft ? "CPU_REPACK found" : xdna_repack_probe().note.c_str());

    for (int ti = 0; ti < GGML_TYPE_COUNT; ++ti) {
        const ggml_type t = (ggml_type) ti;
        if (!type_selected(t) || ggml_get_type_traits(t)->blck_size == 0 ||
            (t != GGML_TYPE_F32 && ggml_get_type_traits(t)->to_float == nullptr) || g_K % ggml_blck_size(t) != 0) {
            continue;
        }
        const bool has_repack = xdna_repack_info(t) != nullptr && xdna_repack_info(t)->verified;
        for (bool repacked : { false, true }) {
            if (repacked && !has_repack) {
                continue;
            }
            for (bool int8 : { false, true }) {
                for (xdna_convert_isa isa : isas) {
                    const std::string name = std::string("weight/") + ggml_type_name(t) + (repacked ? "/repacked" : "/plain") +
                                             (int8 ? "/int8/" : "/bf16/") + xdna_convert_isa_name(isa);
                    benchmark::RegisterBenchmark(name.c_str(), bench_weight_conversion, t, repacked, int8, isa)
                        ->Unit(benchmark::kMillisecond)
                        ->MinTime(0.2);
                }
            }
        }
    }
    for (bool int8 : { false, true }) {
        for (xdna_convert_isa isa : isas) {
            const std::string name = std::string("act/") + (int8 ? "int8/" : "bf16/") + xdna_convert_isa_name(isa);
            benchmark::RegisterBenchmark(name.c_str(), bench_act_conversion, int8, isa)
                ->Unit(benchmark::kMicrosecond)
                ->MinTime(0.2);
        }
    }
    table_reporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    reporter.print_table();
    benchmark::Shutdown();
    return 0;
}
