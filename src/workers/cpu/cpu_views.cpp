#include "workers/cpu/cpu_views.h"

#include "ggml-backend.h"

#include <cstring>

namespace xdna {

ggml_tensor * cpu_rows_node(ggml_context * ctx, const ggml_tensor * node, row_range rows, const row_range * tokens) {
    ggml_tensor * w   = node->src[0];
    ggml_tensor * x   = node->src[1];
    ggml_tensor * dst = const_cast<ggml_tensor *>(node);
    ggml_tensor * wv = ggml_view_3d(ctx, w, w->ne[0], rows.size(), w->ne[2], w->nb[1], w->nb[2], rows.begin * w->nb[1]);
    ggml_tensor * xv = nullptr, * dv = nullptr;
    if (tokens) {
        xv = ggml_view_2d(ctx, x, x->ne[0], tokens->size(), x->nb[1], tokens->begin * x->nb[1]);
        dv = ggml_view_2d(ctx, dst, rows.size(), tokens->size(), dst->nb[1],
                          tokens->begin * dst->nb[1] + rows.begin * dst->nb[0]);
    } else {
        dv = ggml_view_4d(ctx, dst, rows.size(), dst->ne[1], dst->ne[2], dst->ne[3],
                          dst->nb[1], dst->nb[2], dst->nb[3], rows.begin * dst->nb[0]);
    }
    if (ggml_backend_view_init(wv) != GGML_STATUS_SUCCESS || ggml_backend_view_init(dv) != GGML_STATUS_SUCCESS ||
        (xv && ggml_backend_view_init(xv) != GGML_STATUS_SUCCESS)) {
        return nullptr;
    }
    dv->op = node->op;
    memcpy(dv->op_params, node->op_params, sizeof(dv->op_params));
    for (int i = 0; i < GGML_MAX_SRC; ++i) dv->src[i] = node->src[i];
    dv->src[0] = wv;
    if (xv) dv->src[1] = xv;
    dv->flags |= GGML_TENSOR_FLAG_COMPUTE;   // ggml_graph_add_node does not set it, and the CPU skips nodes without it
    return dv;
}

}  // namespace xdna
