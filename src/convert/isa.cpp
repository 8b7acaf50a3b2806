// Run-time choice of the instruction set for the hot loops.

#include "convert_kernels.h"
#include "xdna_convert.h"

#include <atomic>

namespace xdna {

namespace {

struct kernel_tables {
    convert_kernels         table[3];
    xdna_convert_isa        best;
    std::atomic<int>        current;

    kernel_tables() {
        fill_kernels_generic(table[XDNA_CONVERT_GENERIC]);
        table[XDNA_CONVERT_AVX2]   = table[XDNA_CONVERT_GENERIC];
        table[XDNA_CONVERT_AVX512] = table[XDNA_CONVERT_GENERIC];
        best = XDNA_CONVERT_GENERIC;
#if (defined(__x86_64__) || defined(_M_X64)) && defined(__GNUC__)
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") && __builtin_cpu_supports("fma")) {
            fill_kernels_avx2(table[XDNA_CONVERT_AVX2]);
            table[XDNA_CONVERT_AVX512] = table[XDNA_CONVERT_AVX2];
            best = XDNA_CONVERT_AVX2;
            if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
                fill_kernels_avx512(table[XDNA_CONVERT_AVX512]);
                best = XDNA_CONVERT_AVX512;
            }
        }
#endif
        current.store(best);
    }
};

kernel_tables & tables() {
    static kernel_tables t;
    return t;
}

}  // namespace

const convert_kernels & kernels() {
    kernel_tables & t = tables();
    return t.table[t.current.load(std::memory_order_relaxed)];
}

}  // namespace xdna

xdna_convert_isa xdna_convert_isa_best() {
    return xdna::tables().best;
}

xdna_convert_isa xdna_convert_isa_get() {
    return (xdna_convert_isa) xdna::tables().current.load();
}

xdna_convert_isa xdna_convert_isa_set(xdna_convert_isa isa) {
    auto & t = xdna::tables();
    int v = (int) isa;
    if (v < XDNA_CONVERT_GENERIC) {
        v = XDNA_CONVERT_GENERIC;
    }
    if (v > (int) t.best) {
        v = (int) t.best;
    }
    t.current.store(v);
    return (xdna_convert_isa) v;
}

const char * xdna_convert_isa_name(xdna_convert_isa isa) {
    switch (isa) {
        case XDNA_CONVERT_GENERIC: return "generic";
        case XDNA_CONVERT_AVX2:    return "avx2";
        case XDNA_CONVERT_AVX512:  return "avx512";
    }
    return "unknown";
}
