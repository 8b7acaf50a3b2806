#include "workers/gpu/llama_layers.h"

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

namespace xdna {

namespace {

// A layer count as llama.cpp's tools take it: a number, "auto", "all", or (llama-bench) a comma-separated list. Zero
// only when every value is a number equal to 0.
bool all_zero(const std::string & value) {
    if (value.empty()) return false;
    std::stringstream ss(value);
    for (std::string item; std::getline(ss, item, ',');) {
        char * end = nullptr;
        const long n = strtol(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || n != 0) return false;
    }
    return true;
}

bool is_ngl_flag(const std::string & a) { return a == "-ngl" || a == "--gpu-layers" || a == "--n-gpu-layers"; }
bool is_dev_flag(const std::string & a) { return a == "-dev" || a == "--device"; }

}  // namespace

llama_layers llama_layers_of(const std::vector<std::string> & args, const char * env_ngl) {
    std::string ngl, dev;
    bool ngl_given = false;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string & a = args[i];
        const size_t eq = a.find('=');
        const std::string flag = a.rfind("--", 0) == 0 && eq != std::string::npos ? a.substr(0, eq) : a;
        const bool inline_value = flag.size() != a.size();
        if (!is_ngl_flag(flag) && !is_dev_flag(flag)) continue;
        std::string value = inline_value ? a.substr(eq + 1) : (i + 1 < args.size() ? args[i + 1] : "");
        if (!inline_value) ++i;
        if (is_ngl_flag(flag)) {   // the last one given counts, as in llama.cpp's parser
            ngl = value;
            ngl_given = true;
        } else {
            dev = value;
        }
    }
    llama_layers r;
    if (dev == "none") {
        r.on_gpu = false;
        r.why = "-dev none";
        return r;
    }
    if (ngl_given) {
        r.on_gpu = !all_zero(ngl);
        r.why = "-ngl " + ngl;
        return r;
    }
    if (env_ngl && *env_ngl) {
        r.on_gpu = !all_zero(env_ngl);
        r.why = std::string("LLAMA_ARG_N_GPU_LAYERS=") + env_ngl;
        return r;
    }
    r.why = "llama.cpp's default -ngl (every layer that fits)";
    return r;
}

llama_layers llama_layers_of_this_process() {
    std::vector<std::string> args;
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (size_t at = 0; at < all.size();) {
        const size_t end = all.find('\0', at);
        args.push_back(all.substr(at, end == std::string::npos ? std::string::npos : end - at));
        if (end == std::string::npos) break;
        at = end + 1;
    }
    if (!args.empty()) args.erase(args.begin());   // the program itself
    return llama_layers_of(args, getenv("LLAMA_ARG_N_GPU_LAYERS"));
}

}  // namespace xdna
