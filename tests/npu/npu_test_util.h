// Helpers shared by the NPU runtime and emulator tests: the build's emulator kernel set, environment settings
// that undo themselves, random blocks and their fp64 reference.
#pragma once

#include "npu_runtime.h"

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace xdna_test {

inline std::string kernels_dir() { return XDNA_TEST_KERNELS_DIR; }
inline std::string manifest_path() { return kernels_dir() + "/manifest.json"; }

// Sets an environment variable for the lifetime of the object (the emulator reads XDNA_EMU_* when a device opens).
class scoped_env {
public:
    scoped_env(const char* name, const std::string& value) : m_name(name) {
        const char* old = std::getenv(name);
        m_had = old != nullptr;
        if (m_had) m_old = old;
        setenv(name, value.c_str(), 1);
    }
    ~scoped_env() {
        if (m_had) setenv(m_name.c_str(), m_old.c_str(), 1);
        else unsetenv(m_name.c_str());
    }
    scoped_env(const scoped_env&) = delete;
    scoped_env& operator=(const scoped_env&) = delete;

private:
    std::string m_name, m_old;
    bool m_had = false;
};

// A block's inputs as the NPU gets them, and the fp64 product of exactly those inputs.
struct block_data {
    std::vector<double> a, b;   // tokens x k and rows x k, values after rounding to the kernel's types
    std::vector<double> ref;    // tokens x rows
};

inline block_data fill_block(const xdna::npu_kernel& k, xdna::npu_buffer& a, xdna::npu_buffer& b, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
    std::uniform_int_distribution<int> i8(-128, 127);
    block_data d;
    d.a.resize(size_t(k.tokens) * k.k);
    d.b.resize(size_t(k.rows) * k.k);
    auto fill = [&](xdna::npu_dtype t, void* dst, std::vector<double>& v) {
        for (size_t i = 0; i < v.size(); ++i) {
            if (t == xdna::npu_dtype::bf16) {
                const uint16_t h = xdna::npu_f32_to_bf16(uni(rng));
                static_cast<uint16_t*>(dst)[i] = h;
                v[i] = xdna::npu_bf16_to_f32(h);
            } else {
                const int x = i8(rng);
                static_cast<int8_t*>(dst)[i] = static_cast<int8_t>(x);
                v[i] = x;
            }
        }
    };
    fill(k.a, a.data(), d.a);
    fill(k.b, b.data(), d.b);
    d.ref.assign(size_t(k.tokens) * k.rows, 0.0);
    for (int i = 0; i < k.tokens; ++i) {
        for (int j = 0; j < k.rows; ++j) {
            double s = 0;
            for (int kk = 0; kk < k.k; ++kk) s += d.a[size_t(i) * k.k + kk] * d.b[size_t(j) * k.k + kk];
            d.ref[size_t(i) * k.rows + j] = s;
        }
    }
    return d;
}

// Normalized mean squared error of the C buffer's host copy against the reference.
inline double nmse(const xdna::npu_kernel& k, const void* c, const std::vector<double>& ref) {
    double err = 0, norm = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        const double got = k.c == xdna::npu_dtype::f32 ? static_cast<const float*>(c)[i]
                                                       : static_cast<double>(static_cast<const int32_t*>(c)[i]);
        err += (got - ref[i]) * (got - ref[i]);
        norm += ref[i] * ref[i];
    }
    return norm > 0 ? err / norm : err;
}

} // namespace xdna_test
