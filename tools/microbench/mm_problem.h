// One matrix multiply set up for the microbenchmarks: a weight (plain CPU buffer or the CPU's CPU_REPACK buffer)
// and random f32 activations, both allocated once, as a model's weights and a batch's activations are.
#pragma once

#include "ggml-backend.h"
#include "ggml.h"

#include <cstdint>
#include <string>

namespace xdna_microbench {

struct mm_shape {
    ggml_type type   = GGML_TYPE_Q4_0;
    int64_t   k      = 256;   // inputs
    int64_t   rows   = 256;   // output rows
    int64_t   tokens = 32;
    bool      repacked = false;
};

class mm_problem {
  public:
    explicit mm_problem(const mm_shape & s);
    ~mm_problem();
    mm_problem(const mm_problem &) = delete;
    mm_problem & operator=(const mm_problem &) = delete;

    ggml_tensor * weight() const { return w; }
    ggml_tensor * input() const { return x; }
    ggml_tensor * mul_mat() const { return node; }   // weight x input, in a graph of its own
    ggml_cgraph * graph() const { return g; }

    const std::string & skip() const { return why; }   // non-empty: this machine cannot set it up

  private:
    ggml_context *        wctx = nullptr;   // the weight and the input
    ggml_context *        gctx = nullptr;   // the multiply and its graph
    ggml_backend_buffer_t wbuf = nullptr, xbuf = nullptr, obuf = nullptr;
    ggml_tensor *         w = nullptr, * x = nullptr, * node = nullptr;
    ggml_cgraph *         g = nullptr;
    std::string           why;
};

}  // namespace xdna_microbench
