// Unit tests of the model generator, checked against independent references: the parameter counts published on
// the imitated models' cards, llama.cpp's own loader (which checks every tensor's shape and names the model size
// from its hyper-parameters), the real tokenizer files, and fresh Monte Carlo draws.
#include "calibrate.h"
#include "layout.h"
#include "quantize.h"
#include "specs.h"
#include "tokenizer.h"
#include "writer.h"

#include "ggml-backend.h"
#include "gguf.h"
#include "llama.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace xdna;

namespace {

std::string vocab_path(const model_spec & s) { return std::string(XDNA_TEST_LLAMA_SRC) + "/models/ggml-vocab-" + s.vocab + ".gguf"; }

std::string tmp_path(const std::string & tag) {
    static const std::string dir = [] {
        std::string t = (std::filesystem::temp_directory_path() / "xdna-gen-model-test.XXXXXX").string();
        const char * d = mkdtemp(t.data());
        return std::string(d ? d : ".");
    }();
    return dir + "/" + tag + ".gguf";
}

std::string read_text() {
    std::ifstream in(XDNA_TEST_TEXT);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void quiet_log(ggml_log_level level, const char * text, void *) {
    if (level == GGML_LOG_LEVEL_ERROR) {
        fputs(text, stderr);
    }
}

struct llama_env : ::testing::Environment {
    void SetUp() override {
        llama_log_set(quiet_log, nullptr);
        ggml_backend_load_all_from_path(XDNA_TEST_LLAMA_BIN);
        llama_backend_init();
    }
    void TearDown() override { llama_backend_free(); }
};
const auto * const env = ::testing::AddGlobalTestEnvironment(new llama_env);

struct model_deleter { void operator()(llama_model * m) const { llama_model_free(m); } };
using model_ptr = std::unique_ptr<llama_model, model_deleter>;

model_ptr load(const std::string & path, bool vocab_only, bool no_alloc) {
    llama_model_params p = llama_model_default_params();
    p.vocab_only = vocab_only;
    p.no_alloc = no_alloc;
    if (no_alloc) {
        p.load_mode = LLAMA_LOAD_MODE_NONE;   // the memory-fit pass maps nothing
    }
    p.use_extra_bufts = false;
    p.n_gpu_layers = 0;
    return model_ptr(llama_model_load_from_file(path.c_str(), p));
}

std::vector<llama_token> tokenize(const llama_vocab * v, const std::string & text) {
    std::vector<llama_token> t(text.size() + 16);
    const int n = llama_tokenize(v, text.data(), (int32_t) text.size(), t.data(), (int32_t) t.size(), false, false);
    EXPECT_GE(n, 0);
    t.resize(std::max(n, 0));
    return t;
}

std::string detokenize(const llama_vocab * v, const std::vector<llama_token> & t) {
    std::string s(t.size() * 64 + 16, '\0');
    const int n = llama_detokenize(v, t.data(), (int32_t) t.size(), s.data(), (int32_t) s.size(), false, false);
    EXPECT_GE(n, 0);
    s.resize(std::max(n, 0));
    return s;
}

std::string write_tmp(const model_spec & s, int64_t layers, bool shape_only, const std::string & tag, uint64_t seed = 1) {
    generate_options o;
    o.spec = &s;
    o.n_layer = layers;
    o.seed = seed;
    o.vocab_path = vocab_path(s);
    if (!s.chat_template.empty()) {
        o.template_path = std::string(XDNA_TEST_LLAMA_SRC) + "/models/templates/" + s.chat_template + ".jinja";
    }
    o.shape_only = shape_only;
    const std::string path = tmp_path(tag);
    write_model(o, path);
    return path;
}

} // namespace

// Totals from the model cards (rounded as published): a wrong width, head count or expert count moves them.
TEST(Specs, PublishedParameterCounts) {
    struct card { const char * name; double total_b, total_tol, other_b, other_tol; int other; };
    // other: 0 non-embedding (token_embd and output excluded), 1 active per token, 2 active without the input embedding
    const card cards[] = {
        {"qwen3-0.6b",    0.6,    0.05,   0.44,  0.005, 0},   // Qwen3-0.6B: 0.6B, 0.44B non-embedding
        {"qwen2.5-0.5b",  0.49,   0.005,  0.36,  0.005, 0},   // Qwen2.5-0.5B: 0.49B, 0.36B non-embedding
        {"llama-3.2-1b",  1.23,   0.01,   0,     0,     -1},  // Llama-3.2-1B: 1.23B
        {"llama-3.2-3b",  3.21,   0.005,  0,     0,     -1},  // Llama-3.2-3B: 3.21B
        {"qwen3-30b-a3b", 30.5,   0.05,   3.3,   0.06,  1},   // Qwen3-30B-A3B: 30.5B, 3.3B activated
        {"gpt-oss-20b",   20.9,   0.05,   3.61,  0.005, 2},   // gpt-oss-20b: 20.9B total, 3.61B active
    };
    for (const auto & c : cards) {
        SCOPED_TRACE(c.name);
        const model_spec * s = find_model_spec(c.name);
        ASSERT_NE(s, nullptr);
        const param_count pc = count_params(*s, s->n_layer);
        EXPECT_NEAR(pc.total * 1e-9, c.total_b, c.total_tol);
        if (c.other == 0) {
            EXPECT_NEAR((pc.total - pc.embedding) * 1e-9, c.other_b, c.other_tol);
        } else if (c.other == 1) {
            EXPECT_NEAR(pc.active * 1e-9, c.other_b, c.other_tol);
        } else if (c.other == 2) {
            EXPECT_NEAR((pc.active - s->n_vocab * s->n_embd) * 1e-9, c.other_b, c.other_tol);
        }
    }
}

TEST(Specs, TinyMatricesTakeEveryQuantType) {
    for (const auto & s : all_model_specs()) {
        if (!s.imitates.empty()) {
            continue;
        }
        layout_options lo{s.n_layer, GGML_TYPE_F16, 1.0f};
        for (const auto & t : plan_tensors(s, lo)) {
            if (t.n_dims >= 2 && t.type == GGML_TYPE_F16) {
                EXPECT_EQ(t.ne[0] % 256, 0) << s.name << " " << t.name;
            }
        }
    }
}

TEST(Specs, UnknownNamesAndTypesAreRefused) {
    EXPECT_EQ(find_model_spec("qwen9-1t"), nullptr);
    const model_spec & dense = *find_model_spec("llama-tiny");
    EXPECT_THROW(resolve_quant_type("Q9_9", dense), std::runtime_error);
    EXPECT_TRUE(resolve_quant_type("bf16", dense).direct);
    EXPECT_EQ(resolve_quant_type("q4_k_m", dense).ftype, "Q4_K_M");
    // MXFP4 on a dense model sends its matrices to MXFP4 explicitly; on a MoE model the experts go by default
    EXPECT_FALSE(resolve_quant_type("MXFP4", dense).extra_args.empty());
    EXPECT_TRUE(resolve_quant_type("MXFP4", *find_model_spec("gpt-oss-tiny")).extra_args.empty());
}

// The calibrated spread gives the target entropy on draws the calibration never saw.
TEST(Calibration, EntropyOnFreshDraws) {
    // the entropy of one draw varies by about one nat, so 256 fresh draws leave a standard error near 0.06
    const std::pair<int64_t, double> cases[] = {{4096, 1.5}, {151936, 2.5}};
    for (const auto & [n_vocab, target] : cases) {
        const double sigma = logit_sigma_for_entropy(n_vocab, target, 1);
        const double h = mean_entropy_of_gaussian_logits(n_vocab, sigma, 256, 12345);
        EXPECT_NEAR(h, target, 0.2) << "n_vocab " << n_vocab << " target " << target;
    }
}

// llama.cpp's loader checks the name and shape of every tensor against the architecture's hyper-parameters; its
// size label comes from its own table of the real models' layer counts and widths.
TEST(Writer, LlamaLoaderAcceptsEveryShape) {
    const std::pair<const char *, const char *> labels[] = {
        // llama.cpp labels a 24-layer qwen2 "0.5B" only at width 1024 (Qwen1.5-0.5B): Qwen2.5-0.5B (896) is its "1B"
        {"qwen3-0.6b", "0.6B"}, {"qwen2.5-0.5b", "1B"}, {"llama-3.2-1b", "1B"}, {"llama-3.2-3b", "3B"},
        {"qwen3-30b-a3b", "30B.A3B"}, {"gpt-oss-20b", "20B"},
    };
    for (const auto & s : all_model_specs()) {
        SCOPED_TRACE(s.name);
        const std::string path = write_tmp(s, s.n_layer, /*shape_only =*/ true, "shape-" + s.name);
        model_ptr m = load(path, false, /*no_alloc =*/ true);
        ASSERT_NE(m, nullptr);
        EXPECT_EQ(llama_model_n_params(m.get()), (uint64_t) count_params(s, s.n_layer).total);
        EXPECT_EQ(llama_model_n_layer(m.get()), s.n_layer);
        EXPECT_EQ(llama_model_n_embd(m.get()), s.n_embd);
        EXPECT_EQ(llama_model_n_head(m.get()), s.n_head);
        EXPECT_EQ(llama_model_n_head_kv(m.get()), s.n_head_kv);
        EXPECT_EQ(llama_vocab_n_tokens(llama_model_get_vocab(m.get())), s.n_vocab);
        char desc[128];
        llama_model_desc(m.get(), desc, sizeof(desc));
        for (const auto & [name, label] : labels) {
            if (s.name == name) {
                EXPECT_NE(std::string(desc).find(std::string(" ") + label + " "), std::string::npos) << desc;
            }
        }
        unlink(path.c_str());
    }
}

// Same options, same bytes; a model cut to N layers holds exactly the full model's first N layers.
TEST(Writer, DeterministicAndLayerPrefix) {
    const model_spec & s = *find_model_spec("qwen3moe-tiny");
    const std::string a = write_tmp(s, 2, false, "det-a"), b = write_tmp(s, 2, false, "det-b");
    const std::string c = write_tmp(s, 1, false, "det-c"), d = write_tmp(s, 2, false, "det-d", /*seed =*/ 2);
    auto bytes = [](const std::string & p) {
        std::ifstream in(p, std::ios::binary);
        return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    };
    EXPECT_EQ(bytes(a), bytes(b));
    EXPECT_NE(bytes(a), bytes(d));

    gguf_init_params p = {true, nullptr};
    gguf_context * ga = gguf_init_from_file(a.c_str(), p);
    gguf_context * gc = gguf_init_from_file(c.c_str(), p);
    ASSERT_TRUE(ga && gc);
    const std::vector<char> fa = bytes(a), fc = bytes(c);
    int compared = 0;
    for (int64_t i = 0; i < gguf_get_n_tensors(gc); ++i) {
        const char * name = gguf_get_tensor_name(gc, i);
        const int64_t j = gguf_find_tensor(ga, name);
        ASSERT_GE(j, 0) << name;
        const size_t n = gguf_get_tensor_size(gc, i);
        ASSERT_EQ(n, gguf_get_tensor_size(ga, j));
        const char * x = fc.data() + gguf_get_data_offset(gc) + gguf_get_tensor_offset(gc, i);
        const char * y = fa.data() + gguf_get_data_offset(ga) + gguf_get_tensor_offset(ga, j);
        EXPECT_EQ(memcmp(x, y, n), 0) << name;
        ++compared;
    }
    EXPECT_GT(compared, 10);
    EXPECT_EQ(gguf_find_tensor(gc, "blk.1.attn_q.weight"), -1);
    gguf_free(ga);
    gguf_free(gc);
    for (const auto & f : {a, b, c, d}) {
        unlink(f.c_str());
    }
}

// Padded vocabularies tokenize exactly as the real tokenizer file; cut ones still encode any text and decode it back.
TEST(Tokenizer, MatchesTheRealTokenizerAndRoundTrips) {
    const std::string text = read_text();
    ASSERT_GT(text.size(), 20000u);
    // one model per tokenizer source and size: padded Qwen2 (151936 and 201088), exact Llama 3, two cut ones
    for (const char * name : {"qwen3-0.6b", "gpt-oss-20b", "llama-3.2-1b", "qwen3-tiny", "llama-tiny"}) {
        const model_spec & s = *find_model_spec(name);
        SCOPED_TRACE(s.name);
        const std::string path = write_tmp(s, 1, /*shape_only =*/ true, "tok-" + s.name);
        model_ptr m = load(path, /*vocab_only =*/ true, false);
        ASSERT_NE(m, nullptr);
        const llama_vocab * v = llama_model_get_vocab(m.get());
        const std::vector<llama_token> t = tokenize(v, text);
        EXPECT_EQ(detokenize(v, t), text);

        model_ptr real = load(vocab_path(s), true, false);
        ASSERT_NE(real, nullptr);
        const llama_vocab * rv = llama_model_get_vocab(real.get());
        EXPECT_STREQ(llama_vocab_get_text(v, llama_vocab_eos(v)), llama_vocab_get_text(rv, llama_vocab_eos(rv)));
        const std::vector<llama_token> rt = tokenize(rv, text);
        if (s.n_vocab >= llama_vocab_n_tokens(rv)) {
            EXPECT_EQ(t, rt);
        } else {
            // a cut vocabulary spends more tokens on the same text, but not absurdly many
            EXPECT_GT(t.size(), rt.size());
            EXPECT_LT(t.size(), 2 * rt.size());
        }
        unlink(path.c_str());
    }
}

// Byte-level BPE token texts decode to the bytes they stand for; only complete UTF-8 counts as plain text.
TEST(Tokenizer, ByteLevelDecodingAndUtf8) {
    EXPECT_EQ(bpe_token_bytes("\xC4\xA0the"), " the");      // "Ġthe": Ġ (U+0120) is the space byte
    EXPECT_EQ(bpe_token_bytes("\xC4\x8A"), "\n");           // "Ċ" (U+010A) is the newline byte
    EXPECT_EQ(bpe_token_bytes("\xC3\xA9"), "\xE9");          // "é" (U+00E9) stands for the single byte 0xE9
    EXPECT_EQ(bpe_token_bytes("\xE4\xB8\xAD"), "");          // a code point outside the byte alphabet
    EXPECT_TRUE(is_valid_utf8("plain ascii"));
    EXPECT_TRUE(is_valid_utf8("\xE4\xB8\xAD\xE6\x96\x87"));  // two CJK characters
    EXPECT_FALSE(is_valid_utf8("\xE9"));                     // a lone lead byte
    EXPECT_FALSE(is_valid_utf8("\xE4\xB8"));                 // a truncated sequence
    EXPECT_FALSE(is_valid_utf8("\x80"));                     // a lone continuation byte
    EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));                 // an overlong form
    EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));             // a surrogate
}
