// Times the GPU worker on the multiplies of a model layer, next to the CPU worker: the one-time weight copy, a whole
// multiply on the GPU (with result rows written strided or read contiguously and scattered), and on the CPU. Prints a
// table; speed claims about the GPU worker come from here and from llama-bench.
//
// usage: xdna-gpu-worker-bench [--gpu SETTING] [--type T] [--tokens N] [--reps N] [--threads N] [--shapes KxM,...]
//   --gpu      a GGML_XDNA_GPU value (CUDA0, rpc:HOST:PORT, ...); default: a ggml-rpc-server started here
//   --shapes   default: Llama-3.2-3B's (3072x3072 q/o, 3072x1024 k/v, 3072x8192 gate/up, 8192x3072 down)
#include "gpu_fixture.h"
#include "util/clock.h"
#include "workers/cpu/cpu_worker.h"
#include "workers/gpu/gpu_worker.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

using namespace xdna_test;

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

// Median wall time of `reps` whole multiplies (after one warm-up run), in ms.
double time_worker(xdna::worker & w, mm_tensors & mm, int reps, bool * ok) {
    std::vector<double> t;
    for (int i = 0; i <= reps; ++i) {
        const double t0 = xdna::now_seconds();
        const xdna::multiply desc = xdna::describe_multiply(mm.node);
        w.begin(desc, { 0, mm.rows() });
        const xdna::work_record r = w.end();
        if (!r.ok()) {
            fprintf(stderr, "%s failed: %s\n", w.name(), r.why().c_str());
            *ok = false;
            return 0.0;
        }
        if (i > 0) t.push_back(xdna::now_seconds() - t0);
    }
    return median(t) * 1e3;
}

}  // namespace

int main(int argc, char ** argv) {
    std::string type_name = "Q8_0", shapes = "3072x3072,3072x1024,3072x8192,8192x3072";
    int tokens = 512, reps = 10, threads = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) { fprintf(stderr, "%s needs a value\n", a.c_str()); exit(2); }
            return argv[++i];
        };
        if (a == "--gpu") setenv("XDNA_TEST_GPU", next().c_str(), 1);
        else if (a == "--type") type_name = next();
        else if (a == "--tokens") tokens = std::stoi(next());
        else if (a == "--reps") reps = std::stoi(next());
        else if (a == "--threads") threads = std::stoi(next());
        else if (a == "--shapes") shapes = next();
        else { fprintf(stderr, "unknown argument %s (see the head of %s)\n", a.c_str(), __FILE__); return 2; }
    }
    ggml_type type = GGML_TYPE_COUNT;
    for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
        const char * n = ggml_type_name((ggml_type) t);
        if (n && strcasecmp(n, type_name.c_str()) == 0) type = (ggml_type) t;
    }
    if (type == GGML_TYPE_COUNT) { fprintf(stderr, "unknown type %s\n", type_name.c_str()); return 2; }
    if (!env().gpu_dev) { fprintf(stderr, "no GPU: %s\n", env().error.c_str()); return 1; }
    if (threads <= 0) threads = (int) std::max(1u, std::thread::hardware_concurrency());

    printf("GPU worker on %s (%s), %s; CPU worker %d threads; %s, %d tokens, median of %d\n",
           ggml_backend_dev_name(env().gpu_dev), ggml_backend_dev_description(env().gpu_dev), env().gpu_setting.c_str(),
           threads, type_name.c_str(), tokens, reps);
    printf("%-11s %9s %11s %11s %11s %9s %9s %10s\n", "K x M", "GFLOP", "upload ms", "gpu ms", "gpu-scat ms", "cpu ms",
           "gpu/cpu", "act GB/s");

    std::unique_ptr<xdna::cpu_worker> cpu_w = xdna::cpu_worker::create(env().cpu_dev);
    if (!cpu_w) return 1;
    xdna::cpu_worker & cpu = *cpu_w;
    cpu.set_n_threads(threads);
    xdna::gpu_worker_options strided, scatter;
    strided.out = xdna::gpu_worker_options::read_mode::strided;
    scatter.out = xdna::gpu_worker_options::read_mode::scatter;
    bool ok = true;
    std::stringstream ss(shapes);
    for (std::string s; std::getline(ss, s, ',');) {
        int64_t k = 0, m = 0;
        if (sscanf(s.c_str(), "%ldx%ld", &k, &m) != 2) { fprintf(stderr, "bad shape %s\n", s.c_str()); return 2; }
        mm_tensors mm({ type, k, m, tokens });
        xdna::gpu_worker g1(env().gpu_dev, strided), g2(env().gpu_dev, scatter);
        const double t0 = xdna::now_seconds();
        g1.begin(xdna::describe_multiply(mm.node), { 0, m });
        g1.end();
        const double first_ms = (xdna::now_seconds() - t0) * 1e3;
        const double gpu_ms = time_worker(g1, mm, reps, &ok);
        const double scat_ms = time_worker(g2, mm, reps, &ok);
        const double cpu_ms = time_worker(cpu, mm, std::max(1, reps / 3), &ok);
        const double act_gb = (double) (ggml_nbytes(mm.node->src[1]) + ggml_nbytes(mm.node)) * 1e-9;
        printf("%-11s %9.2f %11.2f %11.3f %11.3f %9.2f %9.3f %10.1f\n", s.c_str(), 2.0 * k * m * tokens * 1e-9,
               first_ms - gpu_ms, gpu_ms, scat_ms, cpu_ms, gpu_ms / cpu_ms, act_gb / (std::min(gpu_ms, scat_ms) * 1e-3));
    }
    printf("upload: first run minus a steady one (the weight's copy to the device); act GB/s: activations in plus "
           "result out per second of the faster GPU variant\n");
    return ok ? 0 : 1;
}
