#include "mm_problem.h"

#include "backends.h"
#include "options.h"

#include "ggml-alloc.h"

#include <random>
#include <vector>

namespace xdna_microbench {

namespace {

std::vector<float> random_floats(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> v(n);
    for (auto & f : v) f = d(rng);
    return v;
}

}  // namespace

mm_problem::mm_problem(const mm_shape & s) {
    const backends & b = load(opts().plugin);
    if (s.repacked && !b.repack_buft) { why = "this CPU backend has no CPU_REPACK buffer type"; return; }

    ggml_init_params wp = { 4 * ggml_tensor_overhead(), nullptr, true };
    wctx = ggml_init(wp);
    w = ggml_new_tensor_2d(wctx, s.type, s.k, s.rows);
    ggml_set_name(w, "weight");
    wbuf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, s.repacked ? b.repack_buft : ggml_backend_cpu_buffer_type());
    ggml_backend_buffer_set_usage(wbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    if (s.repacked && w->extra == nullptr) {
        why = std::string(ggml_type_name(s.type)) + " is not repacked by this CPU backend build";
        return;
    }
    std::vector<float> wf = random_floats((size_t) (s.k * s.rows), 1);
    std::vector<uint8_t> wq(ggml_nbytes(w));
    ggml_quantize_chunk(s.type, wf.data(), wq.data(), 0, s.rows, s.k, nullptr);
    ggml_backend_tensor_set(w, wq.data(), 0, wq.size());

    // the activations: in the same context, allocated in a plain CPU buffer of their own (the weights' allocation
    // above is done, so this one takes only the new tensor)
    x = ggml_new_tensor_2d(wctx, GGML_TYPE_F32, s.k, s.tokens);
    ggml_set_name(x, "input");
    xbuf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, ggml_backend_cpu_buffer_type());
    std::vector<float> xf = random_floats((size_t) (s.k * s.tokens), 2);
    ggml_backend_tensor_set(x, xf.data(), 0, ggml_nbytes(x));

    // the multiply and its graph; its result in a buffer of its own
    ggml_init_params gp = { ggml_graph_overhead() + 4 * ggml_tensor_overhead(), nullptr, true };
    gctx = ggml_init(gp);
    node = ggml_mul_mat(gctx, w, x);
    g = ggml_new_graph(gctx);
    ggml_build_forward_expand(g, node);
    obuf = ggml_backend_alloc_ctx_tensors_from_buft(gctx, ggml_backend_cpu_buffer_type());
}

mm_problem::~mm_problem() {
    if (obuf) ggml_backend_buffer_free(obuf);
    if (xbuf) ggml_backend_buffer_free(xbuf);
    if (wbuf) ggml_backend_buffer_free(wbuf);
    if (gctx) ggml_free(gctx);
    if (wctx) ggml_free(wctx);
}

}  // namespace xdna_microbench
