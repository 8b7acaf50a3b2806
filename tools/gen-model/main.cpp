// xdna-gen-model: writes a GGUF model with the exact shapes of a real one (or a tiny variant), seeded random
// weights, a real tokenizer and peaked next-token distributions; any weight type through llama-quantize; cached.
// Prints the model's path on stdout.
#include "layout.h"
#include "quantize.h"
#include "specs.h"
#include "writer.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#ifndef XDNA_LLAMA_SRC_DEFAULT
#define XDNA_LLAMA_SRC_DEFAULT ""
#endif
#ifndef XDNA_LLAMA_BIN_DEFAULT
#define XDNA_LLAMA_BIN_DEFAULT ""
#endif

using namespace xdna;

namespace {

struct cli {
    std::string model, type = "F16", out, cache_dir, llama_src, llama_bin;
    int64_t layers = 0;
    uint64_t seed = 1;
    double entropy = 2.5;
    bool force = false, drop_base = false, list = false, verbose = false;
};

void usage() {
    fprintf(stderr,
        "usage: xdna-gen-model --model NAME [options]    (prints the model's path)\n"
        "  --model NAME      see --list\n"
        "  --layers N        keep only the first N layers (default: all)\n"
        "  --type T          F32 F16 BF16 (written directly) or a llama-quantize type:\n"
        "                    %s (default F16)\n"
        "  --seed S          weight seed (default 1)\n"
        "  --entropy H       target mean next-token entropy in nats (default 2.5)\n"
        "  --out FILE        write there instead of the cache\n"
        "  --cache-dir DIR   default: $GGML_XDNA_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/ggml-xdna; models go in DIR/models\n"
        "  --llama-src DIR   llama.cpp source tree (tokenizers in DIR/models; default $LLAMA_SRC or the configured one)\n"
        "  --llama-bin DIR   llama.cpp binaries (llama-quantize; default $LLAMA_BIN or the configured one)\n"
        "  --force           regenerate even when cached\n"
        "  --drop-base       delete the cached F16 base after quantizing\n"
        "  --verbose         show llama-quantize's output\n"
        "  --list            list the models\n", quantize_type_names().c_str());
}

std::string env_or(const char * name, const std::string & fallback) {
    const char * v = getenv(name);
    return v && *v ? std::string(v) : fallback;
}

bool file_exists(const std::string & p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

void make_dirs(const std::string & dir) {
    for (size_t i = 1; i <= dir.size(); ++i) {
        if (i == dir.size() || dir[i] == '/') {
            const std::string sub = dir.substr(0, i);
            if (mkdir(sub.c_str(), 0755) != 0 && errno != EEXIST) {
                throw std::runtime_error(sub + ": cannot create directory: " + strerror(errno));
            }
        }
    }
}

std::string default_cache_dir() {
    const std::string c = env_or("GGML_XDNA_CACHE", "");
    if (!c.empty()) {
        return c;
    }
    const std::string xdg = env_or("XDG_CACHE_HOME", "");
    if (!xdg.empty()) {
        return xdg + "/ggml-xdna";
    }
    const std::string home = env_or("HOME", "");
    if (home.empty()) {
        throw std::runtime_error("no cache directory: set --cache-dir, GGML_XDNA_CACHE or HOME");
    }
    return home + "/.cache/ggml-xdna";
}

// The cache key: everything that changes the file's bytes.
std::string cache_name(const cli & c, int64_t layers, const std::string & type) {
    char h[32];
    snprintf(h, sizeof(h), "%.2f", c.entropy);
    return c.model + "-L" + std::to_string(layers) + "-" + type + "-s" + std::to_string(c.seed) + "-h" + h +
           "-g" + std::to_string(gen_model_version) + ".gguf";
}

std::string tmp_name(const std::string & path) { return path + ".tmp." + std::to_string(getpid()); }

void publish(const std::string & tmp, const std::string & path) {
    // rename is atomic: concurrent generators of the same key each write their own tmp, the last rename wins,
    // and both files are identical
    if (rename(tmp.c_str(), path.c_str()) != 0) {
        const std::string err = strerror(errno);
        unlink(tmp.c_str());
        throw std::runtime_error(path + ": cannot rename into place: " + err);
    }
}

int64_t parse_int(const char * opt, const char * v) {
    char * end = nullptr;
    errno = 0;
    const long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < 0) {
        throw std::runtime_error(std::string(opt) + ": '" + v + "' is not a non-negative integer");
    }
    return x;
}

cli parse(int argc, char ** argv) {
    cli c;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto val = [&]() -> const char * {
            if (i + 1 >= argc) {
                throw std::runtime_error(a + " needs a value");
            }
            return argv[++i];
        };
        if      (a == "--model")     c.model = val();
        else if (a == "--layers")    c.layers = parse_int("--layers", val());
        else if (a == "--type")      c.type = val();
        else if (a == "--seed")      c.seed = (uint64_t) parse_int("--seed", val());
        else if (a == "--entropy") {
            const char * v = val();
            char * end = nullptr;
            c.entropy = strtod(v, &end);
            if (end == v || *end || !std::isfinite(c.entropy)) {
                throw std::runtime_error(std::string("--entropy: '") + v + "' is not a number");
            }
        }
        else if (a == "--out")       c.out = val();
        else if (a == "--cache-dir") c.cache_dir = val();
        else if (a == "--llama-src") c.llama_src = val();
        else if (a == "--llama-bin") c.llama_bin = val();
        else if (a == "--force")     c.force = true;
        else if (a == "--drop-base") c.drop_base = true;
        else if (a == "--verbose")   c.verbose = true;
        else if (a == "--list")      c.list = true;
        else if (a == "-h" || a == "--help") { usage(); exit(0); }
        else throw std::runtime_error("unknown option '" + a + "' (--help lists them)");
    }
    return c;
}

void list_models() {
    printf("%-15s %-9s %-15s %7s %5s %6s %9s %6s %7s %9s %9s %s\n", "name", "arch", "imitates", "n_vocab", "n_embd", "layers",
           "heads/kv", "hdim", "n_ff", "params", "active", "experts");
    for (const auto & s : all_model_specs()) {
        char heads[32], experts[48] = "-";
        snprintf(heads, sizeof(heads), "%lld/%lld", (long long) s.n_head, (long long) s.n_head_kv);
        if (s.n_expert) {
            snprintf(experts, sizeof(experts), "%lld x %lld, %lld used", (long long) s.n_expert, (long long) s.n_ff_exp,
                     (long long) s.n_expert_used);
        }
        const param_count pc = count_params(s, s.n_layer);
        printf("%-15s %-9s %-15s %7lld %5lld %6lld %9s %6lld %7lld %8.3fB %8.3fB %s\n", s.name.c_str(), s.arch.c_str(),
               s.imitates.empty() ? "(tiny)" : s.imitates.c_str(), (long long) s.n_vocab, (long long) s.n_embd,
               (long long) s.n_layer, heads, (long long) s.head_dim, (long long) s.n_ff, pc.total * 1e-9, pc.active * 1e-9,
               experts);
    }
}

int run(int argc, char ** argv) {
    cli c = parse(argc, argv);
    if (c.list) {
        list_models();
        return 0;
    }
    if (c.model.empty()) {
        usage();
        throw std::runtime_error("--model is required");
    }
    const model_spec * spec = find_model_spec(c.model);
    if (!spec) {
        throw std::runtime_error("unknown model '" + c.model + "' (--list shows the known ones)");
    }
    const int64_t layers = c.layers ? c.layers : spec->n_layer;
    if (layers > spec->n_layer) {
        throw std::runtime_error("--layers " + std::to_string(layers) + ": " + spec->name + " has " + std::to_string(spec->n_layer));
    }
    const quant_choice q = resolve_quant_type(c.type, *spec);   // throws on an unknown or inapplicable type

    const std::string cache = (c.cache_dir.empty() ? default_cache_dir() : c.cache_dir) + "/models";
    make_dirs(cache);
    const std::string path = c.out.empty() ? cache + "/" + cache_name(c, layers, q.name) : c.out;
    if (!c.force && file_exists(path)) {
        printf("%s\n", path.c_str());
        return 0;
    }

    generate_options g;
    g.spec = spec;
    g.n_layer = layers;
    g.seed = c.seed;
    g.entropy = c.entropy;
    const std::string src = c.llama_src.empty() ? env_or("LLAMA_SRC", XDNA_LLAMA_SRC_DEFAULT) : c.llama_src;
    g.vocab_path = src + "/models/ggml-vocab-" + spec->vocab + ".gguf";
    if (!spec->chat_template.empty()) {
        g.template_path = src + "/models/templates/" + spec->chat_template + ".jinja";
    }
    if (!file_exists(g.vocab_path)) {
        throw std::runtime_error(g.vocab_path + ": tokenizer not found (set --llama-src or LLAMA_SRC to the llama.cpp source tree)");
    }

    if (q.direct) {
        g.matrix_type = q.direct_type;
        const std::string tmp = tmp_name(path);
        try {
            write_model(g, tmp);
        } catch (...) {
            unlink(tmp.c_str());
            throw;
        }
        publish(tmp, path);
    } else {
        // quantize from the F16 base, which stays cached (it is also the F16 model of the same key)
        const std::string base = cache + "/" + cache_name(c, layers, "F16");
        const bool had_base = file_exists(base);
        if (!had_base || c.force) {
            g.matrix_type = GGML_TYPE_F16;
            const std::string tmp = tmp_name(base);
            try {
                write_model(g, tmp);
            } catch (...) {
                unlink(tmp.c_str());
                throw;
            }
            publish(tmp, base);
        }
        const std::string bin = c.llama_bin.empty() ? env_or("LLAMA_BIN", XDNA_LLAMA_BIN_DEFAULT) : c.llama_bin;
        const std::string tmp = tmp_name(path);
        run_quantize(bin + "/llama-quantize", base, tmp, q, c.verbose);
        publish(tmp, path);
        if (c.drop_base && !had_base) {
            unlink(base.c_str());
        }
    }
    printf("%s\n", path.c_str());
    return 0;
}

} // namespace

int main(int argc, char ** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception & e) {
        fprintf(stderr, "xdna-gen-model: %s\n", e.what());
        return 1;
    }
}
