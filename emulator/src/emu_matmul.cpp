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

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define XDNA_EMU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define XDNA_EMU_CLONES
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
typedef double v8du __attribute__((vector_size(64), aligned(8), may_alias));
typedef float v8f __attribute__((vector_size(32)));
typedef double v4d __attribute__((vector_size(32)));
typedef double v4du __attribute__((vector_size(32), aligned(8), may_alias));
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
// The accumulators are named locals so that they stay in vector registers. Two shapes, one per register file, give
// the same results (each element's sums in the same order): 4 x 32 (16 accumulators of 8 doubles) for AVX-512's 32
// registers; 4 x 12 (12 of 4) for AVX2's 16, where the wider tile spilled (1.5 GFLOP/s per core against 6.1 on the
// 2-CPU development VM, which has no AVX-512).
typedef void (*tile_fn)(const double* a, size_t lda, const double* bp, uint32_t k, uint32_t group, double* out);

XDNA_EMU_CLONES
void tile_kernel_4x32(const double* a, size_t lda, const double* bp, uint32_t k, uint32_t group, double* out) {
    v8d c00{}, c01{}, c02{}, c03{}, c10{}, c11{}, c12{}, c13{}, c20{}, c21{}, c22{}, c23{}, c30{}, c31{}, c32{}, c33{};
    const double* a0 = a;
    const double* a1 = a + lda;
    const double* a2 = a + 2 * lda;
    const double* a3 = a + 3 * lda;
    const uint32_t step = group ? group : k;
    for (uint32_t k0 = 0; k0 < k; k0 += step) {
        const uint32_t k1 = std::min(k, k0 + step);
        for (uint32_t kk = k0; kk < k1; ++kk) {
            const v8du* b = reinterpret_cast<const v8du*>(bp + static_cast<size_t>(kk) * 32);
            const v8d b0 = b[0], b1 = b[1], b2 = b[2], b3 = b[3];
            const double x0 = a0[kk], x1 = a1[kk], x2 = a2[kk], x3 = a3[kk];
            c00 += x0 * b0; c01 += x0 * b1; c02 += x0 * b2; c03 += x0 * b3;
            c10 += x1 * b0; c11 += x1 * b1; c12 += x1 * b2; c13 += x1 * b3;
            c20 += x2 * b0; c21 += x2 * b1; c22 += x2 * b2; c23 += x2 * b3;
            c30 += x3 * b0; c31 += x3 * b1; c32 += x3 * b2; c33 += x3 * b3;
        }
        if (group) {
#define XDNA_EMU_ROUND(v) v = __builtin_convertvector(__builtin_convertvector(v, v8f), v8d)
            XDNA_EMU_ROUND(c00); XDNA_EMU_ROUND(c01); XDNA_EMU_ROUND(c02); XDNA_EMU_ROUND(c03);
            XDNA_EMU_ROUND(c10); XDNA_EMU_ROUND(c11); XDNA_EMU_ROUND(c12); XDNA_EMU_ROUND(c13);
            XDNA_EMU_ROUND(c20); XDNA_EMU_ROUND(c21); XDNA_EMU_ROUND(c22); XDNA_EMU_ROUND(c23);
            XDNA_EMU_ROUND(c30); XDNA_EMU_ROUND(c31); XDNA_EMU_ROUND(c32); XDNA_EMU_ROUND(c33);
#undef XDNA_EMU_ROUND
        }
    }
    v8du* o = reinterpret_cast<v8du*>(out);
    o[0] = c00; o[1] = c01; o[2] = c02; o[3] = c03;
    o[4] = c10; o[5] = c11; o[6] = c12; o[7] = c13;
    o[8] = c20; o[9] = c21; o[10] = c22; o[11] = c23;
    o[12] = c30; o[13] = c31; o[14] = c32; o[15] = c33;
}

XDNA_EMU_CLONES
void tile_kernel_4x12(const double* a, size_t lda, const double* bp, uint32_t k, uint32_t group, double* out) {
    v4d c00{}, c01{}, c02{}, c10{}, c11{}, c12{}, c20{}, c21{}, c22{}, c30{}, c31{}, c32{};
    const double* a0 = a;
    const double* a1 = a + lda;
    const double* a2 = a + 2 * lda;
    const double* a3 = a + 3 * lda;
    const uint32_t step = group ? group : k;
    for (uint32_t k0 = 0; k0 < k; k0 += step) {
        const uint32_t k1 = std::min(k, k0 + step);
        for (uint32_t kk = k0; kk < k1; ++kk) {
            const v4du* b = reinterpret_cast<const v4du*>(bp + static_cast<size_t>(kk) * 12);
            const v4d b0 = b[0], b1 = b[1], b2 = b[2];
            const double x0 = a0[kk], x1 = a1[kk], x2 = a2[kk], x3 = a3[kk];
            c00 += x0 * b0; c01 += x0 * b1; c02 += x0 * b2;
            c10 += x1 * b0; c11 += x1 * b1; c12 += x1 * b2;
            c20 += x2 * b0; c21 += x2 * b1; c22 += x2 * b2;
            c30 += x3 * b0; c31 += x3 * b1; c32 += x3 * b2;
        }
        if (group) {
#define XDNA_EMU_ROUND(v) v = __builtin_convertvector(__builtin_convertvector(v, v4f), v4d)
            XDNA_EMU_ROUND(c00); XDNA_EMU_ROUND(c01); XDNA_EMU_ROUND(c02);
            XDNA_EMU_ROUND(c10); XDNA_EMU_ROUND(c11); XDNA_EMU_ROUND(c12);
            XDNA_EMU_ROUND(c20); XDNA_EMU_ROUND(c21); XDNA_EMU_ROUND(c22);
            XDNA_EMU_ROUND(c30); XDNA_EMU_ROUND(c31); XDNA_EMU_ROUND(c32);
#undef XDNA_EMU_ROUND
        }
    }
    v4du* o = reinterpret_cast<v4du*>(out);
    o[0] = c00; o[1] = c01; o[2] = c02;
    o[3] = c10; o[4] = c11; o[5] = c12;
    o[6] = c20; o[7] = c21; o[8] = c22;
    o[9] = c30; o[10] = c31; o[11] = c32;
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
