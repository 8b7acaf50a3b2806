#include "calibrate.h"
#include "random.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace xdna {

// Entropy of softmax(sigma * x), in nats: H = log Z - sum(p * z), with z shifted by its max for range.
static double entropy_of(const float * x, int64_t n, double sigma) {
    float xmax = x[0];
    for (int64_t i = 1; i < n; ++i) {
        xmax = std::max(xmax, x[i]);
    }
    double sum_e = 0.0, sum_ez = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const double z = sigma * (double(x[i]) - xmax);
        const double e = std::exp(z);
        sum_e  += e;
        sum_ez += e * z;
    }
    return std::log(sum_e) - sum_ez / sum_e;
}

static std::vector<float> draw(int64_t n_vocab, int n_samples, uint64_t seed) {
    rng r(seed, "calibration");
    std::vector<float> x(size_t(n_vocab) * n_samples);
    for (auto & v : x) {
        v = r.gaussian();
    }
    return x;
}

double mean_entropy_of_gaussian_logits(int64_t n_vocab, double sigma, int n_samples, uint64_t seed) {
    const std::vector<float> x = draw(n_vocab, n_samples, seed);
    double sum_h = 0.0;
    for (int s = 0; s < n_samples; ++s) {
        sum_h += entropy_of(x.data() + size_t(s) * n_vocab, n_vocab, sigma);
    }
    return sum_h / n_samples;
}

double logit_sigma_for_entropy(int64_t n_vocab, double target_nats, uint64_t seed) {
    // The same draws for every sigma, so the estimate falls monotonically in sigma (from log(n_vocab) at 0).
    const int n_samples = 16;
    const std::vector<float> x = draw(n_vocab, n_samples, seed);
    auto mean_h = [&](double sigma) {
        double sum_h = 0.0;
        for (int s = 0; s < n_samples; ++s) {
            sum_h += entropy_of(x.data() + size_t(s) * n_vocab, n_vocab, sigma);
        }
        return sum_h / n_samples;
    };
    double lo = 0.0, hi = 64.0;
    for (int it = 0; it < 24; ++it) {
        const double mid = 0.5 * (lo + hi);
        (mean_h(mid) > target_nats ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
}

} // namespace xdna
