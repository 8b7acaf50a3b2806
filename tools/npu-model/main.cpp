// xdna-npu-model: the XDNA1 timing model (src/npu/xdna1_timing.h) from the command line.
//
//   xdna-npu-model table [POINTS.json]     the published points beside the model (the table in docs/emulator.md)
//   xdna-npu-model block --tile M,K,N --block M,K,N [--i8] [--mode balanced]
//                                          one run's modelled time and rate (no dispatch)
#include "xdna1_points.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#ifndef XDNA1_POINTS_DEFAULT
#define XDNA1_POINTS_DEFAULT "data/xdna1-gemm-points.json"
#endif

static int usage() {
    std::fprintf(stderr, "usage: xdna-npu-model table [POINTS.json]\n"
                         "       xdna-npu-model block --tile m,k,n --block M,K,N [--i8] [--mode POWER_MODE]\n");
    return 2;
}

static bool three(const char * s, long long v[3]) {
    return s && std::sscanf(s, "%lld,%lld,%lld", &v[0], &v[1], &v[2]) == 3 && v[0] > 0 && v[1] > 0 && v[2] > 0;
}

int main(int argc, char ** argv) {
    if (argc < 2) return usage();
    try {
        if (!std::strcmp(argv[1], "table")) {
            const std::string path = argc > 2 ? argv[2] : XDNA1_POINTS_DEFAULT;
            std::fputs(xdna::xdna1_points_table(xdna::xdna1_load_points(path)).c_str(), stdout);
            return 0;
        }
        if (std::strcmp(argv[1], "block")) return usage();
        long long tile[3] = {}, blk[3] = {};
        bool i8 = false, have_tile = false, have_block = false;
        double hz = xdna::xdna1_clock_default_hz;
        for (int i = 2; i < argc; ++i) {
            const char * next = i + 1 < argc ? argv[i + 1] : nullptr;
            if (!std::strcmp(argv[i], "--tile")) { have_tile = three(next, tile); ++i; }
            else if (!std::strcmp(argv[i], "--block")) { have_block = three(next, blk); ++i; }
            else if (!std::strcmp(argv[i], "--i8")) i8 = true;
            else if (!std::strcmp(argv[i], "--mode")) {
                hz = xdna::xdna1_clock_of_mode(next);
                ++i;
                if (hz <= 0) { std::fprintf(stderr, "xdna-npu-model: unknown power mode\n"); return 2; }
            } else return usage();
        }
        if (!have_tile || !have_block) return usage();
        xdna::xdna1_tile t;
        t.m = int(tile[0]); t.k = int(tile[1]); t.n = int(tile[2]);
        xdna::xdna1_block b;
        b.M = blk[0]; b.K = blk[1]; b.N = blk[2];
        b.macs = i8 ? xdna::xdna1_macs::i8 : xdna::xdna1_macs::bf16;
        b.a_bytes = b.b_bytes = i8 ? 1 : 2;
        b.c_bytes = 4;
        const double s = xdna::xdna1_block_seconds(t, b, hz);
        std::printf("%.1f us, %.0f G%s/s (queued: +%.1f us a launch; first: +%.1f us)\n", s * 1e6,
                    2.0 * double(b.M) * double(b.N) * double(b.K) / s / 1e9, i8 ? "OP" : "FLOP",
                    xdna::xdna1_queued_s * 1e6, xdna::xdna1_dispatch_s * 1e6);
        return 0;
    } catch (const std::exception & e) {
        std::fprintf(stderr, "xdna-npu-model: %s\n", e.what());
        return 1;
    }
}
