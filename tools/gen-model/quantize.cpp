#include "quantize.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

namespace xdna {

// llama-quantize types the generator offers (a subset of the pinned tool's list that needs no importance matrix)
static const char * const quantize_types[] = {
    "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K_M", "Q4_K_S", "Q4_K_M", "Q5_K_M", "Q6_K",
    "IQ4_NL", "IQ4_XS", "MXFP4",
};

std::string quantize_type_names() {
    std::string s = "F32 F16 BF16";
    for (const char * t : quantize_types) {
        s += std::string(" ") + t;
    }
    return s;
}

quant_choice resolve_quant_type(const std::string & type, const model_spec & spec) {
    std::string t = type;
    std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return (char) toupper(c); });
    quant_choice q;
    q.name = t;
    if (t == "F32" || t == "F16" || t == "BF16") {
        q.direct = true;
        q.direct_type = t == "F32" ? GGML_TYPE_F32 : t == "F16" ? GGML_TYPE_F16 : GGML_TYPE_BF16;
        return q;
    }
    if (std::find_if(std::begin(quantize_types), std::end(quantize_types),
                     [&](const char * x) { return t == x; }) == std::end(quantize_types)) {
        throw std::runtime_error("unknown weight type '" + type + "' (one of: " + quantize_type_names() + ")");
    }
    q.ftype = t;
    if (t == "MXFP4") {
        // llama-quantize's MXFP4_MOE puts the experts in MXFP4 and the other matrices in Q8_0, as gpt-oss ships;
        // a dense model has no experts, so its attention and feed-forward matrices are sent to MXFP4 explicitly
        q.ftype = "MXFP4_MOE";
        if (spec.n_expert == 0) {
            for (const char * n : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"}) {
                q.extra_args.push_back("--tensor-type");
                q.extra_args.push_back(std::string(n) + "=mxfp4");
            }
        }
    }
    return q;
}

static std::string tail_of(const std::string & path, size_t max_lines) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) {
        lines.push_back(l);
    }
    std::ostringstream o;
    for (size_t i = lines.size() > max_lines ? lines.size() - max_lines : 0; i < lines.size(); ++i) {
        o << "\n  " << lines[i];
    }
    return o.str();
}

void run_quantize(const std::string & exe, const std::string & base, const std::string & out, const quant_choice & q,
                  bool verbose) {
    if (access(exe.c_str(), X_OK) != 0) {
        throw std::runtime_error(exe + ": not found or not executable (set --llama-bin or LLAMA_BIN to llama.cpp's bin directory)");
    }
    std::vector<std::string> args = {exe};
    args.insert(args.end(), q.extra_args.begin(), q.extra_args.end());
    args.insert(args.end(), {base, out, q.ftype, "2"});
    std::vector<char *> argv;
    for (auto & a : args) {
        argv.push_back(const_cast<char *>(a.c_str()));
    }
    argv.push_back(nullptr);

    const std::string log = out + ".log";
    fflush(stdout);
    fflush(stderr);
    const pid_t pid = fork();
    if (pid < 0) {
        throw std::runtime_error("fork failed: " + std::string(strerror(errno)));
    }
    if (pid == 0) {
        const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            if (!verbose) {
                dup2(fd, 2);
            }
            close(fd);
        }
        execv(exe.c_str(), argv.data());
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        const std::string t = tail_of(log, 8);
        unlink(log.c_str());
        unlink(out.c_str());
        throw std::runtime_error("llama-quantize to " + q.name + " failed (status " + std::to_string(status) + "):" + t);
    }
    unlink(log.c_str());
}

} // namespace xdna
