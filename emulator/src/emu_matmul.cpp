// The emulated NPU's arithmetic (see emu_matmul.h). Blocked for the cache and written with vector types so the
// compiler emits SIMD code; on x86-64 the inner kernel is built for AVX-512, AVX2 and baseline and picked at run
// time. Every product of two bf16 (or int8) values is exact in fp64, so the fp64 sums below give exactly the
// model's result whatever order or fused multiply-add the compiler uses inside a group.
#include "emu_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__) && defined(__ELF__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
#define XDNA_EMU_WIDE __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#define XDNA_EMU_NARROW XDNA_EMU_WIDE
#elif defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
// Windows: target_clones picks through an ELF ifunc, which PE has not. The wide kernel, which machine_tile() takes
// only where AVX-512 is, is built for it; the narrow one stays baseline.
#define XDNA_EMU_WIDE __attribute__((target("avx512f")))
#define XDNA_EMU_NARROW
#else
#define XDNA_EMU_WIDE
#define XDNA_EMU_NARROW
#endif

namespace xdna_emu {

uint16_t f32_to_bf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
        return static_cast<uint16_t>((u >> 16) | 0x40u);   // quiet NaN
    }
    u += 0x7FFFu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
}

float bf16_to_f32(uint16_t h) {
    uint32_t u = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

namespace {

constexpr uint32_t MR = 4;          // rows of C per register tile
constexpr uint32_t NR_MAX = 32;     // the widest panel (columns of C) of the tile kernels below
constexpr uint32_t GROUP = 8;       // the AIE2 MAC's reduction width: one rounding per 8 products

typedef double v8d __attribute__((vector_size(64)));
typedef float v8f __attribute__((vector_size(32)));
typedef double v4d __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));

// n elements of src starting at element `first`, converted to fp64 and written every `stride` doubles.
template <typename T, typename F> void convert_loop(const void* src, size_t first, size_t n, double* dst, size_t stride, F f) {
    const T* s = static_cast<const T*>(src) + first;
    for (size_t i = 0; i < n; ++i) dst[i * stride] = f(s[i]);
}

void convert_strided(dtype t, const void* src, size_t first, size_t n, double* dst, size_t stride) {
    switch (t) {
        case dtype::bf16: convert_loop<uint16_t>(src, first, n, dst, stride, [](uint16_t h) { return double(bf16_to_f32(h)); }); break;
        case dtype::i8:   convert_loop<int8_t>(src, first, n, dst, stride, [](int8_t x) { return double(x); }); break;
        case dtype::f32:  convert_loop<float>(src, first, n, dst, stride, [](float x) { return double(x); }); break;
        case dtype::i32:  convert_loop<int32_t>(src, first, n, dst, stride, [](int32_t x) { return double(x); }); break;
    }
}

// One MR x NR tile of C over the whole reduction. a: MR rows of k doubles (stride lda); bp: k rows of NR doubles.
// group == 0: no intermediate rounding (integer sums, exact in fp64 for any k below 2^37).
// The accumulators are small arrays, fully unrolled, so that they stay in vector registers (the inner loop has no
// spill: checked in the disassembly). Two shapes, one per register file, give the same results (each element's sums
// in the same order): 4 x 32 (16 accumulators of 8 doubles) for AVX-512's 32 registers; 4 x 12 (12 of 4) for AVX2's
// 16, where the wider tile spilled (a 512 x 1,024 x 512 block on one core of the 2-CPU development VM, an AMD EPYC
// without AVX-512: 1.5 GFLOP/s with the wide tile, 17-22 with the narrow one).
typedef void (*tile_fn)(const double* a, size_t lda, const double* bp, uint32_t k, uint32_t group, double* out);

// The body of both tiles: MR rows by NV vectors of V, rounded through VF (the same vector of floats). Loads and stores
// go through memcpy (unaligned; a vector typedef's alignment attribute does not survive as a template argument).
template <typename V, typename VF, int NV>
inline __attribute__((always_inline)) void tile_body(const double* a, size_t lda, const double* bp, uint32_t k,
                                                     uint32_t group, double* out) {
    constexpr uint32_t W = sizeof(V) / sizeof(double), NR = W * NV;
    V c[MR][NV] = {};
    const uint32_t step = group ? group : k;
    for (uint32_t k0 = 0; k0 < k; k0 += step) {
        const uint32_t k1 = std::min(k, k0 + step);
        for (uint32_t kk = k0; kk < k1; ++kk) {
            const double* b = bp + static_cast<size_t>(kk) * NR;
            V bv[NV];
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) std::memcpy(&bv[v], b + v * W, sizeof(V));
#pragma GCC unroll 4
            for (uint32_t r = 0; r < MR; ++r) {
                const double x = a[r * lda + kk];
#pragma GCC unroll 8
                for (int v = 0; v < NV; ++v) c[r][v] += x * bv[v];
            }
        }
        if (group) {
#pragma GCC unroll 4
            for (uint32_t r = 0; r < MR; ++r) {
#pragma GCC unroll 8
                for (int v = 0; v < NV; ++v) c[r][v] = __builtin_convertvector(__builtin_convertvector(c[r][v], VF), V);
            }
        }
    }
#pragma GCC unroll 4
    for (uint32_t r = 0; r < MR; ++r) {
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) std::memcpy(out + (r * NV + v) * W, &c[r][v], sizeof(V));
    }
}

XDNA_EMU_WIDE
void tile_kernel_4x32(const double* a, size_t lda, const double* bp, uint32_t k, uint32_t group, double* out) {
    tile_body<v8d, v8f, 4>(a, lda, bp, k, group, out);
}

XDNA_EMU_NARROW
void tile_kernel_4x12(const double* a, size_t lda, const double* bp, uint32_t k, uint32_t group, double* out) {
    tile_body<v4d, v4f, 3>(a, lda, bp, k, group, out);
}

struct tile_kernel {
    uint32_t nr;   // columns of C per panel
    tile_fn  fn;
};

// The tile for this machine's registers: the wide one only where AVX-512 gives it 32 of them
const tile_kernel& machine_tile() {
    static const tile_kernel wide{ 32, tile_kernel_4x32 }, narrow{ 12, tile_kernel_4x12 };
#if defined(__x86_64__) && defined(__GNUC__)
    static const bool avx512 = __builtin_cpu_supports("avx512f");
    return avx512 ? wide : narrow;
#else
    return narrow;
#endif
}

void store_tile(const gemm_args& g, const double* tile, uint32_t nr, uint32_t i0, uint32_t j0) {
    const uint32_t rows = std::min(MR, g.m - i0);
    const uint32_t cols = std::min(nr, g.n - j0);
    for (uint32_t r = 0; r < rows; ++r) {
        const double* src = tile + r * nr;
        const size_t base = static_cast<size_t>(i0 + r) * g.n + j0;
        if (g.c_type == dtype::f32) {
            float* dst = static_cast<float*>(g.c) + base;
            for (uint32_t j = 0; j < cols; ++j) dst[j] = static_cast<float>(src[j]);
        } else {
            int32_t* dst = static_cast<int32_t*>(g.c) + base;
            for (uint32_t j = 0; j < cols; ++j) {
                // The int32 accumulator wraps; the fp64 sum is exact, so take it modulo 2^32.
                dst[j] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<int64_t>(src[j])));
            }
        }
    }
}

// Columns in panels of the tile's width, panels panel_first, panel_first + panel_stride, ...: pack each panel of B as
// k x nr doubles, then run every row tile on it.
void gemm_columns(const gemm_args& g, const tile_kernel& t, const double* a, size_t lda, uint32_t m_padded,
                  uint32_t panel_first, uint32_t panel_stride) {
    const uint32_t group = g.c_type == dtype::f32 ? GROUP : 0;
    const uint32_t nr = t.nr;
    std::vector<double> bp(static_cast<size_t>(g.k) * nr);
    double tile[MR * NR_MAX];
    const uint32_t panels = (g.n + nr - 1) / nr;
    for (uint32_t p = panel_first; p < panels; p += panel_stride) {
        const uint32_t j0 = p * nr;
        const uint32_t cols = std::min(nr, g.n - j0);
        // Transposed into k rows of nr, zero columns past n; one pass over each weight row.
        if (cols < nr) std::fill(bp.begin(), bp.end(), 0.0);
        for (uint32_t j = 0; j < cols; ++j) {
            convert_strided(g.b_type, g.b, static_cast<size_t>(j0 + j) * g.k, g.k, bp.data() + j, nr);
        }
        for (uint32_t i0 = 0; i0 < m_padded; i0 += MR) {
            t.fn(a + static_cast<size_t>(i0) * lda, lda, bp.data(), g.k, group, tile);
            store_tile(g, tile, nr, i0, j0);
        }
    }
}

// The silicon-like accumulation (emu_matmul.h), columns [j_begin, j_end) of C. a: m x k doubles.
void gemm_aligned_columns(const gemm_args& g, const double* a, uint32_t j_begin, uint32_t j_end) {
    std::vector<double> b(g.k);
    double t[GROUP + 1];
    for (uint32_t j = j_begin; j < j_end; ++j) {
        convert_strided(g.b_type, g.b, static_cast<size_t>(j) * g.k, g.k, b.data(), 1);
        for (uint32_t i = 0; i < g.m; ++i) {
            const double* ai = a + static_cast<size_t>(i) * g.k;
            double acc = 0.0;   // always an fp32 value
            for (uint32_t k0 = 0; k0 < g.k; k0 += GROUP) {
                const uint32_t n = std::min(GROUP, g.k - k0);
                t[0] = acc;
                double largest = std::fabs(acc);
                for (uint32_t q = 0; q < n; ++q) {
                    t[q + 1] = ai[k0 + q] * b[k0 + q];   // exact: at most 16 significant bits
                    largest = std::max(largest, std::fabs(t[q + 1]));
                }
                if (largest == 0.0 || !std::isfinite(largest)) {
                    double sum = 0.0;
                    for (uint32_t q = 0; q <= n; ++q) sum += t[q];
                    acc = static_cast<double>(static_cast<float>(sum));
                    continue;
                }
                // 23 fraction bits below the largest term's leading bit: each term rounded (to nearest even) to a
                // multiple of 2^(e - 23); the scaled values are integers below 2^25, so their sum is exact.
                const int e = std::ilogb(largest);
                const double scale = std::ldexp(1.0, 23 - e);
                double sum = 0.0;
                for (uint32_t q = 0; q <= n; ++q) sum += std::nearbyint(t[q] * scale);
                acc = static_cast<double>(static_cast<float>(std::ldexp(sum, e - 23)));
            }
            static_cast<float*>(g.c)[static_cast<size_t>(i) * g.n + j] = static_cast<float>(acc);
        }
    }
}

void gemm_aligned(const gemm_args& g) {
    std::vector<double> a(static_cast<size_t>(g.m) * g.k);
    convert_strided(g.a_type, g.a, 0, a.size(), a.data(), 1);
    const uint32_t nthreads = static_cast<uint32_t>(std::max(1, std::min<int>(g.threads, static_cast<int>(g.n))));
    std::vector<std::thread> pool;
    for (uint32_t t = 1; t < nthreads; ++t) {
        pool.emplace_back(gemm_aligned_columns, std::cref(g), a.data(), g.n * t / nthreads, g.n * (t + 1) / nthreads);
    }
    gemm_aligned_columns(g, a.data(), 0, g.n / nthreads);
    for (auto& th : pool) th.join();
}

} // namespace

void gemm_compute(const gemm_args& g) {
    if (g.m == 0 || g.n == 0) {
        return;
    }
    if (g.aligned && g.c_type == dtype::f32) {
        gemm_aligned(g);
        return;
    }
    // A once as fp64, padded to whole row tiles with zero rows.
    const uint32_t m_padded = (g.m + MR - 1) / MR * MR;
    const size_t lda = g.k;
    std::vector<double> a(static_cast<size_t>(m_padded) * lda, 0.0);
    convert_strided(g.a_type, g.a, 0, static_cast<size_t>(g.m) * g.k, a.data(), 1);
    const tile_kernel& tk = machine_tile();
    const uint32_t panels = (g.n + tk.nr - 1) / tk.nr;
    const uint32_t nthreads = static_cast<uint32_t>(std::max(1, std::min<int>(g.threads, static_cast<int>(panels))));
    if (nthreads == 1) {
        gemm_columns(g, tk, a.data(), lda, m_padded, 0, 1);
        return;
    }
    std::vector<std::thread> pool;
    for (uint32_t t = 1; t < nthreads; ++t) {
        pool.emplace_back(gemm_columns, std::cref(g), std::cref(tk), a.data(), lda, m_padded, t, nthreads);
    }
    gemm_columns(g, tk, a.data(), lda, m_padded, 0, nthreads);
    for (auto& th : pool) th.join();
}

} // namespace xdna_emu
