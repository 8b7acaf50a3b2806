#include "workers/gpu/gpu_rules.h"

namespace xdna {

double multiply_gflop(const ggml_tensor * node) {
    return 2.0 * (double) node->src[0]->ne[0] * (double) ggml_nelements(node) * 1e-9;
}

bool npu_joins_next_to_gpu(const ggml_tensor * node, bool gpu_takes_part, double min_gflop) {
    return !gpu_takes_part || multiply_gflop(node) >= min_gflop;
}

}  // namespace xdna
