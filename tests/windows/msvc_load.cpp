// The plugin DLL inside an MSVC-built ggml (npm @node-llama-cpp/win-x64: ggml-base.dll, ggml.dll and the CPU
// backends, built with MSVC): loads that ggml from a folder, then the CPU backend and the plugin through its registry,
// and computes one MUL_MAT on both. The reference is that ggml's own CPU result: the plugin's CPU worker runs the same
// CPU backend, so its rows must be byte-identical; the emulated NPU's rows (bf16) must be within test-backend-ops'
// bound (NMSE 5e-4) and not byte-identical (they are the NPU's, not a fallback to the CPU).
//
// Built with MinGW, run under Wine. Nothing of ggml is linked: every function comes from the loaded DLLs, so the
// program talks to the MSVC build only. The NPU share is the caller's (GGML_XDNA_NPU_SHARE, a fixed one).
// usage: xdna-msvc-load MSVC_GGML_DIR PLUGIN_DLL
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"

#include <windows.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

HMODULE base_dll, reg_dll;

// A function of the MSVC ggml: from ggml-base.dll (tensors, graphs, backends) or ggml.dll (the registry)
template <typename F> F fn(const char * name) {
    FARPROC p = GetProcAddress(base_dll, name);
    if (!p) p = GetProcAddress(reg_dll, name);
    if (!p) {
        std::fprintf(stderr, "FAIL: %s is not exported by the MSVC ggml\n", name);
        std::exit(1);
    }
    return reinterpret_cast<F>(reinterpret_cast<void *>(p));
}
#define BASE(name) fn<decltype(&name)>(#name)
#define REG(name) fn<decltype(&name)>(#name)

HMODULE load(const std::string & path) {
    HMODULE m = LoadLibraryExA(path.c_str(), nullptr, LOAD_WITH_ALTERED_SEARCH_PATH);
    if (!m) {
        std::fprintf(stderr, "FAIL: cannot load %s (error %lu)\n", path.c_str(), GetLastError());
        std::exit(1);
    }
    return m;
}

constexpr int K = 512, ROWS = 512, TOKENS = 64;

// rows x tokens of MUL_MAT(W f16 [K x ROWS], X f32 [K x TOKENS]) computed on `backend`
std::vector<float> mul_mat_on(ggml_backend_t backend, const std::vector<ggml_fp16_t> & w, const std::vector<float> & x) {
    ggml_init_params ip = { 3 * BASE(ggml_tensor_overhead)() + BASE(ggml_graph_overhead)(), nullptr, true };
    ggml_context * ctx = BASE(ggml_init)(ip);
    ggml_tensor * tw = BASE(ggml_new_tensor_2d)(ctx, GGML_TYPE_F16, K, ROWS);
    ggml_tensor * tx = BASE(ggml_new_tensor_2d)(ctx, GGML_TYPE_F32, K, TOKENS);
    ggml_tensor * out = BASE(ggml_mul_mat)(ctx, tw, tx);
    ggml_cgraph * gf = BASE(ggml_new_graph)(ctx);
    BASE(ggml_build_forward_expand)(gf, out);
    ggml_backend_buffer_t buf = BASE(ggml_backend_alloc_ctx_tensors)(ctx, backend);
    if (!buf) {
        std::fprintf(stderr, "FAIL: no buffer for the multiply on %s\n", BASE(ggml_backend_name)(backend));
        std::exit(1);
    }
    BASE(ggml_backend_tensor_set)(tw, w.data(), 0, w.size() * sizeof(w[0]));
    BASE(ggml_backend_tensor_set)(tx, x.data(), 0, x.size() * sizeof(x[0]));
    if (BASE(ggml_backend_graph_compute)(backend, gf) != GGML_STATUS_SUCCESS) {
        std::fprintf(stderr, "FAIL: the multiply failed on %s\n", BASE(ggml_backend_name)(backend));
        std::exit(1);
    }
    std::vector<float> y((size_t) ROWS * TOKENS);
    BASE(ggml_backend_tensor_get)(out, y.data(), 0, y.size() * sizeof(float));
    BASE(ggml_backend_buffer_free)(buf);
    BASE(ggml_free)(ctx);
    return y;
}

}  // namespace

int main(int argc, char ** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: xdna-msvc-load MSVC_GGML_DIR PLUGIN_DLL\n");
        return 2;
    }
    const std::string dir = argv[1];
    // the DLLs the plugin imports by name (ggml-base.dll, ggml.dll) are found loaded already
    base_dll = load(dir + "\\ggml-base.dll");
    reg_dll = load(dir + "\\ggml.dll");
    std::printf("MSVC ggml %s (commit %s) from %s\n", BASE(ggml_version)(), BASE(ggml_commit)(), dir.c_str());

    REG(ggml_backend_load_all_from_path)(dir.c_str());   // the best of its CPU backends for this CPU
    ggml_backend_dev_t cpu_dev = REG(ggml_backend_dev_by_type)(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (!cpu_dev) {
        std::fprintf(stderr, "FAIL: the MSVC ggml registered no CPU backend\n");
        return 1;
    }
    ggml_backend_reg_t xdna = REG(ggml_backend_load)(argv[2]);
    if (!xdna) {
        std::fprintf(stderr, "FAIL: the MSVC ggml did not load the plugin %s\n", argv[2]);
        return 1;
    }
    if (REG(ggml_backend_reg_dev_count)(xdna) != 1) {
        std::fprintf(stderr, "FAIL: the plugin offers %zu devices, expected 1\n", REG(ggml_backend_reg_dev_count)(xdna));
        return 1;
    }
    ggml_backend_dev_t xdna_dev = REG(ggml_backend_reg_dev_get)(xdna, 0);
    std::printf("loaded %s: device %s (%s)\n", REG(ggml_backend_reg_name)(xdna), REG(ggml_backend_dev_name)(xdna_dev),
                REG(ggml_backend_dev_description)(xdna_dev));

    std::vector<ggml_fp16_t> w((size_t) K * ROWS);
    std::vector<float> x((size_t) K * TOKENS);
    uint32_t s = 12345;
    auto next = [&s] { s = s * 1664525u + 1013904223u; return (float) ((s >> 8) & 0xffff) / 32768.0f - 1.0f; };
    for (auto & v : w) v = BASE(ggml_fp32_to_fp16)(next());
    for (auto & v : x) v = next();

    ggml_backend_t cpu = REG(ggml_backend_dev_init)(cpu_dev, nullptr);
    ggml_backend_t plugin = REG(ggml_backend_dev_init)(xdna_dev, nullptr);
    if (!cpu || !plugin) {
        std::fprintf(stderr, "FAIL: cannot start the %s backend\n", cpu ? "plugin's" : "CPU");
        return 1;
    }
    const std::vector<float> ref = mul_mat_on(cpu, w, x);
    const std::vector<float> got = mul_mat_on(plugin, w, x);

    // rows of the result are the weight's rows: y[token * ROWS + row]
    int same_rows = 0;
    double err = 0, norm = 0;
    for (int r = 0; r < ROWS; ++r) {
        bool same = true;
        for (int t = 0; t < TOKENS; ++t) {
            const float a = ref[(size_t) t * ROWS + r], b = got[(size_t) t * ROWS + r];
            same = same && std::memcmp(&a, &b, sizeof(float)) == 0;
            err += (double) (a - b) * (a - b);
            norm += (double) a * a;
        }
        same_rows += same;
    }
    const double nmse = err / norm;
    std::printf("MUL_MAT f16 %dx%d by %d tokens: %d of %d rows byte-identical to the MSVC CPU backend's, NMSE %.3g\n",
                K, ROWS, TOKENS, same_rows, ROWS, nmse);
    REG(ggml_backend_free)(plugin);
    REG(ggml_backend_free)(cpu);
    if (!std::isfinite(nmse) || nmse > 5e-4) {
        std::printf("FAIL: NMSE above 5e-4\n");
        return 1;
    }
    if (same_rows == ROWS) {
        std::printf("FAIL: every row equals the CPU's: the NPU computed none\n");
        return 1;
    }
    if (same_rows == 0) {
        std::printf("FAIL: no row equals the CPU's: the plugin's CPU worker computed none\n");
        return 1;
    }
    std::printf("1 passed, 0 failed\n");
    return 0;
}
