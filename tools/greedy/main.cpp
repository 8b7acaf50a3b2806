// xdna-greedy: greedy generation with llama.cpp's library, for comparing two configurations token by token.
//
//   xdna-greedy --model M --prompt-file F --out REF [-n 32] [-t THREADS]
//       generates n tokens greedily after the prompt and writes them, with the log-probabilities of every step, to REF
//   xdna-greedy --model M --prompt-file F --follow REF [-t THREADS]
//       runs the same prompt and follows REF's tokens (teacher forcing), so that each step sees the same context as
//       REF's; prints how many of its own greedy choices are REF's, the first that is not, and the KL divergence
//       KL(REF || this run) of the next-token distributions, per step
//
// The configuration is the environment: GGML_BACKEND_PATH loads a plugin (libggml-xdna.so) as llama.cpp's tools do.
// Output: "key: value" lines for scripts.
#include "ggml-backend.h"
#include "llama.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr uint32_t file_magic = 0x59445247;   // "GRDY"

struct options {
    std::string model, prompt_file, out, follow;
    int n = 32;
    int threads = 0;
};

[[noreturn]] void usage(const char * why) {
    fprintf(stderr, "xdna-greedy: %s\nusage: xdna-greedy --model M --prompt-file F (--out REF [-n N] | --follow REF) [-t THREADS]\n", why);
    exit(2);
}

options parse(int argc, char ** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage((a + " needs a value").c_str());
            return argv[++i];
        };
        if (a == "--model" || a == "-m") o.model = value();
        else if (a == "--prompt-file" || a == "-f") o.prompt_file = value();
        else if (a == "--out") o.out = value();
        else if (a == "--follow") o.follow = value();
        else if (a == "-n") o.n = atoi(value().c_str());
        else if (a == "-t" || a == "--threads") o.threads = atoi(value().c_str());
        else usage(("unknown option " + a).c_str());
    }
    if (o.model.empty() || o.prompt_file.empty()) usage("--model and --prompt-file are required");
    if (o.out.empty() == o.follow.empty()) usage("give one of --out and --follow");
    if (o.n < 1 || o.n > 4096) usage("-n must be in [1, 4096]");
    return o;
}

// log-softmax in double precision
std::vector<float> log_probs(const float * logits, int n) {
    double mx = logits[0];
    for (int i = 1; i < n; ++i) mx = std::max(mx, (double) logits[i]);
    double sum = 0.0;
    for (int i = 0; i < n; ++i) sum += std::exp((double) logits[i] - mx);
    const double lse = mx + std::log(sum);
    std::vector<float> lp(n);
    for (int i = 0; i < n; ++i) lp[i] = (float) ((double) logits[i] - lse);
    return lp;
}

int argmax(const std::vector<float> & v) {
    return (int) (std::max_element(v.begin(), v.end()) - v.begin());
}

std::string piece(const llama_vocab * vocab, llama_token t) {
    char buf[256];
    const int n = llama_token_to_piece(vocab, t, buf, sizeof(buf), 0, true);
    std::string s = n > 0 ? std::string(buf, n) : std::string();
    for (char & c : s) if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    return "'" + s + "' (" + std::to_string(t) + ")";
}

// The CPU backend module is next to libggml.so (llama.cpp's bin folder), not next to this program.
void load_backends() {
    Dl_info info{};
    if (dladdr((void *) &ggml_backend_load_all_from_path, &info) != 0 && info.dli_fname) {
        std::string dir = info.dli_fname;
        dir = dir.substr(0, dir.find_last_of('/'));
        ggml_backend_load_all_from_path(dir.c_str());   // also loads GGML_BACKEND_PATH
    } else {
        ggml_backend_load_all();
    }
}

struct reference {
    int n_vocab = 0;
    std::vector<llama_token> tokens;
    std::vector<std::vector<float>> lp;   // per step: the log-probabilities the token was chosen from
};

void write_reference(const std::string & path, const reference & r) {
    std::ofstream f(path, std::ios::binary);
    const int32_t head[3] = { (int32_t) file_magic, r.n_vocab, (int32_t) r.tokens.size() };
    f.write((const char *) head, sizeof(head));
    for (size_t i = 0; i < r.tokens.size(); ++i) {
        f.write((const char *) &r.tokens[i], sizeof(llama_token));
        f.write((const char *) r.lp[i].data(), sizeof(float) * r.n_vocab);
    }
    if (!f) throw std::runtime_error("cannot write " + path);
}

reference read_reference(const std::string & path) {
    std::ifstream f(path, std::ios::binary);
    int32_t head[3] = {};
    if (!f.read((char *) head, sizeof(head)) || head[0] != (int32_t) file_magic || head[1] <= 0 || head[2] <= 0) {
        throw std::runtime_error(path + " is not an xdna-greedy reference file");
    }
    reference r;
    r.n_vocab = head[1];
    r.tokens.resize(head[2]);
    r.lp.assign(head[2], std::vector<float>(head[1]));
    for (int i = 0; i < head[2]; ++i) {
        f.read((char *) &r.tokens[i], sizeof(llama_token));
        f.read((char *) r.lp[i].data(), sizeof(float) * r.n_vocab);
    }
    if (!f) throw std::runtime_error(path + " is truncated");
    return r;
}

int run(const options & o) {
    std::ifstream pf(o.prompt_file);
    if (!pf) throw std::runtime_error("cannot read " + o.prompt_file);
    std::stringstream ss;
    ss << pf.rdbuf();
    const std::string prompt = ss.str();

    reference base;
    if (!o.follow.empty()) base = read_reference(o.follow);
    const int n_gen = o.follow.empty() ? o.n : (int) base.tokens.size();

    load_backends();
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model * model = llama_model_load_from_file(o.model.c_str(), mp);
    if (!model) throw std::runtime_error("cannot load " + o.model);
    const llama_vocab * vocab = llama_model_get_vocab(model);
    const int n_vocab = llama_vocab_n_tokens(vocab);
    if (!o.follow.empty() && base.n_vocab != n_vocab) throw std::runtime_error("the reference is of another vocabulary");

    std::vector<llama_token> toks(prompt.size() + 16);
    int n_prompt = llama_tokenize(vocab, prompt.data(), (int32_t) prompt.size(), toks.data(), (int32_t) toks.size(), true, false);
    if (n_prompt < 0) throw std::runtime_error("the prompt does not tokenize");
    toks.resize(n_prompt);

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx   = (uint32_t) (n_prompt + n_gen + 16);
    cp.n_batch = cp.n_ubatch = (uint32_t) std::max(n_prompt, 32);   // the whole prompt in one batch
    if (o.threads > 0) cp.n_threads = cp.n_threads_batch = o.threads;
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) throw std::runtime_error("cannot create a context");

    reference mine;
    mine.n_vocab = n_vocab;
    int identical = 0, first_diff = -1;
    double kl_sum = 0.0, kl_max = 0.0;
    std::string diff_line;
    llama_batch batch = llama_batch_get_one(toks.data(), n_prompt);
    llama_token next = 0;
    for (int step = 0; step < n_gen; ++step) {
        if (llama_decode(ctx, batch) != 0) throw std::runtime_error("llama_decode failed at step " + std::to_string(step));
        std::vector<float> lp = log_probs(llama_get_logits_ith(ctx, -1), n_vocab);
        const llama_token own = argmax(lp);
        if (o.follow.empty()) {
            next = own;
            mine.tokens.push_back(own);
            mine.lp.push_back(std::move(lp));
        } else {
            next = base.tokens[step];
            const std::vector<float> & lb = base.lp[step];
            double kl = 0.0;
            for (int i = 0; i < n_vocab; ++i) kl += std::exp((double) lb[i]) * ((double) lb[i] - lp[i]);
            kl = std::max(kl, 0.0);
            kl_sum += kl;
            kl_max = std::max(kl_max, kl);
            if (own == next) {
                identical++;
            } else if (first_diff < 0) {
                first_diff = step;
                // both tokens' probabilities in both runs: a near-tie shows as such
                char probs[160];
                snprintf(probs, sizeof(probs), " (probabilities: reference %.3f / %.3f, this run %.3f / %.3f)",
                         std::exp(lb[next]), std::exp(lb[own]), std::exp(lp[next]), std::exp(lp[own]));
                diff_line = "step " + std::to_string(step + 1) + ": reference " + piece(vocab, next) + ", this run " +
                            piece(vocab, own) + probs;
            }
        }
        batch = llama_batch_get_one(&next, 1);
    }
    printf("prompt_tokens: %d\n", n_prompt);
    printf("generated: %d\n", n_gen);
    if (o.follow.empty()) {
        write_reference(o.out, mine);
        std::string text;
        for (llama_token t : mine.tokens) {
            char buf[256];
            const int n = llama_token_to_piece(vocab, t, buf, sizeof(buf), 0, false);
            if (n > 0) text.append(buf, n);
        }
        for (char & c : text) if (c == '\n' || c == '\r') c = ' ';
        printf("text: %s\n", text.c_str());
    } else {
        printf("identical: %d\n", identical);
        printf("first_difference: %s\n", first_diff < 0 ? "none" : diff_line.c_str());
        printf("kl_mean: %.3g\n", kl_sum / n_gen);
        printf("kl_max: %.3g\n", kl_max);
    }
    fflush(stdout);
    llama_free(ctx);   // the plugin's backend goes with it: its end-of-run report is written now
    llama_model_free(model);
    llama_backend_free();
    return 0;
}

}  // namespace

int main(int argc, char ** argv) {
    const options o = parse(argc, argv);
    try {
        return run(o);
    } catch (const std::exception & e) {
        fprintf(stderr, "xdna-greedy: %s\n", e.what());
        return 1;
    }
}
