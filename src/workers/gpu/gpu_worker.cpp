#include "workers/gpu/gpu_worker.h"

#include "workers/gpu/weight_cache.h"

#include "convert/xdna_convert.h"
#include "os/os.h"

#include "util/clock.h"
#include "util/log.h"
#include "util/trace.h"

#include "ggml-backend-impl.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

namespace xdna {

namespace {

size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

// The bytes of a host tensor with contiguous rows (nb[0] == element size), packed densely into `staging` unless the
// tensor is contiguous already.
const void * packed(const ggml_tensor * t, std::vector<uint8_t> & staging) {
    if (ggml_is_contiguous(t)) return t->data;
    const size_t row = ggml_row_size(t->type, t->ne[0]);
    staging.resize(ggml_nelements(t) / t->ne[0] * row);
    uint8_t * out = staging.data();
    for (int64_t i3 = 0; i3 < t->ne[3]; ++i3) {
        for (int64_t i2 = 0; i2 < t->ne[2]; ++i2) {
            for (int64_t i1 = 0; i1 < t->ne[1]; ++i1, out += row) {
                memcpy(out, (const char *) t->data + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3], row);
            }
        }
    }
    return staging.data();
}

// A device buffer that wraps host memory [ptr, ptr + size), widened to whole pages (the pages exist: the tensor
// lies in them). Null when the device refuses (Vulkan needs its import alignment and the extension).
struct host_mapping {
    ggml_backend_buffer_t buf = nullptr;
    uintptr_t             begin = 0;   // the host address the buffer starts at
    ~host_mapping() { if (buf) ggml_backend_buffer_free(buf); }
    // The tensor address of host address `p` in the buffer: its base plus the offset. Not `p` itself: a Vulkan buffer's
    // base is a placeholder address of its own, whatever host memory it imports.
    void * at(const void * p) const { return (char *) ggml_backend_buffer_get_base(buf) + ((uintptr_t) p - begin); }
};

bool map_host_range(ggml_backend_dev_t dev, const void * ptr, size_t size, host_mapping & m) {
    const size_t page = os::page_size();
    const uintptr_t begin = (uintptr_t) ptr / page * page;
    const uintptr_t end   = align_up((uintptr_t) ptr + size, page);
    m.buf = ggml_backend_dev_buffer_from_host_ptr(dev, (void *) begin, end - begin, end - begin);
    m.begin = begin;
    return m.buf != nullptr;
}

bool is_vulkan(ggml_backend_dev_t dev) {
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
    return reg && strcmp(ggml_backend_reg_name(reg), "Vulkan") == 0;
}

// Backends whose buffer_from_host_ptr works although their caps say no (caps.buffer_from_host_ptr is about model
// files there): ggml-vulkan.
bool maps_without_cap(ggml_backend_dev_t dev) { return is_vulkan(dev); }

// Backends whose MUL_MAT_ID reads the experts of its weight as if they were dense (the expert stride ne1 * nb1, not
// nb2): a view of some rows of every expert gives wrong results there (measured on ggml-vulkan: rows [0, 17) of 64
// rows, 4 experts, normalized error 1.4), so the worker gives them a dense copy of those rows (weight_cache::get).
bool reads_experts_dense(ggml_backend_dev_t dev) { return is_vulkan(dev); }

}  // namespace

struct gpu_worker::impl {
    ggml_backend_t             backend = nullptr;
    bool                       backend_failed = false;
    ggml_backend_buffer_type_t buft = nullptr;
    std::unique_ptr<gpu::weight_cache> cache;
    ggml_context *             ctx = nullptr;      // per-call tensors and the graph, reset every call
    ggml_backend_buffer_t      scratch = nullptr;  // activations, ids and result rows on the device, reused
    // host-side packing and unpacking, one per use: an asynchronous copy may still read its source until the wait
    std::vector<uint8_t>       staging_x, staging_ids, staging_out;

    mutable std::mutex         stats_mtx;
    gpu_worker_stats           st;

    // Keeps the device's objects without freeing them: on a device that is gone, freeing sends messages that would
    // abort the process (ggml-rpc). They stay reachable for the rest of the process (not a leak to a leak checker).
    void abandon() {
        struct kept_objects {
            std::mutex mtx;
            std::vector<std::unique_ptr<gpu::weight_cache>> caches;
            std::vector<ggml_backend_buffer_t> buffers;
            std::vector<ggml_backend_t> backends;
        };
        static kept_objects * kept = new kept_objects;
        std::lock_guard<std::mutex> lock(kept->mtx);
        kept->caches.push_back(std::move(cache));
        if (scratch) kept->buffers.push_back(scratch);
        if (backend) kept->backends.push_back(backend);
        scratch = nullptr;
        backend = nullptr;
    }

    ~impl() {
        if (scratch) ggml_backend_buffer_free(scratch);
        cache.reset();   // its buffers go before the backend
        if (ctx) ggml_free(ctx);
        if (backend) ggml_backend_free(backend);
    }

    // Places `t` at `*offset` in the scratch buffer (which must be large enough: see scratch_need).
    void place(ggml_tensor * t, size_t & offset) {
        const size_t align = ggml_backend_buft_get_alignment(buft);
        offset = align_up(offset, align);
        ggml_backend_tensor_alloc(scratch, t, (char *) ggml_backend_buffer_get_base(scratch) + offset);
        offset += ggml_backend_buft_get_alloc_size(buft, t);
    }

    // result rows: trial runs alternate the two ways of reading them, then the faster one stays
    bool   read_decided = false, read_strided = true;
    int    read_trials = 0;
    double read_s[2] = { 0, 0 }, read_bytes[2] = { 0, 0 };   // [0] scatter, [1] strided

    bool pick_strided(gpu_worker_options::read_mode mode) const {
        if (mode != gpu_worker_options::read_mode::automatic) return mode == gpu_worker_options::read_mode::strided;
        return read_decided ? read_strided : read_trials % 2 == 0;
    }

    void learn_read(bool strided, double seconds, size_t bytes, const std::string & label) {
        read_s[strided] += seconds;
        read_bytes[strided] += (double) bytes;
        if (++read_trials < 8) return;
        const double gbs_scatter = read_bytes[0] / read_s[0] * 1e-9, gbs_strided = read_bytes[1] / read_s[1] * 1e-9;
        read_strided = gbs_strided >= gbs_scatter;
        read_decided = true;
        XDNA_LOG_DEBUG("%s reads result rows %s (strided %.1f GB/s, contiguous and scattered %.1f GB/s)", label.c_str(),
                       read_strided ? "strided" : "contiguously and scatters them", gbs_strided, gbs_scatter);
    }

    // Puts `out` ([rows, ne1, ne2, ne3] packed on the device) into rows `rows` of the host result, whose row of token
    // t starts at node->data + t*nb1: with one 2-D copy, or one contiguous read (a single message on RPC, which would
    // send one per row otherwise) and a scatter. Waits for the copies.
    void read_rows(const ggml_tensor * node, ggml_tensor * out, row_range rows, bool strided) {
        const size_t row_bytes = rows.size() * node->nb[0];
        char * dst0 = (char *) node->data + rows.begin * node->nb[0];
        if (strided) {
            ggml_backend_tensor_get_2d_async(backend, out, dst0, 0, row_bytes, node->ne[1] * node->ne[2] * node->ne[3],
                                             row_bytes, node->nb[1]);
            ggml_backend_synchronize(backend);
            return;
        }
        staging_out.resize(ggml_nbytes(out));
        ggml_backend_tensor_get_async(backend, out, staging_out.data(), 0, ggml_nbytes(out));
        ggml_backend_synchronize(backend);
        const uint8_t * src = staging_out.data();
        for (int64_t i3 = 0; i3 < node->ne[3]; ++i3) {
            for (int64_t i2 = 0; i2 < node->ne[2]; ++i2) {
                for (int64_t i1 = 0; i1 < node->ne[1]; ++i1, src += row_bytes) {
                    memcpy(dst0 + i1 * node->nb[1] + i2 * node->nb[2] + i3 * node->nb[3], src, row_bytes);
                }
            }
        }
    }

    bool ensure_scratch(size_t need) {
        if (scratch && ggml_backend_buffer_get_size(scratch) >= need) return true;
        if (scratch) ggml_backend_buffer_free(scratch);
        // grow with headroom, so a slightly larger batch does not reallocate every time
        scratch = ggml_backend_buft_alloc_buffer(buft, need + need / 4);
        return scratch != nullptr;
    }
};

gpu_worker::gpu_worker(ggml_backend_dev_t dev, gpu_worker_options opts) : p(new impl), dev(dev), opts(opts) {
    GGML_ASSERT(dev);
    label = std::string("GPU ") + ggml_backend_dev_name(dev);
    p->buft = ggml_backend_dev_buffer_type(dev);
    p->cache = std::make_unique<gpu::weight_cache>(p->buft, opts.cache_bytes);

    // several backends leave buffer_from_host_ptr NULL (CUDA, RPC) and the wrapper does not check: look first.
    // Vulkan has it but says caps.buffer_from_host_ptr = false (llama.cpp reads that cap to decide on mapping model
    // files, which Vulkan imports only page-aligned): it maps what it can (VK_EXT_external_memory_host, aligned ranges)
    // and returns null otherwise, and the worker then copies (build_graph). It maps only on an integrated GPU, whose
    // memory is the host's: a discrete GPU would read imported memory over the bus at every access, and on Mesa's
    // lavapipe (a CPU-type device) test-backend-ops' MUL_MAT cases crashed in lavapipe's own threads with mapped
    // activations (one multiply of 1 x 2,048 x 8,192 after some hundred others; never alone): tests ask for it there.
    ggml_backend_dev_props props;
    ggml_backend_dev_get_props(dev, &props);
    const bool vulkan_maps = maps_without_cap(dev) && (props.type == GGML_BACKEND_DEVICE_TYPE_IGPU || opts.map_any_vulkan);
    map_host = opts.map_host && dev->iface.buffer_from_host_ptr != nullptr &&
               (props.caps.buffer_from_host_ptr || vulkan_maps);

    ggml_init_params params = {
        /* .mem_size   = */ ggml_tensor_overhead() * 16 + ggml_graph_overhead_custom(16, false),
        /* .mem_buffer = */ nullptr,
        /* .no_alloc   = */ true,
    };
    p->ctx = ggml_init(params);
    start_thread();
}

gpu_worker::~gpu_worker() {
    stop_thread();
    if (lost || !still_there()) p->abandon();
}

// Whether the device is still there (opts.alive); the first time it is not, one line says so and the worker stops.
bool gpu_worker::still_there() {
    if (lost) return false;
    std::string why;
    if (!opts.alive || opts.alive(&why)) return true;
    lost = true;
    XDNA_LOG_ERROR("%s: %s; the GPU worker takes no more work (its rows go to the CPU)", label.c_str(), why.c_str());
    return false;
}

bool gpu_worker::accepts(const multiply & m) const {
    const ggml_tensor * node = m.node, * w = node->src[0];
    if (m.twin) return false;   // one multiply at a time (takes_pairs): the engine pairs none next to this worker
    if (lost) return false;     // the device is gone: the planner gives its rows to the others
    const ggml_tensor * base = w->view_src ? w->view_src : w;
    // the device copy is made from the weight's bytes: plain host memory, or the CPU's repacked layout, which the
    // copy inverts exactly (weight_cache.h) where the probe verified the inverse for this type. Other CPU buffers that
    // are not host buffers in ggml's sense (AMX) have layouts of their own: refused.
    if (m.repacked) {
        if (w->view_src || !xdna_weight_convertible(w, nullptr)) return false;
    } else if (!base->buffer || !ggml_backend_buffer_is_host(base->buffer)) {
        return false;
    }
    if (!ggml_is_contiguous(w) || w->data == nullptr) return false;
    if (!p->cache->fits(w)) return false;   // larger than the whole budget: it would be copied in on every call
    return ggml_backend_dev_supports_op(dev, node);
}

int64_t gpu_worker::row_align(const multiply &) const {
    return 1;
}

gpu_worker_stats gpu_worker::stats() const {
    std::lock_guard<std::mutex> lock(p->stats_mtx);
    gpu_worker_stats s = p->st;
    return s;
}

// One run: the rows, the device copy of the weight, and the per-call tensors of the one-node graph.
struct gpu_worker::call {
    const ggml_tensor * node = nullptr;
    row_range           rows;
    double              t0 = 0.0;
    gpu::weight_cache::lookup weight;
    ggml_tensor *       x = nullptr, * xi = nullptr, * out = nullptr;   // activations, expert ids, product (device)
    ggml_tensor *       wv = nullptr;                                   // the rows' view of the device weight
    ggml_tensor *       dv = nullptr, * scatter = nullptr;              // mapped: the host result and the copy into it
    bool                mapped = false;                                 // activations and result mapped in place
    host_mapping        x_map, d_map;
    bool                strided = false;                                // result rows read with one 2-D copy
    double              t_io = 0.0;
    double              t_submitted = 0.0;                              // the graph queued (compute_rows)
};

work_record gpu_worker::failed(work_failure why, const char * detail, double t0) {
    return work_record::failed(why, detail, now_seconds() - t0);
}

// The backend instance, created on the worker's thread at its first multiply (a GPU that never gets one costs nothing).
work_record gpu_worker::open_backend() {
    if (p->backend || p->backend_failed) return p->backend ? work_record() : work_record::failed(work_failure::device_unavailable);
    p->backend = ggml_backend_dev_init(dev, nullptr);
    if (p->backend) return {};
    p->backend_failed = true;
    XDNA_LOG_ERROR("cannot open %s for the GPU worker; its rows go to the CPU", ggml_backend_dev_name(dev));
    return work_record::failed(work_failure::device_unavailable);
}

// The weight resident on the device, and the one-node graph on a view of the rows. Where the device maps host
// memory, the activations are read and the result rows written in place: the product goes to device scratch and a
// copy node scatters it into the strided rows of the host result.
work_record gpu_worker::build_graph(call & c) {
    const ggml_tensor * node = c.node, * w = node->src[0], * src1 = node->src[1];
    const bool is_id = node->op == GGML_OP_MUL_MAT_ID;
    const bool slice = is_id && reads_experts_dense(dev) && c.rows.size() != w->ne[1];
    c.weight = slice ? p->cache->get(w, c.rows.begin, c.rows.end) : p->cache->get(w);
    if (!c.weight.tensor) return work_record::failed(work_failure::device_memory, "for the weight");
    const ggml_tensor * ids = is_id ? node->src[2] : nullptr;
    ggml_context * ctx = p->ctx;
    ggml_reset(ctx);
    const ggml_tensor * dw = c.weight.tensor;
    c.wv  = ggml_view_3d(ctx, c.weight.tensor, w->ne[0], c.rows.size(), w->ne[2], dw->nb[1], dw->nb[2],
                         (slice ? 0 : c.rows.begin) * dw->nb[1]);
    c.x   = ggml_new_tensor(ctx, GGML_TYPE_F32, GGML_MAX_DIMS, src1->ne);
    c.xi  = is_id ? ggml_new_tensor(ctx, GGML_TYPE_I32, GGML_MAX_DIMS, ids->ne) : nullptr;
    c.out = is_id ? ggml_mul_mat_id(ctx, c.wv, c.x, c.xi) : ggml_mul_mat(ctx, c.wv, c.x);
    memcpy(c.out->op_params, node->op_params, sizeof(c.out->op_params));   // the precision requests go to the device (claim.h)
    GGML_ASSERT(c.out->ne[0] == c.rows.size() && c.out->ne[1] == node->ne[1] && c.out->ne[2] == node->ne[2]);

    c.mapped = map_host && ggml_is_contiguous(src1);
    if (c.mapped) {
        const size_t d_off = c.rows.begin * node->nb[0];
        c.mapped = map_host_range(dev, src1->data, ggml_nbytes(src1), c.x_map) &&
                   map_host_range(dev, (const char *) node->data + d_off, ggml_nbytes(node) - d_off, c.d_map);
        if (c.mapped) {
            c.dv = ggml_new_tensor(ctx, GGML_TYPE_F32, GGML_MAX_DIMS, c.out->ne);
            for (int i = 1; i < GGML_MAX_DIMS; ++i) c.dv->nb[i] = node->nb[i];
            c.scatter = ggml_cpy(ctx, c.out, c.dv);
            c.mapped = ggml_backend_supports_op(p->backend, c.scatter);
        }
        if (!c.mapped) {
            // the device offered mapping but refused this memory (alignment, size): copying always works
            XDNA_LOG_DEBUG("%s cannot map this host memory; it copies activations and results instead", label.c_str());
            map_host = false;
            c.dv = c.scatter = nullptr;
        }
    }
    if (!ggml_backend_supports_op(p->backend, c.out)) return work_record::failed(work_failure::unsupported);
    return {};
}

// Device memory for the per-call tensors (scratch, reused), or the host's own where mapped.
work_record gpu_worker::place_tensors(call & c) {
    const size_t align = ggml_backend_buft_get_alignment(p->buft);
    size_t need = 0;
    if (!c.mapped) need += align_up(ggml_backend_buft_get_alloc_size(p->buft, c.x), align);
    if (c.xi) need += align_up(ggml_backend_buft_get_alloc_size(p->buft, c.xi), align);
    need += align_up(ggml_backend_buft_get_alloc_size(p->buft, c.out), align) + align;
    if (!p->ensure_scratch(need)) return work_record::failed(work_failure::device_memory, "for the activations");
    size_t offset = 0;
    if (c.mapped) {
        ggml_backend_tensor_alloc(c.x_map.buf, c.x, c.x_map.at(c.node->src[1]->data));
        ggml_backend_tensor_alloc(c.d_map.buf, c.dv, c.d_map.at((char *) c.node->data + c.rows.begin * c.node->nb[0]));
    } else {
        p->place(c.x, offset);
    }
    if (c.xi) p->place(c.xi, offset);
    p->place(c.out, offset);
    if (ggml_backend_view_init(c.wv) != GGML_STATUS_SUCCESS) return work_record::failed(work_failure::device_memory, "no row view");
    if (c.scatter && ggml_backend_view_init(c.scatter) != GGML_STATUS_SUCCESS) {
        return work_record::failed(work_failure::device_memory, "no result view");
    }
    return {};
}

// In, compute, out: all queued on the backend's stream, then one wait (RPC and CUDA return before the work is
// done; reading the result before the wait would read stale memory).
work_record gpu_worker::compute_rows(call & c) {
    const ggml_tensor * node = c.node;
    c.t_io = now_seconds();
    if (!c.mapped) ggml_backend_tensor_set_async(p->backend, c.x, packed(node->src[1], p->staging_x), 0, ggml_nbytes(c.x));
    if (c.xi) ggml_backend_tensor_set_async(p->backend, c.xi, packed(node->src[2], p->staging_ids), 0, ggml_nbytes(c.xi));

    ggml_cgraph * g = ggml_new_graph_custom(p->ctx, 16, false);
    ggml_build_forward_expand(g, c.scatter ? c.scatter : c.out);
    if (ggml_backend_graph_compute_async(p->backend, g) != GGML_STATUS_SUCCESS) {
        ggml_backend_synchronize(p->backend);
        return work_record::failed(work_failure::device_run);
    }
    c.t_submitted = now_seconds();
    if (c.mapped) {
        ggml_backend_synchronize(p->backend);
        return {};
    }
    const bool dense_23 = node->nb[2] == node->ne[1] * node->nb[1] && node->nb[3] == node->ne[2] * node->nb[2];
    const bool can_2d = p->backend->iface.get_tensor_2d_async != nullptr && dense_23;
    c.strided = can_2d && p->pick_strided(opts.out);
    if (can_2d && opts.out == gpu_worker_options::read_mode::automatic && !p->read_decided) {
        // on trial: the read alone is timed, so wait for the computation first
        ggml_backend_synchronize(p->backend);
        const double r0 = now_seconds();
        p->read_rows(node, c.out, c.rows, c.strided);
        p->learn_read(c.strided, now_seconds() - r0, ggml_nbytes(c.out), label);
    } else {
        p->read_rows(node, c.out, c.rows, c.strided);
    }
    return {};
}

work_record gpu_worker::run(const multiply & m, row_range rows) {
    trace::name_thread("GPU worker");
    trace::scope ts("gpu rows", rows.size());
    if (rows.empty()) return {};
    call c;
    c.node = m.node;
    c.rows = rows;
    c.t0   = now_seconds();
    if (!still_there()) return failed(work_failure::device_unavailable, "the device is gone", c.t0);
    work_record r = open_backend();
    if (r.ok()) r = build_graph(c);
    if (r.ok()) r = place_tensors(c);
    if (r.ok()) r = compute_rows(c);
    if (!r.ok()) return failed(r.reason, r.detail.c_str(), c.t0);
    const double t1 = now_seconds();
    {
        std::lock_guard<std::mutex> lock(p->stats_mtx);
        p->st.mapped_runs += c.mapped ? 1 : 0;
        p->st.strided_reads += !c.mapped && c.strided ? 1 : 0;
        p->st.scatter_reads += !c.mapped && !c.strided ? 1 : 0;
        p->st.weight_uploads = p->cache->uploads();
        p->st.resident_bytes = p->cache->used();
        p->st.resident_weights = p->cache->size();
        p->st.upload_seconds += c.weight.upload_seconds;
        p->st.io_seconds += t1 - c.t_io;
    }
    // the planner learns a steady speed: a weight's first copy is a one-time cost and is left out, while a copy
    // after an eviction (the budget is too small for the working set) is part of what this worker costs
    // What does not grow with the rows is measured apart, as the NPU's is: everything up to the queued graph (the
    // weight's lookup, the graph, mapping or copying the activations, the submit). The rest, the computation and the
    // result rows, grows with them. The planner learns the two apart (planner_gpu.cpp).
    const double first_copy = c.weight.uploaded && !c.weight.again ? c.weight.upload_seconds : 0.0;
    work_record res;
    res.seconds = t1 - c.t0 - first_copy;
    res.fixed_seconds = std::max(0.0, c.t_submitted - c.t0 - first_copy);
    return res;
}

}  // namespace xdna
