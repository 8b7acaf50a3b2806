// Which NPU kernel computes a multiply, and what it costs: one design per data type (switching designs costs
// milliseconds, switching instruction streams within one costs nothing: the GEMM paper), then the block shape that
// finishes soonest by the cost model below. The model is the one place the NPU's costs live: the kernel manifest
// gives the blocks' shapes, these numbers the rates, and the planner corrects its prediction by measurement per shape
// (src/planner/planner.h).
#pragma once

#include "workers/multiply.h"

#include "npu/npu_manifest.h"

#include <cstdint>

namespace xdna::npu {

struct npu_cost_model {
    double dispatch_s   = 150e-6;   // the first launch on an idle NPU (Linux measurements 90-148 us; the spec's Windows figure 180)
    double queued_s     = 35e-6;    // between launches queued back to back (xrt-smi validate: 28,243 runs/s)
    double flops_per_s  = 3.1e12;   // bf16 throughput of the whole array (GEMM paper: 3.14 TFLOP/s)
    double ops_per_s_i8 = 6.7e12;   // int8 (GEMM paper: 6.76 TOPS)
    double convert_s    = 1e-9;     // converting one activation to bf16 or int8 on one host core (bench-convert)

    // One launch of `kn` in a stream of queued launches: the gap, then its compute.
    double launch_seconds(const npu_kernel & kn) const;
};

// The blocks a multiply runs in: one token size, and its row sizes (the narrowest, and wider ones used where the rows
// fill them: npu_cost_hint::for_blocks).
struct npu_tiling {
    const npu_kernel * kernel = nullptr;   // the narrowest block
    const npu_kernel * wide[npu_cost_hint::max_wide] = {};   // wider blocks of the same tokens, widest first
    int64_t k_padded = 0;           // K rounded up to the kernel's K block: the converted weights' row stride
    int64_t token_blocks = 0, k_blocks = 0;
    double  predicted_s = 0.0;

    // The planner's prediction for a multiply run in these blocks: launches_per_block launches per block of rows
    // (K blocks x token blocks, of every expert taken), one first dispatch, `activations` values converted.
    npu_cost_hint hint(const npu_cost_model & cost, int64_t launches_per_block, int64_t activations) const;
};

// The design for (a, b) types and K: a K-complete design whose K block equals K when there is one, else the one with
// the smallest K block (its blocks are summed on the host). W8 (int8) designs must have a 1,024-wide K block, the
// weights' scale group. Null if the manifest has none.
const npu_design * choose_design(const npu_manifest & m, npu_dtype a, npu_dtype b, int64_t k);

// The blocks of `design` that finish `tokens` x `rows` x K soonest: a token size, and its row sizes up to `max_rows`
// (the widest block the worker's buffers hold).
npu_tiling choose_tiling(const npu_manifest & m, const npu_design & design, int64_t tokens, int64_t rows, int64_t k,
                         const npu_cost_model & cost, int64_t max_rows);

}  // namespace xdna::npu
