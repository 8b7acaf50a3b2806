// Views of a multiply's rows (and tokens) as nodes a CPU backend computes in place: the CPU worker's graphs are made
// of them.
#pragma once

#include "workers/worker.h"

#include "ggml.h"

namespace xdna {

// Rows [begin, end) of `node` as a node of `ctx`: the weight's rows (of every expert) in its own buffer, so its layout
// stays, and the same rows of the result, computed in place. With `tokens`, only those columns of a 2-D MUL_MAT (its
// input's rows [begin, end) and the same of the result). Null when the views cannot be made.
ggml_tensor * cpu_rows_node(ggml_context * ctx, const ggml_tensor * node, row_range rows,
                            const row_range * tokens = nullptr);

}  // namespace xdna
