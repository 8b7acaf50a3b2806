#include "workers/cpu/cpu_tiles.h"

#include "workers/cpu/cpu_views.h"

#include "util/log.h"

#include <algorithm>

namespace xdna {

static int64_t cpu_tiles_ceil(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t cpu_tiles_up8(int64_t a) { return (a + 7) / 8 * 8; }

int64_t cpu_tiles_narrow_rows(int64_t rows, int threads) {
    if (rows <= 0 || threads <= 0) return 0;
    // ggml's rule (repack.cpp, forward_mul_mat): four chunks a thread, no narrower than 8 rows; one a thread where
    // that leaves fewer chunks than threads; each chunk's bounds moved up onto the 8-row groups
    int64_t chunks = cpu_tiles_ceil(rows, cpu_tiles_ceil(rows, 4 * (int64_t) threads));
    if (rows / chunks < 8) chunks = cpu_tiles_ceil(rows, 8);
    int64_t width = cpu_tiles_ceil(rows, chunks);
    if (threads == 1 || (chunks < threads && cpu_tiles_ceil(rows, threads) >= 8)) {
        chunks = threads;
        width  = cpu_tiles_ceil(rows, threads);
    }
    chunks = std::min(chunks, cpu_tiles_ceil(rows, 8));
    int64_t narrow = 0;
    for (int64_t c = 0; c < chunks; ++c) {
        const int64_t begin = std::min(cpu_tiles_up8(width * c), rows);
        const int64_t end   = std::min(cpu_tiles_up8(std::min(width * (c + 1), rows)), rows);
        if (end > begin) narrow += (end - begin) % 16;
    }
    return narrow;
}

// A thread's own one-thread CPU backend, and the context its tiles' views are made in.
struct cpu_tiles::lane {
    ggml_backend_t   backend = nullptr;
    ggml_context *   ctx     = nullptr;
    std::atomic<int> turns{ 0 };   // the threads that use it in turn, one graph after another, hand it on through this
                                   // (the team's barriers order them too, but ThreadSanitizer cannot see libgomp's)

    ~lane() {
        if (ctx) ggml_free(ctx);
        if (backend) ggml_backend_free(backend);
    }

    ggml_status compute(const ggml_tensor * node, row_range rows, row_range tokens) {
        ggml_reset(ctx);
        ggml_tensor * dv = cpu_rows_node(ctx, node, rows, &tokens);
        if (!dv) return GGML_STATUS_FAILED;
        ggml_cgraph * g = ggml_new_graph_custom(ctx, 2, false);
        ggml_graph_add_node(g, dv);
        return ggml_backend_graph_compute(backend, g);
    }
};

cpu_tiles::cpu_tiles(ggml_backend_dev_t cpu_dev) : dev(cpu_dev) {
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
    set_threads = (ggml_backend_set_n_threads_t) ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads");
    set_abort = (ggml_backend_set_abort_callback_t) ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_abort_callback");
}

cpu_tiles::~cpu_tiles() = default;

bool cpu_tiles::ready(int threads) {
    if (failed) return false;
    while ((int) lanes.size() < threads) {
        std::unique_ptr<lane> l(new lane);
        l->backend = set_threads ? ggml_backend_dev_init(dev, nullptr) : nullptr;
        ggml_init_params params = {
            /* .mem_size   = */ ggml_tensor_overhead() * 8 + ggml_graph_overhead_custom(2, false) + 1024,
            /* .mem_buffer = */ nullptr,
            /* .no_alloc   = */ true,
        };
        l->ctx = l->backend ? ggml_init(params) : nullptr;
        if (!l->ctx) {
            XDNA_LOG_WARN("cannot create a one-thread CPU backend for the CPU worker's tiles; its rows are computed as "
                          "ggml's MUL_MAT cuts them");
            failed = true;
            return false;
        }
        set_threads(l->backend, 1);
        if (abort_cb && set_abort) set_abort(l->backend, abort_cb, abort_data);
        lanes.push_back(std::move(l));
    }
    return true;
}

void cpu_tiles::set_abort_callback(ggml_abort_callback cb, void * data) {
    abort_cb   = cb;
    abort_data = data;
    for (auto & l : lanes) if (set_abort) set_abort(l->backend, cb, data);
}

void cpu_tiles::plan(cpu_tiles_job & j, const multiply & m, row_range rows, row_range tokens, int threads) {
    j.tiles  = this;
    j.m      = &m;
    j.rows   = rows;
    j.tokens = tokens;
    const int64_t nodes = m.nodes(), n_tokens = tokens.size(), groups = cpu_tiles_ceil(rows.size(), 16);
    int64_t block = 16, row_blocks = 1;
    while (cpu_tiles_ceil(n_tokens, block) * nodes * row_blocks < threads && 2 * row_blocks <= groups) row_blocks *= 2;
    while (block < 64 && cpu_tiles_ceil(n_tokens, 2 * block) * nodes * row_blocks >= 2 * (int64_t) threads) block *= 2;
    j.token_block = block;
    j.row_block   = 16 * cpu_tiles_ceil(groups, row_blocks);
    j.row_blocks  = cpu_tiles_ceil(rows.size(), j.row_block);
    j.count       = cpu_tiles_ceil(n_tokens, block) * nodes * j.row_blocks;
    j.next.store(0, std::memory_order_relaxed);
    j.status.store(GGML_STATUS_SUCCESS, std::memory_order_relaxed);
    j.go.store(1, std::memory_order_release);
}

// Tile t of j: its block of tokens, then its node, then its block of rows.
void cpu_tiles::run_tile(lane & l, cpu_tiles_job & j, int64_t t) {
    const int64_t rb = t % j.row_blocks, node = t / j.row_blocks % j.m->nodes(), tb = t / j.row_blocks / j.m->nodes();
    const row_range rows   = { j.rows.begin + rb * j.row_block, std::min(j.rows.end, j.rows.begin + (rb + 1) * j.row_block) };
    const row_range tokens = { j.tokens.begin + tb * j.token_block,
                               std::min(j.tokens.end, j.tokens.begin + (tb + 1) * j.token_block) };
    const ggml_status st = l.compute(j.m->node_at((int) node), rows, tokens);
    int ok = GGML_STATUS_SUCCESS;
    if (st != GGML_STATUS_SUCCESS) j.status.compare_exchange_strong(ok, (int) st, std::memory_order_relaxed);
}

void cpu_tiles::run(ggml_tensor *, const ggml_tensor *, int ith, int, void * ud) {
    cpu_tiles_job & j = *static_cast<cpu_tiles_job *>(ud);
    (void) j.go.load(std::memory_order_acquire);
    cpu_tiles & self = *j.tiles;
    if (ith < (int) self.lanes.size()) {   // a thread without a lane leaves the tiles to the others
        lane & l = *self.lanes[ith];
        l.turns.fetch_add(1, std::memory_order_acq_rel);
        for (int64_t t = j.next.fetch_add(1, std::memory_order_relaxed); t < j.count;
             t = j.next.fetch_add(1, std::memory_order_relaxed)) {
            if (j.status.load(std::memory_order_relaxed) != GGML_STATUS_SUCCESS) break;
            self.run_tile(l, j, t);
        }
        l.turns.fetch_add(1, std::memory_order_acq_rel);
    }
    j.done.fetch_add(1, std::memory_order_release);
}

ggml_tensor * cpu_tiles::node(ggml_context * ctx, void * scratch, cpu_tiles_job & j) {
    ggml_tensor * anchor = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1);   // a custom op needs a tensor to act on
    anchor->data = scratch;
    ggml_tensor * op = ggml_map_custom1_inplace(ctx, anchor, &cpu_tiles::run, GGML_N_TASKS_MAX, &j);
    op->flags |= GGML_TENSOR_FLAG_COMPUTE;
    return op;
}

}  // namespace xdna
