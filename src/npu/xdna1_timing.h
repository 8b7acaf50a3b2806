// What a block multiply costs on first-generation XDNA silicon (Phoenix, Hawk Point), modelled on the published
// measurements of mlir-aie's whole_array design on a Ryzen 7 8700G. The software XDNA1 charges its runs by it and the
// NPU worker chooses its blocks and tiles by it, so that both see the same device. docs/emulator.md shows each
// published point beside the model's value and says where the model extrapolates.
//
// The whole_array design: 4 rows x `columns` cores, each computing an m x n tile of C while it walks K in steps of
// k (one call of the core kernel per step); A tiles are broadcast along a row, B tiles down a column, from DRAM
// through the shim. A core call costs its multiply-accumulates at a fraction of the peak rate, a fixed handshake,
// the C tile's load and store, and the wait for its A and B tiles; the run is bound by the slower of the cores and
// the shim's DRAM bandwidth. Four parameters are fitted (xdna1_fit); the rest are the silicon's own figures.
#pragma once

#include <cstdint>

namespace xdna {

// The core's arithmetic: bf16 multiplies (128 MAC a cycle) or int8 (256).
enum class xdna1_macs { bf16, i8 };

// A design's core tile, as mlir-aie's whole_array takes it (-m -k -n, the columns used, C single-buffered).
struct xdna1_tile {
    int  m = 16, k = 64, n = 64;
    int  columns = 4;
    bool c_single_buffer = false;   // a local change to the upstream design (frees L1 for larger tiles, costs per call)
};

// One run: C (M x N) = A (M x K) * B^T, with the element sizes of A, B and C in bytes.
struct xdna1_block {
    int64_t     M = 0, K = 0, N = 0;
    int         a_bytes = 2, b_bytes = 2, c_bytes = 4;
    xdna1_macs  macs = xdna1_macs::bf16;
};

// The fitted parameters and the silicon's fixed figures (docs/emulator.md, "The timing model").
struct xdna1_fit {
    double mac_efficiency = 0.90;   // of the core's peak multiply-accumulate rate, within a call
    double call_cycles    = 700;    // per core call: lock handshakes and loop set-up
    double c_cycles_32b   = 1.8;    // per 32 bytes of the C tile, loaded and stored once a call
    double ab_cycles_32b  = 3.9;    // per 32 bytes of the A and B tiles a call waits for
    double shim_bytes_per_cycle = 32.0;   // DRAM to the array (the FlashAttention paper: 32 GB/s at 1 GHz)
    double single_buffer_cost   = 1.065;  // a C single-buffered design's calls (measured: 6.5% at the default tile)
};

// The AIE clock by power mode (measured on an 8700G: 1.80 GHz in default, performance and turbo; 1.03 balanced;
// 0.80 power saver).
constexpr double xdna1_clock_default_hz  = 1.80e9;
constexpr double xdna1_clock_balanced_hz = 1.03e9;
constexpr double xdna1_clock_saver_hz    = 0.80e9;
// Dispatch: an idle NPU's run starts this long after its submission (the measured hardware floor); a run queued
// behind another starts this long after that one ends (runs queued back to back from C++).
constexpr double xdna1_dispatch_s = 169.8e-6;
constexpr double xdna1_queued_s   = 36.7e-6;
// Reconfiguring the whole array for another design (another hardware context) between two runs (GEMM paper).
constexpr double xdna1_switch_s   = 3.4e-3;

// Seconds the array computes one run (no dispatch): the slower of its cores and its shim.
double xdna1_block_seconds(const xdna1_tile & t, const xdna1_block & b, double clock_hz = xdna1_clock_default_hz,
                           const xdna1_fit & fit = xdna1_fit());

// A device's timing as its runs are charged and planned: the silicon model at the power mode's clock with the measured
// dispatch and switch figures, or, where a flat rate is set (the software XDNA1's what-ifs), 2 M N K at that rate.
// The emulator charges its runs by its own (xdna_emu::device_timing) and the NPU worker plans with the same, so that a
// what-if device is planned for as it runs; on hardware it is the silicon model at the default power mode.
struct xdna1_device_timing {
    double clock_hz        = xdna1_clock_default_hz;
    double dispatch_s      = xdna1_dispatch_s;
    double queued_s        = xdna1_queued_s;
    double switch_s        = xdna1_switch_s;
    double flat_bf16_flops = 0.0;   // > 0: bf16 runs at this rate instead of the model
    double flat_int8_ops   = 0.0;   // > 0: int8 runs at this rate instead of the model

    // Seconds the array computes one run (no dispatch).
    double run_seconds(const xdna1_tile & t, const xdna1_block & b) const;
};

// The clock of a power mode named as the platform names it ("default", "performance", "turbo", "balanced",
// "powersaver"); 0 for another name.
double xdna1_clock_of_mode(const char * mode);

}  // namespace xdna
