#include "writer.h"

#include "calibrate.h"
#include "layout.h"
#include "random.h"
#include "tokenizer.h"

#include "gguf.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <memory>
#include <stdexcept>
#include <unistd.h>
#include <vector>

namespace xdna {

namespace {

struct gguf_deleter { void operator()(gguf_context * c) const { gguf_free(c); } };
struct ggml_deleter { void operator()(ggml_context * c) const { ggml_free(c); } };
struct file_closer  { void operator()(FILE * f) const { if (f) fclose(f); } };

void set_arch_keys(gguf_context * g, const model_spec & s, int64_t n_layer) {
    const std::string a = s.arch + ".";
    auto u32 = [&](const char * k, int64_t v) { gguf_set_val_u32(g, (a + k).c_str(), (uint32_t) v); };
    auto f32 = [&](const char * k, float v) { gguf_set_val_f32(g, (a + k).c_str(), v); };

    gguf_set_val_str(g, "general.architecture", s.arch.c_str());
    gguf_set_val_str(g, "general.name", (s.name + " (generated, random weights)").c_str());
    u32("context_length", s.n_ctx_train);
    u32("embedding_length", s.n_embd);
    u32("block_count", n_layer);
    u32("feed_forward_length", s.n_ff);
    u32("attention.head_count", s.n_head);
    u32("attention.head_count_kv", s.n_head_kv);
    u32("attention.key_length", s.head_dim);
    u32("attention.value_length", s.head_dim);
    f32("attention.layer_norm_rms_epsilon", s.rms_eps);
    f32("rope.freq_base", s.rope_base);
    if (s.arch == "llama") {
        u32("vocab_size", s.n_vocab);
        u32("rope.dimension_count", s.head_dim);
    }
    if (s.n_expert > 0) {
        u32("expert_count", s.n_expert);
        u32("expert_used_count", s.n_expert_used);
        u32("expert_feed_forward_length", s.n_ff_exp);
    }
    if (s.n_swa > 0) {
        u32("attention.sliding_window", s.n_swa);
    }
    if (s.yarn_factor > 0) {
        gguf_set_val_str(g, (a + "rope.scaling.type").c_str(), "yarn");
        f32("rope.scaling.factor", s.yarn_factor);
        u32("rope.scaling.original_context_length", s.yarn_orig_ctx);
    }
}

// Rows of the token embedding and the lm head for tokens that are not plain text (control and padding tokens,
// pieces of multi-byte characters) get this fraction of the normal scale: their logits then never compete with the
// top ones, as in a trained model, so generated text is valid UTF-8 and does not stop on a random end token.
constexpr float non_text_row_scale = 0.25f;

void fill_tensor(FILE * f, const tensor_plan & t, const model_spec & spec, uint64_t seed,
                 const std::vector<uint8_t> & plain) {
    const bool vocab_rows = t.name == "token_embd.weight" || t.name == "output.weight";
    const int64_t n = t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
    rng r(seed, t.name);
    std::vector<float> rope;
    if (t.fill == fill_kind::rope_llama3) {
        rope = llama3_rope_factors(spec);
        if ((int64_t) rope.size() != n) {
            throw std::runtime_error("rope_freqs: size mismatch");
        }
    }
    // in chunks of whole rows, converted to the tensor's type and appended
    const int64_t row = t.ne[0];
    const int64_t rows_per_chunk = std::max<int64_t>(1, (1 << 20) / row);
    std::vector<float> buf;
    std::vector<uint8_t> conv;
    for (int64_t r0 = 0; r0 < n / row; r0 += rows_per_chunk) {
        const int64_t nr = std::min(rows_per_chunk, n / row - r0);
        const int64_t m = nr * row;
        buf.resize(m);
        for (int64_t i = 0; i < m; ++i) {
            switch (t.fill) {
                case fill_kind::gaussian:
                    buf[i] = t.scale * r.gaussian();
                    if (vocab_rows && !plain[r0 + i / row]) {
                        buf[i] *= non_text_row_scale;
                    }
                    break;
                case fill_kind::constant:    buf[i] = t.scale; break;
                case fill_kind::signed_gain: buf[i] = t.scale * r.sign(); break;
                case fill_kind::rope_llama3: buf[i] = rope[r0 * row + i]; break;
            }
        }
        const void * data = buf.data();
        size_t bytes = m * sizeof(float);
        if (t.type == GGML_TYPE_F16) {
            conv.resize(m * sizeof(ggml_fp16_t));
            ggml_fp32_to_fp16_row(buf.data(), (ggml_fp16_t *) conv.data(), m);
            data = conv.data(); bytes = conv.size();
        } else if (t.type == GGML_TYPE_BF16) {
            conv.resize(m * sizeof(ggml_bf16_t));
            ggml_fp32_to_bf16_row(buf.data(), (ggml_bf16_t *) conv.data(), m);
            data = conv.data(); bytes = conv.size();
        } else if (t.type != GGML_TYPE_F32) {
            throw std::runtime_error(t.name + ": the generator writes F32, F16 or BF16 only");
        }
        if (fwrite(data, 1, bytes, f) != bytes) {
            throw std::runtime_error("write failed (disk full?)");
        }
    }
}

} // namespace

void write_model(const generate_options & opt, const std::string & path) {
    const model_spec & s = *opt.spec;
    if (opt.n_layer < 1 || opt.n_layer > s.n_layer) {
        throw std::runtime_error("--layers " + std::to_string(opt.n_layer) + " is out of range 1.." + std::to_string(s.n_layer) + " for " + s.name);
    }
    if (!(opt.entropy > 0.1 && opt.entropy < std::log(double(s.n_vocab)) - 0.5)) {
        throw std::runtime_error("--entropy " + std::to_string(opt.entropy) + " is out of range (0.1 .. log(n_vocab) - 0.5 nats)");
    }

    // the final norm's gain: logits = W_out (g * rmsnorm(h)) have std-dev g * std(W_out) * sqrt(n_embd) across the
    // vocabulary for any hidden state, so g sets the spread that gives the target entropy (docs/models.md)
    // (a shape-only file holds no weights, so it needs no calibration)
    std::unique_ptr<gguf_context, gguf_deleter> g(gguf_init_empty());
    set_arch_keys(g.get(), s, opt.n_layer);
    // file_type: 0 all F32, 1 mostly F16, 32 mostly BF16 (llama_ftype)
    gguf_set_val_u32(g.get(), "general.file_type", opt.matrix_type == GGML_TYPE_F32 ? 0 : opt.matrix_type == GGML_TYPE_F16 ? 1 : 32);
    const std::vector<uint8_t> plain = copy_tokenizer(g.get(), opt.vocab_path, s.n_vocab, s.add_bos);
    const int64_t n_plain = std::count(plain.begin(), plain.end(), 1);
    if (n_plain < 256) {
        throw std::runtime_error(opt.vocab_path + ": only " + std::to_string(n_plain) + " plain-text tokens");
    }

    // the competing logits are those of the plain-text tokens (the others are scaled far down)
    const double sigma = opt.shape_only ? 0.0 : logit_sigma_for_entropy(n_plain, opt.entropy, opt.seed);
    const float gain = float(sigma / (lm_head_std(s) * std::sqrt(double(s.n_embd))));

    layout_options lo;
    lo.n_layer = opt.n_layer;
    lo.matrix_type = opt.matrix_type;
    lo.output_gain = gain;
    const std::vector<tensor_plan> plan = plan_tensors(s, lo);
    if (!opt.template_path.empty()) {
        std::ifstream in(opt.template_path, std::ios::binary);
        if (in) {
            std::stringstream ss;
            ss << in.rdbuf();
            gguf_set_val_str(g.get(), "tokenizer.chat_template", ss.str().c_str());
        }
    }
    // provenance, read back by tests and by the harness
    gguf_set_val_u32(g.get(), "xdna.generator.version", gen_model_version);
    gguf_set_val_str(g.get(), "xdna.generator.model", s.name.c_str());
    gguf_set_val_str(g.get(), "xdna.generator.imitates", s.imitates.c_str());
    gguf_set_val_u64(g.get(), "xdna.generator.seed", opt.seed);
    gguf_set_val_f32(g.get(), "xdna.generator.entropy", float(opt.entropy));
    gguf_set_val_f32(g.get(), "xdna.generator.logit_sigma", float(sigma));
    gguf_set_val_u32(g.get(), "xdna.generator.text_tokens", (uint32_t) n_plain);
    gguf_set_val_u32(g.get(), "xdna.generator.full_layers", (uint32_t) s.n_layer);

    ggml_init_params ip = { ggml_tensor_overhead() * (plan.size() + 1), nullptr, /*no_alloc =*/ true };
    std::unique_ptr<ggml_context, ggml_deleter> meta(ggml_init(ip));
    for (const auto & t : plan) {
        ggml_tensor * x = ggml_new_tensor(meta.get(), t.type, t.n_dims, t.ne);
        ggml_set_name(x, t.name.c_str());
        gguf_add_tensor(g.get(), x);
    }

    std::unique_ptr<FILE, file_closer> f(fopen(path.c_str(), "wb"));
    if (!f) {
        throw std::runtime_error(path + ": cannot open for writing: " + strerror(errno));
    }
    if (!gguf_write_to_file_ptr(g.get(), f.get(), /*only_meta =*/ true)) {
        throw std::runtime_error(path + ": writing the header failed");
    }
    const size_t align = gguf_get_alignment(g.get());
    const size_t meta_size = gguf_get_meta_size(g.get());
    if (opt.shape_only) {
        const size_t n = plan.size();
        const size_t end = meta_size + gguf_get_tensor_offset(g.get(), (int64_t) n - 1) +
                           (gguf_get_tensor_size(g.get(), (int64_t) n - 1) + align - 1) / align * align;
        if (fflush(f.get()) != 0 || ftruncate(fileno(f.get()), (off_t) end) != 0) {
            throw std::runtime_error(path + ": cannot size the file: " + strerror(errno));
        }
        return;
    }
    static const char zeros[64] = {0};
    for (size_t i = 0; i < plan.size(); ++i) {
        const size_t start = (size_t) ftell(f.get());
        if (start != meta_size + gguf_get_tensor_offset(g.get(), (int64_t) i)) {
            throw std::runtime_error(plan[i].name + ": data offset mismatch");
        }
        fill_tensor(f.get(), plan[i], s, opt.seed, plain);
        const size_t written = (size_t) ftell(f.get()) - start;
        const size_t padded = (written + align - 1) / align * align;
        if (fwrite(zeros, 1, padded - written, f.get()) != padded - written) {
            throw std::runtime_error(path + ": write failed (disk full?)");
        }
    }
    if (fflush(f.get()) != 0) {
        throw std::runtime_error(path + ": write failed (disk full?)");
    }
}

} // namespace xdna
