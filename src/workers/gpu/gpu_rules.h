// Who takes part in a multiply next to a GPU worker (the spec's rule, configurable).
#pragma once

#include "ggml.h"

namespace xdna {

// Floating-point operations of a multiply, in GFLOP: 2 * K per output element (for MUL_MAT_ID, per expert slot).
double multiply_gflop(const ggml_tensor * node);

// Next to a GPU worker that takes part in `node`, the NPU joins only multiplies of at least `min_gflop`
// (GGML_XDNA_GPU_NPU_MIN_GFLOP; an integrated GPU is some 10x faster than the NPU, whose per-launch cost then only
// pays on large multiplies). Multiplies the GPU cannot take (repacked weights) keep the NPU.
bool npu_joins_next_to_gpu(const ggml_tensor * node, bool gpu_takes_part, double min_gflop);

}  // namespace xdna
