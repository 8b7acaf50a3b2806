#include "workers/npu/npu_worker.h"

#include "npu/npu_xrt_api.h"
#include "workers/npu/npu_pipeline.h"

#include "workers/npu/resident_weight.h"

#include "config/config.h"
#include "convert/xdna_convert.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/trace.h"

#include "ggml-backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace xdna {

using namespace npu;   // the worker's own helper types (weight cache, resident weights, tiling)

bool npu_worker::arena_key::operator==(const arena_key & o) const {
    return data == o.data && graph == o.graph && tb == o.tb && kb == o.kb && ld == o.ld && a_blocks == o.a_blocks &&
           std::equal(ne, ne + 4, o.ne) && std::equal(nb, nb + 4, o.nb);
}

npu_worker::arena_key npu_worker::input_key(const ggml_tensor * x, int64_t tb, int64_t kb, int64_t ld, int64_t a_blocks) {
    arena_key key;
    key.data = x->data;
    for (int d = 0; d < 4; ++d) { key.ne[d] = x->ne[d]; key.nb[d] = (int64_t) x->nb[d]; }
    key.graph = graph_epoch();
    key.tb = tb; key.kb = kb; key.ld = ld; key.a_blocks = a_blocks;
    return key;
}

static constexpr int max_failures_in_a_row = 3;

std::unique_ptr<npu_worker> npu_worker::create(const config & cfg) {
    npu_options opts;
    opts.manifest_path  = cfg.npu_kernels;
    opts.timeout_ms     = cfg.npu_timeout_ms;
    opts.debug          = cfg.debug;
    opts.log = [](npu_log_level level, const std::string & msg) {
        switch (level) {
            case npu_log_level::debug: XDNA_LOG_DEBUG("npu: %s", msg.c_str()); break;
            case npu_log_level::info:  XDNA_LOG_INFO("npu: %s", msg.c_str()); break;
            case npu_log_level::warn:  XDNA_LOG_WARN("npu: %s", msg.c_str()); break;
            case npu_log_level::error: XDNA_LOG_ERROR("npu: %s", msg.c_str()); break;
        }
    };
    try {
        std::unique_ptr<npu_runtime> rt = npu_runtime::open(opts);
        if (!rt->results_valid()) {
            XDNA_LOG_WARN("the NPU computes nothing (emulator null mode): results are wrong, for host-side benchmarks only");
        }
        std::unique_ptr<npu_worker> w(new npu_worker(std::move(rt), cfg));
        std::string why;
        if (!w->self_test(&why)) {
            XDNA_LOG_ERROR("NPU self-test failed, the NPU stays off for this process: %s", why.c_str());
            return nullptr;
        }
        // the pipeline's buffers before any weight takes pinned memory (the self-test reserved them, unless the
        // emulator computes nothing)
        for (const npu_design & d : w->rt->manifest().designs()) {
            if (d.b == (cfg.npu_w8 ? npu_dtype::i8 : npu_dtype::bf16) && !d.kernels.empty()) {
                w->reserve_slots(w->rt->manifest().kernels()[d.kernels[0]]);
                break;
            }
        }
        return w;
    } catch (const std::exception & e) {
        XDNA_LOG_WARN("NPU unavailable, continuing without it: %s", e.what());
        return nullptr;
    }
}

npu_worker::npu_worker(std::unique_ptr<npu_runtime> runtime, const config & cfg)
    : rt(std::move(runtime)), weights(cfg.npu_cache_mb << 20), w8(cfg.npu_w8) {
    for (auto & s : slots) s.reset(new slot);
    cost.device = rt->timing();
    weights.set_placer([this](const ggml_tensor * w, const converted_weight & cw) { return place_weight(w, cw); });
    start_thread();
}

npu_worker::~npu_worker() {
    stop_thread();   // before the runtime and buffers go away
    stop_spares();
}

std::string npu_worker::description() const {
    return rt->device_name();   // the emulator names itself one
}

std::vector<const npu_design *> npu_worker::designs_for(const ggml_tensor * w) const {
    return w8 ? choose_designs(rt->manifest(), npu_dtype::i8, npu_dtype::i8, w->ne[0])
              : choose_designs(rt->manifest(), npu_dtype::bf16, npu_dtype::bf16, w->ne[0]);
}

bool npu_worker::xrt_is_hardware() {
    return npu_xrt_is_hardware();
}

bool npu_worker::accepts(const multiply & m) const {
    const ggml_tensor * node = m.node;
    if (switched_off) {
        rt->parked();   // runs the driver has ended still give back their buffers and hardware contexts
        return false;
    }
    if ((node->op != GGML_OP_MUL_MAT && node->op != GGML_OP_MUL_MAT_ID) || too_many_parked()) return false;
    if (!m.routing_error.empty()) return false;
    // F32 weights stay with the CPU, which computes them exactly: in bf16 the NPU would drop 16 bits of every weight
    // that the model kept at full precision on purpose (an MoE router, whose expert choice flips on small errors; a
    // single output that is the small difference of large terms, whose relative error bf16 cannot bound)
    if (node->src[0]->type == GGML_TYPE_F32) return false;
    return xdna_weight_convertible(node->src[0], nullptr) && !designs_for(node->src[0]).empty();
}

int64_t npu_worker::row_align(const multiply & m) const {
    // the designs' smallest block: a range of fewer rows would still cost a whole launch
    int64_t rows = 0;
    for (const npu_design * d : designs_for(m.node->src[0])) {
        for (int idx : d->kernels) {
            const int64_t r = rt->manifest().kernels()[idx].rows;
            rows = rows == 0 ? r : std::min(rows, r);
        }
    }
    return std::max<int64_t>(rows, 1);
}

bool npu_worker::describe(multiply & m) const {
    const ggml_tensor * w = m.node->src[0];
    const std::vector<const npu_design *> ds = designs_for(w);
    if (ds.empty()) return false;
    // The block is chosen on the tokens of a typical matrix: all of them, or for a MUL_MAT_ID the mean routed to one
    // expert, a figure of the shape, so that the block (the planner's unit of NPU work) stays the same from one
    // multiply of the shape to the next. The launches and the activations are those of this multiply.
    int64_t tokens = m.key.tokens;
    if (m.is_id()) {
        const ggml_tensor * ids = m.node->src[2];
        tokens = std::max<int64_t>(1, ids->ne[0] * ids->ne[1] / w->ne[2]);
    }
    const npu_tiling t = choose_tiling(rt->manifest(), ds, tokens, w->ne[1], w->ne[0], cost, slot_rows.load(),
                                       held_design.load());
    if (!t.kernel) return false;   // no block of the design as narrow as the slots hold (another design's sizes)
    int64_t token_blocks = (m.key.tokens + t.kernel->tokens - 1) / t.kernel->tokens, activations = w->ne[0] * m.key.tokens;
    if (m.is_id()) {
        token_blocks = activations = 0;
        for (int64_t e = 0; e < m.routing.experts(); ++e) {
            if (m.on_cpu(e)) continue;
            token_blocks += (m.routing.tokens_of(e) + t.kernel->tokens - 1) / t.kernel->tokens;
            activations  += m.routing.tokens_of(e) * w->ne[0];
        }
        if (token_blocks == 0) return false;   // every expert with tokens went to the CPU
    }
    m.npu_choice = std::make_shared<const npu_tiling>(t);
    // Whether the weights are converted already, so that rows of them cost the NPU no one-time work (counted as so: a
    // MUL_MAT_ID's, whose experts change from one multiply to the next, and one the cache cannot keep)
    // And whether they are past the cache's budget, converted on every call (another cost: shape_key::per_call).
    m.npu_weights_ready = true;
    m.npu_weights_per_call = false;
    const weight_format fmt = w8 ? weight_format::int8 : weight_format::bf16;
    for (int i = 0; i < m.nodes() && !m.is_id(); ++i) {
        const ggml_tensor * wi = m.node_at(i)->src[0];
        if (!weight_cache::cacheable(wi)) continue;
        const bool kept = weights.keeps(wi, 0, fmt, m.npu_choice->k_padded);
        m.npu_weights_ready = m.npu_weights_ready && (!kept || weights.cached(wi, 0, fmt, m.npu_choice->k_padded));
        m.npu_weights_per_call = m.npu_weights_per_call || !kept;
    }
    // a pair: each block of rows launched for both weights, on the same activations; weights converted for the call:
    // each row's K values once a call, over its launches (the token blocks share them)
    const double per_row = m.npu_weights_per_call ? (double) t.kernel->k / (double) std::max<int64_t>(1, token_blocks) : 0.0;
    m.npu_cost = t.hint(cost, token_blocks * t.k_blocks * m.nodes(), activations, per_row);
    return true;
}

void npu_worker::load_designs() {
    const npu_dtype want = w8 ? npu_dtype::i8 : npu_dtype::bf16;
    for (const npu_design & d : rt->manifest().designs()) {
        if (d.b == want && !d.kernels.empty()) rt->acquire(rt->manifest().kernels()[d.kernels[0]]);
    }
}

std::shared_ptr<resident_weight> npu_worker::place_weight(const ggml_tensor * w, const converted_weight & cw) {
    const std::vector<const npu_design *> ds = designs_for(w);
    if (ds.empty() || !resident_ok.load()) return nullptr;
    const npu_design * d = ds[0];   // they share the K block, so the weights' layout
    if (d->k <= 0 || cw.ld % d->k != 0) return nullptr;
    int64_t max_rows = 0;   // the largest block's rows: zero rows after the last panel, up to a whole such block
    for (const npu_design * di : ds) {
        for (int idx : di->kernels) max_rows = std::max<int64_t>(max_rows, rt->manifest().kernels()[idx].rows);
    }
    const int64_t tail = (max_rows - cw.rows % max_rows) % max_rows;
    const size_t elem = cw.format == weight_format::bf16 ? 2 : 1;
    std::string why;
    auto r = alloc_resident(*rt, rt->manifest().kernels()[d->kernels[0]], d->k, cw.rows, cw.ld / d->k, elem, tail, &why);
    if (r) return r;
    if (resident_ok.exchange(false)) {
        XDNA_LOG_WARN("NPU weights from here on stay in ordinary memory and are copied to the NPU block by block, which "
                      "costs host time (%s); raise the locked-memory limit (ulimit -l) to keep them in NPU buffers",
                      why.c_str());
    }
    return nullptr;
}

void npu_worker::reserve_slots(const npu_kernel & kn) {
    // Buffers sized for the widest block of kn's design, and of the designs with the same types and K block (other
    // tiles of it), serve every block of them, so they are allocated once per such group (named by its first design):
    // weights made resident later never leave the pipeline without pinned memory for its own buffers. Where the
    // locked-memory limit leaves too little for min_depth slots of the widest blocks, they are sized for the next
    // narrower ones, which are then the widest the worker uses (slot_rows): an 8 MiB limit holds two slots of
    // 512-row blocks (2 MiB each) and the arena, not two of 1,024 rows (4 MiB each).
    const npu_design & d = rt->manifest().design_of(kn);
    std::vector<const npu_kernel *> blocks;
    int group = -1;
    for (const npu_design & o : rt->manifest().designs()) {
        if (o.a != d.a || o.b != d.b || o.k != d.k) continue;
        if (group < 0) group = o.index;
        for (int idx : o.kernels) blocks.push_back(&rt->manifest().kernels()[idx]);
    }
    if (depth >= min_depth && slots[0]->design == group) return;
    std::vector<int64_t> widths;
    for (const npu_kernel * k : blocks) widths.push_back(k->rows);
    std::sort(widths.rbegin(), widths.rend());
    widths.erase(std::unique(widths.begin(), widths.end()), widths.end());
    for (size_t i = 0; i < widths.size(); ++i) {
        if (reserve_slots_for(blocks, group, widths[i], i + 1 == widths.size())) {
            slot_rows.store(widths[i]);
            return;
        }
    }
}

// The slots for `blocks` up to `max_rows` rows: false where fewer than min_depth can be had (none kept then), unless
// `last`, which throws.
bool npu_worker::reserve_slots_for(const std::vector<const npu_kernel *> & blocks, int group, int64_t max_rows,
                                   bool last) {
    size_t a = 0, b = 0, c = 0;
    const npu_kernel * any = nullptr;
    for (const npu_kernel * kp : blocks) {
        const npu_kernel & k = *kp;
        if (k.rows > max_rows) continue;
        any = &k;
        a = std::max(a, k.a_bytes());
        b = std::max(b, k.b_bytes());
        c = std::max(c, k.c_bytes());
    }
    release_slots();   // first: pinned memory is counted
    if (!any) return false;
    // each slot with an activation place for its run in flight: the first min_depth are needed, the others taken
    // where the locked-memory limit allows them
    for (int i = 0; i < max_depth; ++i) {
        slot & s = *slots[i];
        std::string refused;   // why slot i cannot be had
        try {
            s.b = rt->alloc(*any, npu_arg::b, b);
            s.c = rt->alloc(*any, npu_arg::c, c);
        } catch (const npu_error & e) {
            refused = e.what();
        }
        if (refused.empty() && !reserve_arena(*any, size_t(i + 1) * a)) refused = "no NPU buffer for the activations";
        if (!refused.empty()) {
            s.b = s.c = npu_buffer();
            if (i >= min_depth) break;   // the slots past min_depth are taken only where there is room
            release_slots();
            if (last) throw npu_error(npu_errc::buffer, refused);
            return false;
        }
        s.design = group;
        depth = i + 1;
    }
    if (depth < max_depth) {
        XDNA_LOG_DEBUG("NPU pipeline: %d runs in flight (the locked-memory limit leaves no room for %d)", depth, max_depth);
    }
    return true;
}

void npu_worker::release_slots() {
    depth = 0;
    for (auto & s : slots) {
        s->design = -1;
        s->b = s->c = npu_buffer();
    }
}

bool npu_worker::reserve_arena(const npu_kernel & kn, size_t bytes) {
    const size_t had = act_arena.size();
    if (had >= bytes) return true;
    try {
        npu_buffer bigger = rt->alloc(kn, npu_arg::a, std::max(bytes, std::min(arena_cap, had * 3 / 2)));
        act_arena = std::move(bigger);
        return true;
    } catch (const npu_error &) {
        return false;   // the one it has stays (the caller reuses its places in turn)
    }
}

bool npu_worker::prepare_weight(const ggml_tensor * w) {
    const std::vector<const npu_design *> ds = designs_for(w);
    if (ds.empty()) return false;
    const npu_design * d = ds[0];   // they share the K block
    const int64_t ld = (w->ne[0] + d->k - 1) / d->k * d->k;
    std::string err;
    bool all = true;
    for (int64_t e = 0; e < w->ne[2]; ++e) {
        all = weights.get(w, e, w8 ? weight_format::int8 : weight_format::bf16, ld, &err) != nullptr && all;
    }
    return all;
}

void npu_worker::note_failure(const std::string & why) {
    if (++failures_in_a_row >= max_failures_in_a_row && !switched_off.exchange(true)) {
        XDNA_LOG_ERROR("NPU switched off for this process after %d failed runs in a row (last: %s); the CPU takes its rows",
                       failures_in_a_row, why.c_str());
    }
}

// Whatever way a call ends, the lent threads return, and a failure counts towards switching the NPU off.
work_record npu_worker::call_over(work_record r) {
    helper.close();
    if (r.ok()) failures_in_a_row = 0; else note_failure(r.why());
    return r;
}

work_record npu_worker::run(const multiply & m, row_range rows) {
    const work_record r = npu_worker_guard([&] { return run_call(m, rows); });
    if (m.ahead) wait_release();   // where the call failed before its end: nothing may be written before it
    return call_over(r);
}

bool npu_worker::prepare_job(job & j, row_range rows, int64_t ld, std::string * err) {
    const ggml_tensor * w = j.w;
    const int64_t expert = j.expert;
    const weight_format fmt = w8 ? weight_format::int8 : weight_format::bf16;
    const double t0 = now_seconds();
    bool first_use = false;
    j.cached = weights.get(w, expert, fmt, ld, err, &first_use);
    if (j.cached) {
        // converting a weight into the cache happens once: not a cost of this multiply's size or shape (finding it
        // there is, and stays in the multiply's time)
        j.cache_seconds = first_use ? now_seconds() - t0 : 0.0;
        j.weight = j.cached.get();
        j.w_base = rows.begin;
        return true;
    }
    j.weight = &j.scratch;
    j.w_base = 0;
    const bool ok = convert_weight_rows(w, expert, rows.begin, rows.end, fmt, ld, j.scratch, err);
    // past the cache's budget the rows are converted on every call: a cost that grows with them, not a fixed one
    j.row_seconds = now_seconds() - t0;
    return ok;
}

// The matrices of the call (one, or one per expert the planner left to the NPU, with its routed tokens), with where
// each token's input row is and where its result row goes; the kernel is the one the description chose.
void npu_worker::plan_jobs(call & c) const {
    const multiply & m = *c.m;
    const ggml_tensor * node = m.node, * x = node->src[1];
    if (!m.is_id()) {
        // one job per weight of the multiply (a pair's two read the same activations)
        for (int i = 0; i < m.nodes(); ++i) {
            const ggml_tensor * out = m.node_at(i);
            job j;
            j.w        = out->src[0];
            j.n_tokens = x->ne[1];
            j.out.reserve(j.n_tokens);
            j.src.reserve(j.n_tokens);
            // begun ahead, into its place in `staged` (open_jobs sized it), laid out as the result tensor
            char * const base   = m.ahead ? (char *) staged[i].data() : (char *) out->data;
            const size_t stride = m.ahead ? size_t(out->ne[0]) * sizeof(float) : out->nb[1];
            for (int64_t t = 0; t < j.n_tokens; ++t) {
                j.out.push_back(base + t * stride);
                j.src.push_back((const float *) ((const char *) x->data + t * x->nb[1]));
            }
            c.jobs.push_back(std::move(j));
        }
    } else {
        // the result row of (token, slot) sits at t * nb2 + s * nb1 of dst, its input at the same slot of src1, or
        // slot 0 when src1 has one row per token (broadcast)
        for (int64_t e = 0; e < m.routing.experts(); ++e) {
            if (m.routing.tokens_of(e) == 0 || m.on_cpu(e)) continue;
            job j;
            j.w        = node->src[0];
            j.n_tokens = m.routing.tokens_of(e);
            j.expert   = e;
            j.out.reserve(j.n_tokens);
            j.src.reserve(j.n_tokens);
            const moe_routing::pair * routed = m.routing.begin_of(e);
            for (int64_t i = 0; i < j.n_tokens; ++i) {
                const int64_t t = routed[i].token, s = routed[i].slot;
                j.out.push_back((char *) node->data + t * node->nb[2] + s * node->nb[1]);
                j.src.push_back((const float *) ((const char *) x->data + t * x->nb[2] + (x->ne[1] == 1 ? 0 : s) * x->nb[1]));
            }
            c.jobs.push_back(std::move(j));
        }
    }
    const npu_kernel & kn = *m.npu_choice->kernel;
    c.kn     = &kn;
    c.k      = node->src[0]->ne[0];
    c.ld     = m.npu_choice->k_padded;
    c.tb     = kn.tokens;
    c.kb     = kn.k;
    c.k_blocks = m.npu_choice->k_blocks;
    int64_t row0 = 0;
    m.npu_cost.for_blocks(c.rows.size(), [&](int64_t block_rows, double) {
        const npu_kernel * bk = &kn;
        for (const npu_kernel * w : m.npu_choice->wide) if (w && w->rows == block_rows) bk = w;
        c.row_blocks.push_back({ row0, bk });
        row0 += block_rows;
    });
    c.a_elem = w8 ? 1 : 2;
}

// On the caller's thread, the worker idle: the weights the run would convert on first use are converted by the CPU
// worker's threads instead, into the cache (a 3,072 x 1,024 Q4_0 weight takes one thread ~10 ms, beside the CPU's
// rows: a process that starts with nothing learned gives the NPU a weight at a time, and at -t 16 of 16 cores auto
// ran at 756 and 816 prompt tokens/s where a fixed share 0.5, whose weights all convert in the first prompt, ran at
// 1,237 and 1,107). Found in the cache, a weight costs a lookup here. Whether it converted any.
bool npu_worker::convert_weights_on_cpu(const multiply & m) {
    if (!m.is_id() && m.npu_weights_ready) return false;   // describe() found them converted (or not to be kept)
    const weight_format fmt = w8 ? weight_format::int8 : weight_format::bf16;
    const int64_t experts = m.is_id() ? m.routing.experts() : 1;
    std::string err;
    bool converted = false;
    for (int i = 0; i < m.nodes(); ++i) {
        const ggml_tensor * w = m.node_at(i)->src[0];
        for (int64_t e = 0; e < experts; ++e) {
            if (m.is_id() && (m.routing.tokens_of(e) == 0 || m.on_cpu(e))) continue;   // the experts plan_jobs takes
            if (!weights.cached(w, e, fmt, m.npu_choice->k_padded)) {
                trace::scope ts("convert weight (CPU threads)", w->ne[1]);
                bool first_use = false;
                weights.get(w, e, fmt, m.npu_choice->k_padded, &err, &first_use, &m.on_cpu_threads);
                converted = converted || first_use;
            }
        }
    }
    return converted;
}

bool npu_worker::prepare_ahead(const multiply & m) {
    return m.npu_choice && !switched_off && convert_weights_on_cpu(m);
}

// The call's set-up before the pipeline: its jobs, their weights, the slots and the activations' places. A failure,
// or success (with no jobs: nothing to do).
work_record npu_worker::open_call(call & c, const multiply & m, row_range rows, double t0) {
    work_record r = open_jobs(c, m, rows, t0);
    return !r.ok() || c.jobs.empty() ? r : open_places(c, t0);
}

work_record npu_worker::open_jobs(call & c, const multiply & m, row_range rows, double t0) {
    if (!m.npu_choice) return work_record::failed(work_failure::no_kernel, "the multiply was not described for the NPU");
    c.m    = &m;
    c.rows = rows;
    if (m.ahead) {
        if (m.is_id()) return work_record::failed(work_failure::unsupported, "a MUL_MAT_ID begun ahead");
        staged.resize(m.nodes());
        for (int i = 0; i < m.nodes(); ++i) staged[i].resize(size_t(ggml_nelements(m.node_at(i))));
    }
    plan_jobs(c);
    if (c.jobs.empty()) return work_record();
    trace::scope tw("weights");
    std::string err;
    for (job & j : c.jobs) {
        if (!prepare_job(j, rows, c.ld, &err)) {
            return work_record::failed(work_failure::weight_conversion, err, now_seconds() - t0);
        }
    }
    return work_record();
}

// A head start on the call while the CPU worker's threads convert its activations (async_worker::set_up; -t 8 of 16
// cores: the worker's jobs and weights took 28 us of the 113 before its first launch). Only where every weight is in
// the cache already: a weight met for the first time is converted on the CPU's threads in before_start, and one past
// the cache (or outside it) is converted for the call, a cost of its rows that the call's time must hold.
void npu_worker::set_up(const multiply & m, row_range rows) {
    early.reset();
    if (!m.npu_choice || rows.empty() || switched_off || m.is_id() || !m.npu_weights_ready || m.npu_weights_per_call) {
        return;
    }
    for (int i = 0; i < m.nodes(); ++i) {
        if (!weight_cache::cacheable(m.node_at(i)->src[0])) return;   // converted for the call: a cost of its rows
    }
    trace::name_thread("NPU worker (host)");
    trace::scope ts("npu rows: set-up", rows.size());
    std::unique_ptr<call> c(new call);
    if (open_jobs(*c, m, rows, now_seconds()).ok() && !c->jobs.empty()) early = std::move(c);
}

work_record npu_worker::open_places(call & c, double t0) {
    reserve_slots(*c.kn);
    for (const row_block & rb : c.row_blocks) {
        // described before the locked-memory limit narrowed the slots (a design met for the first time): the next
        // multiplies are described for the narrower blocks
        if (rb.kn->rows > slot_rows.load()) {
            return work_record::failed(work_failure::device_memory, "blocks wider than the locked-memory limit leaves "
                                       "room for", now_seconds() - t0);
        }
    }
    place_activations(c);
    c.check_finite = rt->results_valid();
    return work_record();
}

// After the pipeline: what the arena holds now, the result's check, and the times.
work_record npu_worker::close_call(call & c, double t0) {
    bool all_held = c.places == (int64_t) c.launches.back().a_block + 1;
    for (int64_t p = 0; all_held && p < c.places; ++p) all_held = c.a_held[p] == p;
    if (all_held) {
        arena_holds  = c.arena_key_after;
        arena_k_held = INT64_MAX;
    }
    if (c.check_finite && !c.finite) return work_record::failed(work_failure::nonfinite_output, "", now_seconds() - t0);
    work_record res;
    const double t1 = now_seconds();
    res.seconds = t1 - t0;
    double row_seconds = 0.0;
    for (const job & j : c.jobs) {
        res.once_seconds += j.cache_seconds;
        row_seconds += j.row_seconds;
    }
    // what does not grow with the rows: the set-up before the first launch (a weight converted for the call left
    // out) and the last result after the last run
    res.fixed_seconds = std::max(0.0, c.first_launched - t0 - row_seconds) + (t1 - c.last_waited);
    return res;
}

work_record npu_worker::run_call(const multiply & m, row_range rows) {
    const double t0 = now_seconds();
    trace::name_thread("NPU worker (host)");
    trace::scope ts("npu rows", rows.size());
    const std::unique_ptr<call> head = std::move(early);   // set_up's, where it opened this call
    const bool set_up_done = head && head->m == &m && head->rows.begin == rows.begin && head->rows.end == rows.end;
    call local;
    call & c = set_up_done ? *head : local;
    work_record res = set_up_done ? open_places(c, t0) : open_call(c, m, rows, t0);
    if (!res.ok() || c.jobs.empty()) {
        if (res.ok()) res.seconds = now_seconds() - t0;
        return res;
    }
    run_pipeline(c);
    const work_record r = close_call(c, t0);
    return m.ahead ? finish_ahead(c, r, t0) : r;
}

}  // namespace xdna
