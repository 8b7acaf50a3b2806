// Hyper-parameters of the imitated models, from their published configuration files (config.json on the
// model hub): hidden size, layers, heads, KV heads, head_dim, intermediate size, vocabulary, rope theta, rms eps,
// tied embeddings, experts. Tiny variants keep each architecture's features (GQA, biases, q/k norm, experts,
// sliding window) at a size a unit test runs in a second; their widths are multiples of 256 so that every
// quantization type (K-quants use 256-wide blocks) applies to every matrix.
#include "specs.h"

namespace xdna {

static std::vector<model_spec> make_specs() {
    std::vector<model_spec> v;

    model_spec s;
    // Qwen3-0.6B: 28 layers, 1024 wide, 16 q heads / 8 kv heads of 128, ffn 3072, tied embeddings
    s = {};
    s.name = "qwen3-0.6b"; s.arch = "qwen3"; s.vocab = "qwen2"; s.imitates = "Qwen3-0.6B";
    s.chat_template = "Qwen-Qwen3-0.6B";
    s.n_vocab = 151936; s.n_embd = 1024; s.n_layer = 28; s.n_head = 16; s.n_head_kv = 8; s.head_dim = 128;
    s.n_ff = 3072; s.n_ctx_train = 40960; s.rope_base = 1000000.0f; s.rms_eps = 1e-6f; s.tied = true; s.qk_norm = true;
    v.push_back(s);

    // Qwen2.5-0.5B: 24 layers, 896 wide, 14 / 2 heads of 64, ffn 4864, q/k/v biases, tied embeddings
    s = {};
    s.name = "qwen2.5-0.5b"; s.arch = "qwen2"; s.vocab = "qwen2"; s.imitates = "Qwen2.5-0.5B";
    s.chat_template = "Qwen-Qwen2.5-7B-Instruct";
    s.n_vocab = 151936; s.n_embd = 896; s.n_layer = 24; s.n_head = 14; s.n_head_kv = 2; s.head_dim = 64;
    s.n_ff = 4864; s.n_ctx_train = 32768; s.rope_base = 1000000.0f; s.rms_eps = 1e-6f; s.tied = true; s.qkv_bias = true;
    v.push_back(s);

    // Llama-3.2-1B: 16 layers, 2048 wide, 32 / 8 heads of 64, ffn 8192, tied, llama3 rope scaling (factor 32)
    s = {};
    s.name = "llama-3.2-1b"; s.arch = "llama"; s.vocab = "llama-bpe"; s.imitates = "Llama-3.2-1B";
    s.chat_template = "meta-llama-Llama-3.2-3B-Instruct";
    s.n_vocab = 128256; s.n_embd = 2048; s.n_layer = 16; s.n_head = 32; s.n_head_kv = 8; s.head_dim = 64;
    s.n_ff = 8192; s.n_ctx_train = 131072; s.rope_base = 500000.0f; s.rms_eps = 1e-5f; s.tied = true; s.add_bos = true;
    s.llama3_factor = 32.0f; s.llama3_low = 1.0f; s.llama3_high = 4.0f; s.llama3_orig_ctx = 8192;
    v.push_back(s);

    // Llama-3.2-3B: 28 layers, 3072 wide, 24 / 8 heads of 128, ffn 8192, tied
    s = v.back();
    s.name = "llama-3.2-3b"; s.imitates = "Llama-3.2-3B";
    s.n_embd = 3072; s.n_layer = 28; s.n_head = 24; s.n_head_kv = 8; s.head_dim = 128; s.n_ff = 8192;
    v.push_back(s);

    // Qwen3-30B-A3B: 48 layers, 2048 wide, 32 / 4 heads of 128, 128 experts of 768, 8 used, separate lm head
    s = {};
    s.name = "qwen3-30b-a3b"; s.arch = "qwen3moe"; s.vocab = "qwen2"; s.imitates = "Qwen3-30B-A3B";
    s.chat_template = "Qwen-Qwen3-0.6B";
    s.n_vocab = 151936; s.n_embd = 2048; s.n_layer = 48; s.n_head = 32; s.n_head_kv = 4; s.head_dim = 128;
    s.n_ff = 6144; s.n_expert = 128; s.n_expert_used = 8; s.n_ff_exp = 768;
    s.n_ctx_train = 40960; s.rope_base = 1000000.0f; s.rms_eps = 1e-6f; s.qk_norm = true;
    v.push_back(s);

    // gpt-oss-20b: 24 layers, 2880 wide, 64 / 8 heads of 64, 32 experts of 2880, 4 used, sliding window 128 on
    // every other layer, attention sinks, YaRN x32 over 4096, vocabulary 201088 (the o200k tokenizer is not in the
    // pinned source, so the Qwen2 tokenizer is padded to that size, and keeps its chat template: the harmony
    // template needs special tokens that tokenizer lacks)
    s = {};
    s.name = "gpt-oss-20b"; s.arch = "gpt-oss"; s.vocab = "qwen2"; s.imitates = "gpt-oss-20b";
    s.n_vocab = 201088; s.n_embd = 2880; s.n_layer = 24; s.n_head = 64; s.n_head_kv = 8; s.head_dim = 64;
    s.n_ff = 2880; s.n_expert = 32; s.n_expert_used = 4; s.n_ff_exp = 2880;
    s.n_ctx_train = 131072; s.rope_base = 150000.0f; s.rms_eps = 1e-5f;
    s.n_swa = 128; s.yarn_factor = 32.0f; s.yarn_orig_ctx = 4096;
    v.push_back(s);

    // Tiny variants: same architecture features, 2 layers, 256 wide, a 4096-token cut of the same tokenizer.
    auto tiny = [](model_spec t, const char * name) {
        t.name = name; t.imitates = "";
        t.n_vocab = 4096; t.n_embd = 256; t.n_layer = 2; t.n_ctx_train = 4096;
        t.n_head = 4; t.n_head_kv = 2; t.head_dim = 64; t.n_ff = 512;
        if (t.n_expert) { t.n_expert = 8; t.n_expert_used = 2; t.n_ff_exp = 256; t.n_ff = 512; }
        if (t.n_swa) { t.n_swa = 32; t.yarn_orig_ctx = 1024; }
        if (t.llama3_factor > 0) { t.llama3_orig_ctx = 1024; }
        return t;
    };
    v.push_back(tiny(v[0], "qwen3-tiny"));
    v.back().head_dim = 128;   // keep Qwen3's head_dim != n_embd / n_head
    v.push_back(tiny(v[1], "qwen2.5-tiny"));
    v.push_back(tiny(v[2], "llama-tiny"));
    v.push_back(tiny(v[4], "qwen3moe-tiny"));
    v.push_back(tiny(v[5], "gpt-oss-tiny"));
    return v;
}

const std::vector<model_spec> & all_model_specs() {
    static const std::vector<model_spec> specs = make_specs();
    return specs;
}

const model_spec * find_model_spec(const std::string & name) {
    for (const auto & s : all_model_specs()) {
        if (s.name == name) {
            return &s;
        }
    }
    return nullptr;
}

} // namespace xdna
