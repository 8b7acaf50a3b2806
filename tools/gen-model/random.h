// Seeded random numbers for the generated weights: a small counter-free generator (xoshiro256**, seeded through
// splitmix64) and Gaussian samples by Box-Muller. Each tensor gets its own stream derived from the model seed and the
// tensor's name, so a model cut to its first N layers holds exactly the first N layers of the full model.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

namespace xdna {

static inline uint64_t splitmix64(uint64_t & x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// FNV-1a, to mix a tensor name into the seed.
static inline uint64_t hash_name(const std::string & s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : s) {
        h = (h ^ c) * 0x100000001b3ull;
    }
    return h;
}

class rng {
public:
    explicit rng(uint64_t seed) {
        for (auto & w : s_) {
            w = splitmix64(seed);
        }
    }
    rng(uint64_t seed, const std::string & stream) : rng(seed ^ hash_name(stream)) {}

    uint64_t next() {
        const uint64_t r = rotl(s_[1] * 5, 7) * 9;
        const uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0]; s_[3] ^= s_[1]; s_[1] ^= s_[2]; s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return r;
    }
    // uniform in (0, 1]
    double uniform() { return ((next() >> 11) + 1) * (1.0 / 9007199254740992.0); }
    float gaussian() {
        if (have_spare_) {
            have_spare_ = false;
            return spare_;
        }
        const double r = std::sqrt(-2.0 * std::log(uniform()));
        const double a = 6.283185307179586 * uniform();
        spare_ = float(r * std::sin(a));
        have_spare_ = true;
        return float(r * std::cos(a));
    }
    float sign() { return (next() >> 63) ? 1.0f : -1.0f; }

private:
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    uint64_t s_[4];
    float spare_ = 0.0f;
    bool have_spare_ = false;
};

} // namespace xdna
