// The NPU worker's host feed rate: how much NPU work (FLOP/s) the host side of the pipeline (activation conversion,
// block copies, syncs, partial sums, result writes) keeps fed per host core, on Qwen3-0.6B's matrix shapes, and the
// CPU time the NPU worker costs per second of NPU time. The software XDNA1 runs in null mode (no arithmetic, modelled
// time only; set here unless XDNA_EMU_MODE is given), so the host side is all that is measured.
//
// usage: xdna-bench-npu-feed [tokens (512)] [repetitions (5)] [w8: 0|1]
#include "config/config.h"
#include "workers/npu/npu_worker.h"

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <vector>

namespace {

double cpu_seconds() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double wall_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct shape { const char * name; int64_t k, rows; };

}  // namespace

int main(int argc, char ** argv) {
    const int64_t tokens = argc > 1 ? atoll(argv[1]) : 512;
    const int reps = argc > 2 ? atoi(argv[2]) : 5;
    const bool w8 = argc > 3 && atoi(argv[3]) != 0;
    setenv("XDNA_EMU_MODE", "null", 0);
    setenv("XDNA_EMU_LOG", "0", 0);
    ggml_backend_load_all_from_path(XDNA_LLAMA_BIN);

    xdna::config cfg = xdna::get_config();
    cfg.npu_w8 = w8;
    std::unique_ptr<xdna::npu_worker> npu = xdna::npu_worker::create(cfg);
    if (!npu) { fprintf(stderr, "no NPU worker\n"); return 1; }
    printf("NPU: %s, %s weights, %lld tokens, %d repetitions\n", npu->description().c_str(), w8 ? "int8" : "bf16",
           (long long) tokens, reps);

    // Qwen3-0.6B: hidden 1024, 16 q heads / 8 kv heads of 128, ffn 3072
    const shape shapes[] = { { "attn_q", 1024, 2048 }, { "attn_k", 1024, 1024 }, { "attn_v", 1024, 1024 },
                             { "attn_output", 2048, 1024 }, { "ffn_gate", 1024, 3072 }, { "ffn_up", 1024, 3072 },
                             { "ffn_down", 3072, 1024 } };
    printf("%-12s %6s %6s %10s %10s %12s %14s\n", "shape", "K", "rows", "wall ms", "host ms", "GFLOP/s fed",
           "host s/NPU s");
    double tot_flop = 0, tot_cpu = 0, tot_wall = 0;
    for (const shape & s : shapes) {
        ggml_init_params p = { 8 * ggml_tensor_overhead(), nullptr, true };
        ggml_context * ctx = ggml_init(p);
        ggml_tensor * w = ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_0, s.k, s.rows);
        ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, s.k, tokens);
        ggml_tensor * y = ggml_mul_mat(ctx, w, x);
        ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type());
        ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);   // cached, as a model's weights
        std::mt19937 rng(1);
        std::normal_distribution<float> d(0, 1);
        std::vector<float> wf(ggml_nelements(w)), xf(ggml_nelements(x));
        for (auto & v : wf) v = d(rng);
        for (auto & v : xf) v = d(rng);
        std::vector<uint8_t> wq(ggml_nbytes(w));
        ggml_quantize_chunk(GGML_TYPE_Q4_0, wf.data(), wq.data(), 0, s.rows, s.k, nullptr);
        ggml_backend_tensor_set(w, wq.data(), 0, wq.size());
        ggml_backend_tensor_set(x, xf.data(), 0, ggml_nbytes(x));

        npu->begin(y, { 0, s.rows });   // warm: converts the weight into the cache
        npu->end();
        const double c0 = cpu_seconds(), t0 = wall_seconds();
        for (int r = 0; r < reps; ++r) {
            npu->begin(y, { 0, s.rows });
            xdna::work_result res = npu->end();
            if (!res.ok) { fprintf(stderr, "%s: %s\n", s.name, res.error.c_str()); return 1; }
        }
        const double cpu = cpu_seconds() - c0, wall = wall_seconds() - t0;
        const double flop = 2.0 * s.k * s.rows * tokens * reps;
        printf("%-12s %6lld %6lld %10.2f %10.2f %12.0f %14.3f\n", s.name, (long long) s.k, (long long) s.rows,
               wall / reps * 1e3, cpu / reps * 1e3, flop / cpu / 1e9, cpu / wall);
        tot_flop += flop; tot_cpu += cpu; tot_wall += wall;
        ggml_backend_buffer_free(buf);
        ggml_free(ctx);
    }
    printf("all shapes: the host feeds %.0f GFLOP/s of NPU work per core; %.3f s of host CPU per NPU second "
           "(modelled NPU: %.0f GFLOP/s)\n", tot_flop / tot_cpu / 1e9, tot_cpu / tot_wall, tot_flop / tot_wall / 1e9);
    return 0;
}
