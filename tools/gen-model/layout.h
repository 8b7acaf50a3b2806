// The tensors of a generated model: names and shapes as the pinned llama.cpp loads them for each architecture,
// and how each one is filled.
#pragma once

#include "specs.h"

#include "ggml.h"

#include <string>
#include <vector>

namespace xdna {

enum class fill_kind {
    gaussian,     // N(0, scale^2)
    constant,     // every element = scale
    signed_gain,  // +-scale with random signs (the final norm: see docs/models.md)
    rope_llama3,  // Llama 3 rope frequency factors, computed from the spec
};

struct tensor_plan {
    std::string name;
    int         n_dims = 1;
    int64_t     ne[4] = {1, 1, 1, 1};
    ggml_type   type = GGML_TYPE_F32;
    fill_kind   fill = fill_kind::gaussian;
    float       scale = 1.0f;
};

struct layout_options {
    int64_t   n_layer;      // layers actually written (<= spec.n_layer)
    ggml_type matrix_type;  // F32, F16 or BF16: the type of every weight matrix
    float     output_gain;  // gain of the final norm (sets the logit spread)
};

std::vector<tensor_plan> plan_tensors(const model_spec & spec, const layout_options & opt);

struct param_count {
    int64_t total = 0;      // every element of every tensor
    int64_t embedding = 0;  // token_embd (and output when not tied)
    int64_t active = 0;     // per token: total less the experts a token does not use
};
param_count count_params(const model_spec & spec, int64_t n_layer);

// Std-dev of the lm head's entries (token_embd when tied, output otherwise): the calibration needs it.
float lm_head_std(const model_spec & spec);

// The Llama 3 rope frequency factors (head_dim / 2 values).
std::vector<float> llama3_rope_factors(const model_spec & spec);

} // namespace xdna
