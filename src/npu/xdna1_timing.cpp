#include "xdna1_timing.h"

#include <algorithm>
#include <cstring>

namespace xdna {

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

double xdna1_block_seconds(const xdna1_tile & t, const xdna1_block & b, double clock_hz, const xdna1_fit & fit) {
    if (b.M <= 0 || b.K <= 0 || b.N <= 0 || t.m <= 0 || t.k <= 0 || t.n <= 0 || t.columns <= 0 || clock_hz <= 0) return 0.0;
    const int     rows       = 4;   // whole_array uses every core row of a column
    const double  peak_macs  = b.macs == xdna1_macs::i8 ? 256.0 : 128.0;
    // A padded block costs what the whole tiles cost: the design computes the edges' zeros too
    const int64_t row_tiles  = ceil_div(b.M, int64_t(rows) * t.m);
    const int64_t col_tiles  = ceil_div(b.N, int64_t(t.columns) * t.n);
    const int64_t calls      = row_tiles * col_tiles * ceil_div(b.K, t.k);   // per core, all cores in step
    double call = double(t.m) * t.k * t.n / (peak_macs * fit.mac_efficiency) + fit.call_cycles +
                  fit.c_cycles_32b * double(t.m) * t.n * b.c_bytes / 32.0 +
                  fit.ab_cycles_32b * (double(t.m) * t.k * b.a_bytes + double(t.k) * t.n * b.b_bytes) / 32.0;
    if (t.c_single_buffer) call *= fit.single_buffer_cost;
    // one call more: the first call's tiles arrive before it can start, and the last C tile leaves after it ends
    const double core_s = double(calls + 1) * call / clock_hz;
    // every column of B tiles reads all of A's rows once, every row of A tiles all of B's; C is written once
    const double bytes = double(b.M) * b.K * b.a_bytes * col_tiles + double(b.N) * b.K * b.b_bytes * row_tiles +
                         double(b.M) * b.N * b.c_bytes;
    const double shim_s = bytes / (fit.shim_bytes_per_cycle * clock_hz);
    return std::max(core_s, shim_s);
}

double xdna1_device_timing::run_seconds(const xdna1_tile & t, const xdna1_block & b) const {
    const double flat = b.macs == xdna1_macs::i8 ? flat_int8_ops : flat_bf16_flops;
    if (flat > 0) return 2.0 * double(b.M) * double(b.N) * double(b.K) / flat;
    return xdna1_block_seconds(t, b, clock_hz);
}

double xdna1_clock_of_mode(const char * mode) {
    if (!mode) return 0.0;
    if (!std::strcmp(mode, "default") || !std::strcmp(mode, "performance") || !std::strcmp(mode, "turbo")) {
        return xdna1_clock_default_hz;
    }
    if (!std::strcmp(mode, "balanced")) return xdna1_clock_balanced_hz;
    if (!std::strcmp(mode, "powersaver")) return xdna1_clock_saver_hz;
    return 0.0;
}

}  // namespace xdna
