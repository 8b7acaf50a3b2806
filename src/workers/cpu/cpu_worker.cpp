#include "workers/cpu/cpu_worker.h"

#include "workers/cpu/cpu_views.h"

#include "convert/xdna_convert.h"
#include "os/os.h"
#include "util/clock.h"
#include "config/config.h"
#include "util/log.h"

#include "ggml-backend.h"
#include "ggml-cpu.h"


#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

namespace xdna {

// Nodes of the graphs the worker builds: one per node of the multiply and slice of rows (and two per boundary where it
// drives a device, compute), one per block of a conversion (convert_bf16).
static constexpr int64_t max_nodes = 64;

struct cpu_worker::impl {
    ggml_backend_t                backend     = nullptr;
    ggml_backend_set_n_threads_t  set_threads = nullptr;
    ggml_context *                ctx         = nullptr;   // views and the one-node graph, reset per call
    int                           n_threads   = 0;
    int                           n_cores     = 0;     // cores this process may run on
    int                           last_team   = 0;     // threads its last graph ran with
    float                         scratch_in[16] = {}, scratch_out[16] = {};   // anchors of the custom ops' nodes

    // Without OpenMP the CPU backend would spawn and join its threads on every call: give it a pool of its own,
    // created without polling so idle workers sleep instead of spinning while the NPU and GPU work.
    bool                          openmp      = true;
    ggml_threadpool_t             pool        = nullptr;
    decltype(&ggml_threadpool_new)  pool_new  = nullptr;
    decltype(&ggml_threadpool_free) pool_free = nullptr;
    decltype(&ggml_backend_cpu_set_threadpool) set_pool = nullptr;

    void count_cores();
    // every graph the worker computes: its team's size noted first (cores_to_spare)
    ggml_status compute(ggml_cgraph * g) {
        last_team = n_threads;
        return ggml_backend_graph_compute(backend, g);
    }
};

cpu_worker::cpu_worker() : p(new impl) {}

std::unique_ptr<cpu_worker> cpu_worker::create(ggml_backend_dev_t cpu_dev) {
    std::unique_ptr<cpu_worker> w(new cpu_worker);
    impl * p = w->p.get();
    p->backend = cpu_dev ? ggml_backend_dev_init(cpu_dev, nullptr) : nullptr;
    if (!p->backend) {
        XDNA_LOG_ERROR("cannot create the private CPU backend the CPU worker computes with; the XDNA backend is not "
                       "created (llama.cpp runs without it)");
        return nullptr;
    }

    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(cpu_dev);
    p->set_threads = (ggml_backend_set_n_threads_t) ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads");

    auto features = (ggml_backend_get_features_t) ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features");
    if (features) {
        p->openmp = false;
        for (ggml_backend_feature * f = features(reg); f && f->name; ++f) {
            p->openmp = p->openmp || strcmp(f->name, "OPENMP") == 0;
        }
    }
    if (!p->openmp) {
        p->pool_new  = (decltype(p->pool_new))  ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_new");
        p->pool_free = (decltype(p->pool_free)) ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_free");
        p->set_pool  = (decltype(p->set_pool))  ggml_backend_reg_get_proc_address(reg, "ggml_backend_cpu_set_threadpool");
    }

    ggml_init_params params = {
        /* .mem_size   = */ ggml_tensor_overhead() * (3 * max_nodes + 8) + ggml_graph_overhead_custom(max_nodes, false) + 1024,
        /* .mem_buffer = */ nullptr,
        /* .no_alloc   = */ true,
    };
    p->ctx = ggml_init(params);
    if (!p->ctx) {
        XDNA_LOG_ERROR("no memory for the CPU worker's graph context; the XDNA backend is not created");
        return nullptr;
    }

    w->set_n_threads(GGML_DEFAULT_N_THREADS);   // until llama.cpp sets its -t
    return w;
}

cpu_worker::~cpu_worker() {
    if (p->ctx) ggml_free(p->ctx);
    if (p->backend) ggml_backend_free(p->backend);
    if (p->pool) p->pool_free(p->pool);
}

void cpu_worker::set_n_threads(int n_threads) {
    if (n_threads == p->n_threads || n_threads <= 0) return;          // llama.cpp calls this every ubatch
    p->n_threads = n_threads;
    if (p->set_threads) p->set_threads(p->backend, n_threads);
    if (!p->openmp && p->pool_new && p->pool_free && p->set_pool) {
        ggml_threadpool_params tp = ggml_threadpool_params_default(n_threads);
        tp.poll = 0;
        ggml_threadpool_t pool = p->pool_new(&tp);
        p->set_pool(p->backend, pool);
        if (p->pool) p->pool_free(p->pool);
        p->pool = pool;
    }
}

int cpu_worker::threads() const {
    return p->n_threads;
}

void cpu_worker::impl::count_cores() {
    if (n_cores > 0) return;
    n_cores = os::cores_available();
}

int cpu_worker::cores_to_spare() {
    p->count_cores();
    return p->last_team > 0 ? std::max(0, p->n_cores - p->last_team) : 0;
}

int cpu_worker::cores() const {
    p->count_cores();
    return p->n_cores;
}

void cpu_worker::set_abort_callback(ggml_abort_callback cb, void * data) {
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(ggml_backend_get_device(p->backend));
    auto fn = (ggml_backend_set_abort_callback_t) ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_abort_callback");
    if (fn) fn(p->backend, cb, data);
}

bool cpu_worker::accepts(const multiply &) const {
    return true;   // the claim policy already asked the CPU backend
}

int64_t cpu_worker::row_align(const multiply & m) const {
    return m.repacked ? XDNA_REPACK_ROWS : 1;   // repacked weights are interleaved in groups of rows
}

// One phase of a driven worker's step at a slice boundary (cpu_worker::compute): a custom op every thread runs.
static ggml_tensor * cpu_worker_step_node(ggml_context * ctx, void * scratch, worker * w, bool take) {
    ggml_tensor * anchor = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1);
    anchor->data = scratch;
    auto poll = [](ggml_tensor *, const ggml_tensor *, int ith, int nth, void * ud) {
        static_cast<worker *>(ud)->step_poll(ith, nth);
    };
    auto take_ = [](ggml_tensor *, const ggml_tensor *, int ith, int nth, void * ud) {
        static_cast<worker *>(ud)->step_take(ith, nth);
    };
    ggml_tensor * op = ggml_map_custom1_inplace(ctx, anchor, take ? +take_ : +poll, GGML_N_TASKS_MAX, w);
    op->flags |= GGML_TENSOR_FLAG_COMPUTE;
    return op;
}

work_record cpu_worker::compute(const multiply & m, row_range rows, const driven_work * drive) {
    const double t0 = now_seconds();
    work_record res;
    if (rows.empty()) return res;
    const int64_t align = row_align(m);
    if (rows.begin % align != 0 || (rows.end % align != 0 && rows.end != m.node->src[0]->ne[1])) {
        // a repacked weight sliced off its 8-row groups computes garbage without any error: refuse instead
        return work_record::failed(work_failure::misaligned_rows,
                                   "[" + std::to_string(rows.begin) + ", " + std::to_string(rows.end) + ") against " +
                                       std::to_string(align) + "-row groups");
    }
    // the rows of the multiply's nodes (a pair's two: one graph, one start of the team), in place in their results;
    // where the team drives a device, slice by slice, a boundary after every slice but the last. A 2-D MUL_MAT is
    // sliced by tokens: ggml's MUL_MAT converts its whole input for the CPU's kernels at every node, and slices of
    // the rows would each convert all of it again (-t 16, share 0.5: each boundary cost the CPU's part ~0.45 ms, the
    // rows of a pair 30% slower in three slices); slices of the tokens convert each token once, in groups of 16. Other
    // multiplies are sliced by rows, in whole units of a row group per thread: ggml's kernels hand each thread chunks
    // of whole row groups (8 rows of a repacked weight), so 19 groups on 16 threads take as long as 32.
    const ggml_tensor * x = m.node->src[1];
    const bool by_tokens = !m.is_id() && x->ne[2] == 1 && x->ne[3] == 1;
    const int64_t unit = by_tokens ? 16 : align * std::max(1, p->n_threads);
    const int64_t span = by_tokens ? x->ne[1] : rows.size(), units = (span + unit - 1) / unit;
    const int64_t slices = drive && drive->w ? std::clamp<int64_t>(drive->slices, 1, std::min<int64_t>(
                               units, (max_nodes + 2) / (m.nodes() + 2))) : 1;
    ggml_reset(p->ctx);
    ggml_cgraph * g = ggml_new_graph_custom(p->ctx, max_nodes, false);
    for (int64_t sl = 0; sl < slices; ++sl) {
        const row_range cut = { units * sl / slices * unit, std::min(span, units * (sl + 1) / slices * unit) };
        const row_range part = by_tokens ? rows : row_range{ rows.begin + cut.begin, rows.begin + cut.end };
        for (int i = 0; i < m.nodes(); ++i) {
            ggml_tensor * dv = cpu_rows_node(p->ctx, m.node_at(i), part, by_tokens && slices > 1 ? &cut : nullptr);
            if (!dv) return work_record::failed(work_failure::cpu_backend, "cannot create the row views");
            ggml_graph_add_node(g, dv);
        }
        if (sl + 1 == slices) break;
        ggml_graph_add_node(g, cpu_worker_step_node(p->ctx, p->scratch_in, drive->w, false));
        ggml_graph_add_node(g, cpu_worker_step_node(p->ctx, p->scratch_out, drive->w, true));
    }
    const ggml_status st = p->compute(g);
    if (st != GGML_STATUS_SUCCESS) {
        res = work_record::failed(st == GGML_STATUS_ABORTED ? work_failure::aborted : work_failure::cpu_backend);
    }
    res.seconds = now_seconds() - t0;
    return res;
}

work_record cpu_worker::compute_experts(const multiply & m, row_range rows) {
    const double t0 = now_seconds();
    const ggml_tensor * node = m.node, * w = node->src[0], * x = node->src[1];
    const int64_t k = w->ne[0];
    std::vector<float> xs, ys;
    for (int64_t e = 0; e < m.routing.experts(); ++e) {
        const int64_t n = m.routing.tokens_of(e);
        if (!m.on_cpu(e) || n == 0 || rows.empty()) continue;
        const moe_routing::pair * routed = m.routing.begin_of(e);
        xs.resize(size_t(n) * k);
        ys.resize(size_t(n) * rows.size());
        for (int64_t i = 0; i < n; ++i) {
            const auto [t, sl] = routed[i];
            memcpy(&xs[i * k], (const char *) x->data + t * x->nb[2] + (x->ne[1] == 1 ? 0 : sl) * x->nb[1], k * sizeof(float));
        }
        ggml_reset(p->ctx);
        // rows of expert e, in the weight's own buffer (repacked layouts kept), times its gathered tokens
        ggml_tensor * wv = ggml_view_2d(p->ctx, const_cast<ggml_tensor *>(w), k, rows.size(), w->nb[1],
                                        e * w->nb[2] + rows.begin * w->nb[1]);
        ggml_tensor * xv = ggml_new_tensor_2d(p->ctx, GGML_TYPE_F32, k, n);
        ggml_tensor * yv = ggml_new_tensor_2d(p->ctx, GGML_TYPE_F32, rows.size(), n);
        xv->data = xs.data();
        yv->data = ys.data();
        if (ggml_backend_view_init(wv) != GGML_STATUS_SUCCESS) {
            return work_record::failed(work_failure::cpu_backend, "cannot create an expert's view");
        }
        yv->op = GGML_OP_MUL_MAT;
        yv->src[0] = wv;
        yv->src[1] = xv;
        yv->flags |= GGML_TENSOR_FLAG_COMPUTE;
        ggml_cgraph * g = ggml_new_graph_custom(p->ctx, 4, false);
        ggml_graph_add_node(g, yv);
        const ggml_status st = p->compute(g);
        if (st != GGML_STATUS_SUCCESS) {
            return work_record::failed(st == GGML_STATUS_ABORTED ? work_failure::aborted : work_failure::cpu_backend);
        }
        for (int64_t i = 0; i < n; ++i) {
            const auto [t, sl] = routed[i];
            memcpy((char *) node->data + t * node->nb[2] + sl * node->nb[1] + rows.begin * node->nb[0], &ys[i * rows.size()],
                   rows.size() * sizeof(float));
        }
    }
    work_record res;
    res.seconds = now_seconds() - t0;
    return res;
}

// A custom op that runs fn(ith, nth) on every thread of the team. The team's hand-offs are libgomp's, which
// ThreadSanitizer cannot see (and C++ does not promise): what the caller wrote before is published to fn's threads,
// and what they wrote to the caller after, through atomics as well.
struct cpu_worker_threads_job {
    const std::function<void(int, int)> * fn;
    std::atomic<int> go{ 0 }, done{ 0 };
    explicit cpu_worker_threads_job(const std::function<void(int, int)> * f) : fn(f) { go.store(1, std::memory_order_release); }
    ~cpu_worker_threads_job() { (void) done.load(std::memory_order_acquire); }
};

static ggml_tensor * cpu_worker_threads_node(ggml_context * ctx, void * scratch, cpu_worker_threads_job * j) {
    ggml_tensor * anchor = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1);   // a custom op needs a tensor to act on
    anchor->data = scratch;
    auto run = [](ggml_tensor *, const ggml_tensor *, int ith, int nth, void * ud) {
        cpu_worker_threads_job * j = static_cast<cpu_worker_threads_job *>(ud);
        (void) j->go.load(std::memory_order_acquire);
        (*j->fn)(ith, nth);
        j->done.fetch_add(1, std::memory_order_release);
    };
    ggml_tensor * op = ggml_map_custom1_inplace(ctx, anchor, run, GGML_N_TASKS_MAX, j);   // every thread runs it
    op->flags |= GGML_TENSOR_FLAG_COMPUTE;
    return op;
}

bool cpu_worker::convert_bf16(const ggml_tensor * x, const std::vector<bf16_block> & blocks,
                              const std::function<void(int, int)> & then) {
    if (blocks.empty() || (int64_t) blocks.size() + 1 > max_nodes) return false;
    ggml_reset(p->ctx);
    ggml_cgraph * g = ggml_new_graph_custom(p->ctx, max_nodes, false);
    for (const bf16_block & b : blocks) {
        ggml_tensor * src = ggml_view_2d(p->ctx, const_cast<ggml_tensor *>(x), b.cols, b.rows, x->nb[1],
                                         b.t0 * x->nb[1] + b.col * x->nb[0]);
        ggml_tensor * dst = ggml_new_tensor_2d(p->ctx, GGML_TYPE_BF16, b.cols, b.rows);
        dst->data = b.dst;
        if (ggml_backend_view_init(src) != GGML_STATUS_SUCCESS) return false;
        ggml_tensor * cpy = ggml_cpy(p->ctx, src, dst);
        cpy->flags |= GGML_TENSOR_FLAG_COMPUTE;
        ggml_graph_add_node(g, cpy);
    }
    // the graph's nodes run in order, a barrier between them: `then` sees every block converted
    cpu_worker_threads_job j{ &then };
    if (then) ggml_graph_add_node(g, cpu_worker_threads_node(p->ctx, p->scratch_in, &j));
    return p->compute(g) == GGML_STATUS_SUCCESS;
}

bool cpu_worker::run_on_threads(const std::function<void(int ith, int nth)> & fn) {
    cpu_worker_threads_job j{ &fn };
    ggml_reset(p->ctx);
    ggml_cgraph * g = ggml_new_graph_custom(p->ctx, 4, false);
    ggml_graph_add_node(g, cpu_worker_threads_node(p->ctx, p->scratch_in, &j));
    return p->compute(g) == GGML_STATUS_SUCCESS;
}

void cpu_worker::begin(const multiply & m, row_range rows) {
    last = compute(m, rows);
}

work_record cpu_worker::end() {
    return last;
}

}  // namespace xdna
