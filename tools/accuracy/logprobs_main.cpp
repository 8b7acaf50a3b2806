// xdna-logprobs: statistics of llama-perplexity log-probability files (--kl-divergence-base output).
//   stats FILE          next-token entropy and top-token probability over the file's positions
//   compare BASE TEST   KL(base || test), its 99th percentile, top-token agreement, max |delta log p|
// Both print "key: value" lines that scripts parse.
#include "logprob_file.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

using namespace xdna;

namespace {

struct moments {
    double sum = 0, sum2 = 0, lo = 1e300, hi = -1e300;
    int64_t n = 0;
    void add(double x) { sum += x; sum2 += x * x; lo = std::min(lo, x); hi = std::max(hi, x); ++n; }
    double mean() const { return n ? sum / n : 0.0; }
    double sd() const { return n > 1 ? std::sqrt(std::max(0.0, (sum2 - sum * sum / n) / (n - 1))) : 0.0; }
};

int cmd_stats(const std::string & path) {
    logprob_file f(path);
    std::vector<float> lp;
    std::vector<uint8_t> clipped;
    moments h, top;
    while (f.next(lp, &clipped)) {
        double ent = 0.0;
        float lmax = -1e30f;
        for (size_t i = 0; i < lp.size(); ++i) {
            lmax = std::max(lmax, lp[i]);
            if (!clipped[i]) {
                ent -= std::exp(double(lp[i])) * lp[i];
            }
        }
        h.add(ent);
        top.add(std::exp(double(lmax)));
    }
    printf("positions: %lld\n", (long long) h.n);
    printf("n_vocab: %d\n", f.n_vocab());
    printf("entropy_mean: %.4f\n", h.mean());
    printf("entropy_sd: %.4f\n", h.sd());
    printf("entropy_min: %.4f\n", h.lo);
    printf("entropy_max: %.4f\n", h.hi);
    printf("top_p_mean: %.4f\n", top.mean());
    printf("top_p_sd: %.4f\n", top.sd());
    printf("top_p_min: %.4f\n", top.lo);
    printf("top_p_max: %.4f\n", top.hi);
    return 0;
}

int cmd_compare(const std::string & base_path, const std::string & test_path) {
    logprob_file b(base_path), t(test_path);
    if (b.n_ctx() != t.n_ctx() || b.n_vocab() != t.n_vocab() || b.n_chunk() != t.n_chunk()) {
        throw std::runtime_error("the files differ in n_ctx, n_vocab or n_chunk: not the same run over the same text");
    }
    if (b.tokens() != t.tokens()) {
        throw std::runtime_error("the files were computed over different tokens");
    }
    std::vector<float> lb, lt;
    std::vector<uint8_t> cb, ct;
    std::vector<double> kl;
    int64_t same_top = 0;
    double max_dlp = 0.0, max_dlp_top = 0.0;
    while (b.next(lb, &cb) && t.next(lt, &ct)) {
        double k = 0.0;
        size_t ib = 0, it = 0;
        for (size_t i = 0; i < lb.size(); ++i) {
            if (lb[i] > lb[ib]) ib = i;
            if (lt[i] > lt[it]) it = i;
            if (!cb[i]) {
                k += std::exp(double(lb[i])) * (double(lb[i]) - lt[i]);
            }
            if (!cb[i] && !ct[i]) {
                max_dlp = std::max(max_dlp, std::fabs(double(lb[i]) - lt[i]));
            }
        }
        max_dlp_top = std::max(max_dlp_top, std::fabs(double(lb[ib]) - lt[ib]));
        same_top += ib == it;
        kl.push_back(std::max(0.0, k));
    }
    if (kl.empty()) {
        throw std::runtime_error("no positions to compare");
    }
    std::vector<double> sorted = kl;
    std::sort(sorted.begin(), sorted.end());
    auto pct = [&](double f) {
        const double p = f * (sorted.size() - 1);
        const size_t i = size_t(p);
        const double w = p - i;
        return (1 - w) * sorted[i] + w * sorted[std::min(i + 1, sorted.size() - 1)];
    };
    double sum = 0.0;
    for (double x : kl) sum += x;
    printf("positions: %zu\n", kl.size());
    printf("kld_mean: %.6g\n", sum / kl.size());
    printf("kld_p99: %.6g\n", pct(0.99));
    printf("kld_max: %.6g\n", sorted.back());
    printf("same_top_pct: %.3f\n", 100.0 * same_top / kl.size());
    printf("max_abs_dlogp: %.6g\n", max_dlp);
    printf("max_abs_dlogp_top: %.6g\n", max_dlp_top);
    return 0;
}

void usage() {
    fprintf(stderr, "usage: xdna-logprobs stats FILE\n       xdna-logprobs compare BASE TEST\n"
                    "FILE, BASE, TEST: written by llama-perplexity --kl-divergence-base\n");
}

} // namespace

int main(int argc, char ** argv) {
    try {
        if (argc == 3 && !strcmp(argv[1], "stats")) {
            return cmd_stats(argv[2]);
        }
        if (argc == 4 && !strcmp(argv[1], "compare")) {
            return cmd_compare(argv[2], argv[3]);
        }
        usage();
        return 2;
    } catch (const std::exception & e) {
        fprintf(stderr, "xdna-logprobs: %s\n", e.what());
        return 1;
    }
}
