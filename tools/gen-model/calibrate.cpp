#include "calibrate.h"
#include "random.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace xdna {

// Entropy of softmax(sigma * x), in nats: H = log Z - sum(p * z), with z shifted by its max for range.
static double entropy_of(const float * x, int64_t n, double sigma) {
    float xmax = x[0];
    for (int64_t i = 1; i < n; ++i) {
        xmax = std::max(xmax, x[i]);
    }
    // float exponentials in blocks, summed in double: fast enough for 10^7 terms per step
    const float s = float(sigma);
    double sum_e = 0.0, sum_ez = 0.0;
    for (int64_t i0 = 0; i0 < n; i0 += 1024) {
        float be = 0.0f, bez = 0.0f;
        for (int64_t i = i0; i < std::min(n, i0 + 1024); ++i) {
            const float z = s * (x[i] - xmax);
            const float e = std::exp(z);
            be  += e;
            bez += e * z;
        }
        sum_e += be;
        sum_ez += bez;
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
    // the answer depends only on the arguments: remember it for the rest of the process
    static std::mutex mutex;
    static std::map<std::tuple<int64_t, double, uint64_t>, double> memo;
    const auto key = std::make_tuple(n_vocab, target_nats, seed);
    {
        std::lock_guard<std::mutex> lock(mutex);
        if (auto it = memo.find(key); it != memo.end()) {
            return it->second;
        }
    }

    // The same draws for every sigma, so the estimate falls monotonically in sigma (from log(n_vocab) at 0). The
    // entropy of a single draw varies by about a nat near the target, hence many draws.
    const int n_samples = 128;
    const std::vector<float> x = draw(n_vocab, n_samples, seed);
    auto mean_h = [&](double sigma) {
        double sum_h = 0.0;
        for (int s = 0; s < n_samples; ++s) {
            sum_h += entropy_of(x.data() + size_t(s) * n_vocab, n_vocab, sigma);
        }
        return sum_h / n_samples;
    };
    double lo = 0.0, hi = 32.0;
    for (int it = 0; it < 20; ++it) {
        const double mid = 0.5 * (lo + hi);
        (mean_h(mid) > target_nats ? lo : hi) = mid;
    }
    std::lock_guard<std::mutex> lock(mutex);
    return memo[key] = 0.5 * (lo + hi);
}

} // namespace xdna
