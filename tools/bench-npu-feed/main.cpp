// The NPU worker's host feed rate: how much NPU work (FLOP/s) the host side of the pipeline (activation conversion,
// block copies, syncs, partial sums, result writes) keeps fed per host core, on Qwen3-0.6B's matrix shapes, and the
// CPU time the NPU worker costs per second of NPU time. The software XDNA1 runs in null mode (no arithmetic, modelled
// time only; set here unless XDNA_EMU_MODE is given), so the host side is all that is measured.
//
// With `moe`, it then does the same for mixture-of-experts multiplies (MUL_MAT_ID) with Qwen3-30B-A3B's expert
// shapes and a seeded uniform routing: the difference in host time per NPU FLOP against the dense shapes is what
// gathering the tokens routed to each expert and scattering the results back costs.
//
// usage: xdna-bench-npu-feed [tokens (512)] [repetitions (5)] [w8: 0|1] [moe]
#include "config/config.h"
#include "planner/planner.h"
#include "workers/npu/npu_worker.h"

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
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
    const bool moe = argc > 4 && std::string(argv[4]) == "moe";
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
    // times `reps` calls of the worker on all rows of `y` (after one that fills the cache); flop: NPU work per call
    // the multiply as the engine describes it: the planner's experts for the CPU, then the NPU's block
    xdna::planner_options po;
    po.moe_min_tokens = cfg.npu_moe_min_tokens;
    const xdna::split_planner planner(po);
    auto measure = [&](const char * name, ggml_tensor * y, int64_t k, int64_t rows, double flop, double & tot_flop,
                       double & tot_cpu, double & tot_wall) {
        xdna::multiply m = xdna::describe_multiply(y);
        planner.assign_experts(m);
        if (!npu->accepts(m) || !npu->describe(m)) { fprintf(stderr, "%s: the NPU does not take it\n", name); exit(1); }
        npu->begin(m, { 0, rows });   // warm: converts the weight into the cache
        npu->end();
        const double c0 = cpu_seconds(), t0 = wall_seconds();
        for (int r = 0; r < reps; ++r) {
            npu->begin(m, { 0, rows });
            xdna::work_record res = npu->end();
            if (!res.ok()) { fprintf(stderr, "%s: %s\n", name, res.why().c_str()); exit(1); }
        }
        const double cpu = cpu_seconds() - c0, wall = wall_seconds() - t0;
        flop *= reps;
        printf("%-12s %6lld %6lld %10.2f %10.2f %12.0f %14.3f\n", name, (long long) k, (long long) rows,
               wall / reps * 1e3, cpu / reps * 1e3, flop / cpu / 1e9, cpu / wall);
        tot_flop += flop; tot_cpu += cpu; tot_wall += wall;
    };
    auto random_weight = [](ggml_tensor * w, uint32_t seed) {
        std::mt19937 rng(seed);
        std::normal_distribution<float> d(0, 1);
        std::vector<float> wf(ggml_nelements(w));
        for (auto & v : wf) v = d(rng);
        std::vector<uint8_t> wq(ggml_nbytes(w));
        ggml_quantize_chunk(GGML_TYPE_Q4_0, wf.data(), wq.data(), 0, ggml_nrows(w), w->ne[0], nullptr);
        ggml_backend_tensor_set(w, wq.data(), 0, wq.size());
    };
    auto random_f32 = [](ggml_tensor * x, uint32_t seed) {
        std::mt19937 rng(seed);
        std::normal_distribution<float> d(0, 1);
        std::vector<float> xf(ggml_nelements(x));
        for (auto & v : xf) v = d(rng);
        ggml_backend_tensor_set(x, xf.data(), 0, ggml_nbytes(x));
    };
    auto summary = [](const char * what, double flop, double cpu, double wall) {
        printf("%s: the host feeds %.0f GFLOP/s of NPU work per core; %.3f s of host CPU per NPU second (modelled NPU: "
               "%.0f GFLOP/s)\n", what, flop / cpu / 1e9, cpu / wall, flop / wall / 1e9);
    };

    double tot_flop = 0, tot_cpu = 0, tot_wall = 0;
    for (const shape & s : shapes) {
        ggml_init_params p = { 8 * ggml_tensor_overhead(), nullptr, true };
        ggml_context * ctx = ggml_init(p);
        ggml_tensor * w = ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_0, s.k, s.rows);
        ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, s.k, tokens);
        ggml_tensor * y = ggml_mul_mat(ctx, w, x);
        ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type());
        ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);   // cached, as a model's weights
        random_weight(w, 1);
        random_f32(x, 2);
        measure(s.name, y, s.k, s.rows, 2.0 * s.k * s.rows * tokens, tot_flop, tot_cpu, tot_wall);
        ggml_backend_buffer_free(buf);
        ggml_free(ctx);
    }
    summary("all shapes", tot_flop, tot_cpu, tot_wall);
    if (!moe) return 0;

    // Qwen3-30B-A3B: hidden 2048, 128 experts of 768, 8 used per token; each token's experts drawn uniformly
    const int64_t n_embd = 2048, n_ff = 768, n_expert = 128, n_used = 8;
    const shape moe_shapes[] = { { "ffn_gate_exps", n_embd, n_ff }, { "ffn_up_exps", n_embd, n_ff },
                                 { "ffn_down_exps", n_ff, n_embd } };
    std::vector<int32_t> ids(size_t(n_used) * tokens);
    std::vector<int64_t> routed(n_expert, 0);
    std::mt19937 rng(3);
    for (int64_t t = 0; t < tokens; ++t) {
        std::vector<int32_t> e(n_expert);
        for (int32_t i = 0; i < n_expert; ++i) e[i] = i;
        std::shuffle(e.begin(), e.end(), rng);
        for (int64_t u = 0; u < n_used; ++u) { ids[t * n_used + u] = e[u]; routed[e[u]]++; }
    }
    int64_t on_npu = 0;   // routed (token, expert) pairs of the experts the NPU takes (the others stay with the CPU)
    for (int64_t c : routed) on_npu += c >= cfg.npu_moe_min_tokens ? c : 0;
    printf("mixture of experts: %lld experts, %lld used per token; %lld of %lld routed tokens go to experts with at "
           "least %d (the NPU's)\n", (long long) n_expert, (long long) n_used, (long long) on_npu,
           (long long) (n_used * tokens), cfg.npu_moe_min_tokens);
    double m_flop = 0, m_cpu = 0, m_wall = 0;
    for (const shape & s : moe_shapes) {
        ggml_init_params p = { 8 * ggml_tensor_overhead(), nullptr, true };
        ggml_context * ctx = ggml_init(p);
        ggml_tensor * w = ggml_new_tensor_3d(ctx, GGML_TYPE_Q4_0, s.k, s.rows, n_expert);
        // gate and up read each token's one input row for every slot (broadcast); down reads one per slot
        const bool down = s.k == n_ff;
        ggml_tensor * x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, s.k, down ? n_used : 1, tokens);
        ggml_tensor * id = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, n_used, tokens);
        ggml_tensor * y = ggml_mul_mat_id(ctx, w, x, id);
        ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type());
        ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
        random_weight(w, 4);
        random_f32(x, 5);
        ggml_backend_tensor_set(id, ids.data(), 0, ggml_nbytes(id));
        measure(s.name, y, s.k, s.rows, 2.0 * s.k * s.rows * on_npu, m_flop, m_cpu, m_wall);
        ggml_backend_buffer_free(buf);
        ggml_free(ctx);
    }
    summary("experts", m_flop, m_cpu, m_wall);
    printf("gathering and scattering: %.2fx the host time per NPU FLOP of the dense shapes\n",
           (m_cpu / m_flop) / (tot_cpu / tot_flop));
    return 0;
}
