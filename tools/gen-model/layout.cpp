#include "layout.h"

#include <cmath>

namespace xdna {

// The token embedding has unit-variance entries (its rows are the residual stream's starting point); every
// other matrix is N(0, 1/fan_in), the usual initialization, which keeps each layer's contribution of order one.
static constexpr float embd_std = 1.0f;

float lm_head_std(const model_spec & spec) {
    return spec.tied ? embd_std : 1.0f / std::sqrt(float(spec.n_embd));
}

std::vector<float> llama3_rope_factors(const model_spec & spec) {
    // Llama 3 scaling: wavelengths shorter than orig_ctx/high keep their frequency, longer than orig_ctx/low are
    // slowed by the factor, and the band between is interpolated; the tensor holds the divisor of each frequency.
    std::vector<float> f(spec.head_dim / 2);
    const double low_wavelen  = double(spec.llama3_orig_ctx) / spec.llama3_low;
    const double high_wavelen = double(spec.llama3_orig_ctx) / spec.llama3_high;
    for (size_t i = 0; i < f.size(); ++i) {
        const double freq = 1.0 / std::pow(double(spec.rope_base), 2.0 * i / double(spec.head_dim));
        const double wavelen = 2.0 * M_PI / freq;
        if (wavelen < high_wavelen) {
            f[i] = 1.0f;
        } else if (wavelen > low_wavelen) {
            f[i] = spec.llama3_factor;
        } else {
            const double smooth = (spec.llama3_orig_ctx / wavelen - spec.llama3_low) / (spec.llama3_high - spec.llama3_low);
            f[i] = float(1.0 / ((1.0 - smooth) / spec.llama3_factor + smooth));
        }
    }
    return f;
}

namespace {

struct planner {
    std::vector<tensor_plan> out;
    ggml_type mtype;

    void add(const std::string & name, std::vector<int64_t> ne, ggml_type type, fill_kind fill, float scale) {
        tensor_plan p;
        p.name = name;
        p.n_dims = (int) ne.size();
        for (size_t i = 0; i < ne.size(); ++i) {
            p.ne[i] = ne[i];
        }
        p.type = type;
        p.fill = fill;
        p.scale = scale;
        out.push_back(p);
    }
    // a weight matrix [fan_in, fan_out] (ggml order), or a stack of expert matrices [fan_in, fan_out, n_expert]
    void matrix(const std::string & name, std::vector<int64_t> ne, ggml_type type = GGML_TYPE_COUNT) {
        add(name, ne, type == GGML_TYPE_COUNT ? mtype : type, fill_kind::gaussian, 1.0f / std::sqrt(float(ne[0])));
    }
    void norm(const std::string & name, int64_t n) { add(name, {n}, GGML_TYPE_F32, fill_kind::constant, 1.0f); }
    void bias(const std::string & name, std::vector<int64_t> ne, float std) {
        add(name, ne, GGML_TYPE_F32, fill_kind::gaussian, std);
    }
};

} // namespace

std::vector<tensor_plan> plan_tensors(const model_spec & s, const layout_options & opt) {
    planner p;
    p.mtype = opt.matrix_type;
    const int64_t d = s.n_embd, q_dim = s.n_head * s.head_dim, kv_dim = s.n_head_kv * s.head_dim;

    p.add("token_embd.weight", {d, s.n_vocab}, p.mtype, fill_kind::gaussian, embd_std);
    p.add("output_norm.weight", {d}, GGML_TYPE_F32, fill_kind::signed_gain, opt.output_gain);
    if (!s.tied) {
        p.add("output.weight", {d, s.n_vocab}, p.mtype, fill_kind::gaussian, lm_head_std(s));
    }
    if (s.llama3_factor > 0) {
        p.add("rope_freqs.weight", {s.head_dim / 2}, GGML_TYPE_F32, fill_kind::rope_llama3, 1.0f);
    }

    for (int64_t il = 0; il < opt.n_layer; ++il) {
        const std::string b = "blk." + std::to_string(il) + ".";
        p.norm(b + "attn_norm.weight", d);
        p.matrix(b + "attn_q.weight", {d, q_dim});
        p.matrix(b + "attn_k.weight", {d, kv_dim});
        p.matrix(b + "attn_v.weight", {d, kv_dim});
        p.matrix(b + "attn_output.weight", {q_dim, d});
        if (s.qkv_bias || s.arch == "gpt-oss") {
            // Qwen2 has large k biases in the trained model; gpt-oss has small biases on everything
            const float std = s.arch == "gpt-oss" ? 0.02f : 0.1f;
            p.bias(b + "attn_q.bias", {q_dim}, std);
            p.bias(b + "attn_k.bias", {kv_dim}, std);
            p.bias(b + "attn_v.bias", {kv_dim}, std);
        }
        if (s.qk_norm) {
            p.norm(b + "attn_q_norm.weight", s.head_dim);
            p.norm(b + "attn_k_norm.weight", s.head_dim);
        }
        if (s.arch == "gpt-oss") {
            p.bias(b + "attn_output.bias", {d}, 0.02f);
            p.bias(b + "attn_sinks.weight", {s.n_head}, 1.0f);
            p.norm(b + "post_attention_norm.weight", d);
        } else {
            p.norm(b + "ffn_norm.weight", d);
        }
        if (s.n_expert == 0) {
            p.matrix(b + "ffn_gate.weight", {d, s.n_ff});
            p.matrix(b + "ffn_up.weight", {d, s.n_ff});
            p.matrix(b + "ffn_down.weight", {s.n_ff, d});
        } else {
            // the router stays F32, as in converted real models (llama-quantize never quantizes it)
            p.matrix(b + "ffn_gate_inp.weight", {d, s.n_expert}, GGML_TYPE_F32);
            p.matrix(b + "ffn_gate_exps.weight", {d, s.n_ff_exp, s.n_expert});
            p.matrix(b + "ffn_up_exps.weight", {d, s.n_ff_exp, s.n_expert});
            p.matrix(b + "ffn_down_exps.weight", {s.n_ff_exp, d, s.n_expert});
            if (s.arch == "gpt-oss") {
                p.bias(b + "ffn_gate_inp.bias", {s.n_expert}, 0.1f);
                p.bias(b + "ffn_gate_exps.bias", {s.n_ff_exp, s.n_expert}, 0.02f);
                p.bias(b + "ffn_up_exps.bias", {s.n_ff_exp, s.n_expert}, 0.02f);
                p.bias(b + "ffn_down_exps.bias", {d, s.n_expert}, 0.02f);
            }
        }
    }
    return p.out;
}

param_count count_params(const model_spec & spec, int64_t n_layer) {
    layout_options lo;
    lo.n_layer = n_layer;
    lo.matrix_type = GGML_TYPE_F16;
    lo.output_gain = 1.0f;
    param_count c;
    for (const auto & t : plan_tensors(spec, lo)) {
        const int64_t n = t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
        c.total += n;
        if (t.name == "token_embd.weight" || t.name == "output.weight") {
            c.embedding += n;
        }
        // expert tensors (and their biases) are stacked along the last dimension: a token uses n_expert_used of them
        const bool expert = t.name.find("_exps.") != std::string::npos;
        c.active += expert ? n / spec.n_expert * spec.n_expert_used : n;
    }
    return c;
}

} // namespace xdna
