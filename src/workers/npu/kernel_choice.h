// Which NPU kernel computes a multiply, and what it costs: the design (its core tile) and the block shape that finish
// soonest by the silicon model (src/npu/xdna1_timing.h), among the designs of the weights' data type and K block.
// Switching designs costs milliseconds (the array is reconfigured), switching instruction streams within one nothing
// (the GEMM paper): a design other than the one the NPU holds is charged that switch. The kernel manifest gives the
// blocks' shapes and each design's tile, the model their times, and the planner corrects its prediction by
// measurement per shape (src/planner/planner.h).
#pragma once

#include "workers/multiply.h"

#include "npu/npu_manifest.h"

#include <cstdint>
#include <vector>

namespace xdna::npu {

struct npu_timing {
    xdna1_device_timing device;    // the device's (npu_runtime::timing)
    double convert_s  = 1e-9;      // converting one activation to bf16 or int8 on one host core (bench-convert)
    double convert_weight_s = 1.6e-9;   // one weight value, past the cache's budget (docs/results.md, the 3B shapes)

    // One launch of `kn` (a block of `d`) in a stream of queued launches: the gap, then its compute.
    double launch_seconds(const npu_design & d, const npu_kernel & kn) const;
};

// The blocks a multiply runs in: one token size, and its row sizes (the narrowest, and wider ones used where the rows
// fill them: launch_cost::for_blocks).
struct npu_tiling {
    const npu_design * design = nullptr;
    const npu_kernel * kernel = nullptr;   // the narrowest block
    const npu_kernel * wide[launch_cost::max_wide] = {};   // wider blocks of the same tokens, widest first
    int64_t k_padded = 0;           // K rounded up to the kernel's K block: the converted weights' row stride
    int64_t token_blocks = 0, k_blocks = 0;
    double  predicted_s = 0.0;

    // The planner's prediction for a multiply run in these blocks: launches_per_block launches per block of rows
    // (K blocks x token blocks, of every expert taken), one first dispatch, `activations` values converted, and where
    // the weights are converted for the call, `weight_values_per_row` of them per row of each launch.
    launch_cost hint(const npu_timing & cost, int64_t launches_per_block, int64_t activations,
                     double weight_values_per_row = 0.0) const;
};

// The designs for (a, b) types and K, which all share one K block and so one layout of the converted weights: the
// K-complete designs whose K block equals K when there are any, else those with the smallest K block (their blocks are
// summed on the host); one per core tile. W8 (int8) designs must have a 1,024-wide K block, the weights' scale group.
// Empty if the manifest has none.
std::vector<const npu_design *> choose_designs(const npu_manifest & m, npu_dtype a, npu_dtype b, int64_t k);

// The design and blocks that finish `tokens` x `rows` x K soonest: a design of `designs`, a token size, and its row
// sizes up to `max_rows` (the widest block the worker's buffers hold); a design other than `held` (the one the NPU
// holds, -1: none) is charged the switch.
npu_tiling choose_tiling(const npu_manifest & m, const std::vector<const npu_design *> & designs, int64_t tokens,
                         int64_t rows, int64_t k, const npu_timing & cost, int64_t max_rows, int held);

}  // namespace xdna::npu
