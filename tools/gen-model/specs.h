// Architecture table of the model generator: the hyper-parameters of the real models the generated files imitate.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace xdna {

// One model: everything that decides the GGUF keys and the tensor shapes.
struct model_spec {
    std::string name;          // what users type: "qwen3-0.6b", "llama-tiny", ...
    std::string arch;          // general.architecture of the pinned llama.cpp: llama, qwen2, qwen3, qwen3moe, gpt-oss
    std::string vocab;         // tokenizer source: ggml-vocab-<vocab>.gguf in the llama.cpp source tree
    std::string imitates;      // the real model whose shapes these are ("" for tiny variants)
    std::string chat_template; // models/templates/<name>.jinja of the llama.cpp source tree ("": the vocab file's)
    int64_t n_vocab    = 0;    // rows of token_embd (the tokenizer is padded or cut to this)
    int64_t n_embd     = 0;
    int64_t n_layer    = 0;
    int64_t n_head     = 0;
    int64_t n_head_kv  = 0;
    int64_t head_dim   = 0;    // key/value length per head (Qwen3 has head_dim != n_embd / n_head)
    int64_t n_ff       = 0;    // dense feed-forward width (also written for MoE models, as the real files do)
    int64_t n_expert   = 0;    // 0: dense
    int64_t n_expert_used = 0;
    int64_t n_ff_exp   = 0;    // width of one expert
    int64_t n_ctx_train = 0;
    float   rope_base  = 10000.0f;
    float   rms_eps    = 1e-6f;
    bool    tied       = false;   // no output.weight: the token embedding is the lm head
    bool    qkv_bias   = false;   // Qwen2 attention biases
    bool    qk_norm    = false;   // Qwen3 per-head RMS norm of q and k
    bool    add_bos    = false;
    // Llama 3 rope scaling (rope_freqs.weight); factor 0: none
    float   llama3_factor = 0.0f, llama3_low = 1.0f, llama3_high = 4.0f;
    int64_t llama3_orig_ctx = 8192;
    // gpt-oss: sliding window on every other layer, attention sinks, YaRN, biases everywhere
    int64_t n_swa      = 0;
    float   yarn_factor = 0.0f;
    int64_t yarn_orig_ctx = 0;
};

// All known models; nullptr when the name is unknown.
const model_spec * find_model_spec(const std::string & name);
const std::vector<model_spec> & all_model_specs();

} // namespace xdna
