// ggml-xdna: the ggml backend interface (reg, device, backend), in the order of ggml-blas: context, backend
// interface, device interface, reg interface, DL entry points. The work itself is in compute.cpp and the workers.
#include "backend/compute.h"
#include "backend/device.h"
#include "backend/ggml_check.h"
#include "os/os.h"
#include "config/config.h"
#include "util/log.h"
#include "util/own_file.h"

#include "ggml-backend-impl.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "xdna_ggml_compat.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <vector>
#include <memory>
#include <unordered_map>

using namespace xdna;

static device_state & xdna_state() {
    // destroyed at exit, unless the OS has ended its workers' threads by then (Windows): joining them would hang
    static std::unique_ptr<device_state, void (*)(device_state *)> state(new device_state(), [](device_state * s) {
        if (!os::threads_ended_at_exit()) delete s;
    });
    return *state;
}

//
// backend (stream)
//

struct ggml_backend_xdna_context {
    std::unique_ptr<cpu_worker>     cpu;
    std::unique_ptr<compute_engine> engine;

    // The multiplies of the graph ggml computes next, in order, from every split it handed the backend before
    // computing the first (graph_optimize): where a multiply's next one reads the same input from a later split
    // (Q's input is K and V's, with Q's norm and rope between), the engine begins that one ahead (run_ahead).
    struct planned_multiply {
        const ggml_tensor * node, * twin;
        // node's, as noted: a node at the same address in another graph (one handed to graph_compute without its
        // graph_optimize) is not taken for it
        const ggml_tensor * weight, * input;
        int                 split;
    };
    std::vector<planned_multiply>                   order;
    std::unordered_map<const ggml_tensor *, size_t> order_of;
    int  splits = 0;
    bool computed = true;   // since the order was written: the next graph_optimize starts a new one
};

static ggml_guid_t ggml_backend_xdna_guid() {
    static ggml_guid guid = { 0x58, 0x44, 0x4e, 0x41, 0x31, 0x2d, 0x67, 0x67, 0x6d, 0x6c, 0x2d, 0x78, 0x64, 0x6e, 0x61, 0x01 };
    return &guid;
}

// The backend's context, checked: the functions handed out through get_proc_address can be called with any backend,
// and only an XDNA one has this context (null otherwise, and one line names the function `fn` that refused it).
static ggml_backend_xdna_context * ggml_backend_xdna_context_of(ggml_backend_t backend, const char * fn) {
    if (backend != nullptr && ggml_guid_matches(backend->guid, ggml_backend_xdna_guid())) {
        return (ggml_backend_xdna_context *) backend->context;
    }
    XDNA_LOG_ERROR("%s of the XDNA backend called with another backend (%s): ignored", fn,
                   backend ? ggml_backend_name(backend) : "null");
    return nullptr;
}

static const char * ggml_backend_xdna_get_name(ggml_backend_t) {
    return "XDNA";
}

// What the planner learned over the process so far: its summary, then one line per shape (for the debug log and the
// report file alike)
static std::vector<std::string> ggml_backend_xdna_planner_lines() {
    const split_planner & planner = xdna_state().planner;
    std::vector<std::string> lines = { "planner: " + planner.summary() };
    for (const std::string & l : planner.shape_report()) lines.push_back("planner: " + l);
    return lines;
}

static void ggml_backend_xdna_free(ggml_backend_t backend) {
    auto * ctx = (ggml_backend_xdna_context *) backend->context;
    if (!ctx->engine->idle()) {
        xdna_state().keep_planner_state(ctx->cpu->threads());
        const std::string line = ctx->engine->summary();
        XDNA_LOG_SUMMARY("%s", line.c_str());
        const std::string & report = get_config().report;
        if (!report.empty()) {
            // llama.cpp's logger can lose its last lines at exit: scripts read the summary from this file. What the
            // planner learned first, for whoever reads why auto chose what it did; then the summary, last, where
            // scripts read it
            std::string text;
            for (const std::string & l : ggml_backend_xdna_planner_lines()) text += l + "\n";
            text += "ggml-xdna: " + line + "\n";
            // a file this plugin appended to starts with one of its own lines; any other file is left alone
            const auto own = [](const std::string & head) {
                return head.rfind("planner: ", 0) == 0 || head.rfind("ggml-xdna: ", 0) == 0;
            };
            std::string why;
            static std::atomic<bool> refused{ false };   // one line, not one per backend freed
            if (!refused && !append_own_file(report, own, text, &why)) {
                XDNA_LOG_WARN("GGML_XDNA_REPORT=%s %s; the summary is not written there", report.c_str(), why.c_str());
                refused = true;
            }
        }
    }
    delete ctx;
    delete backend;
    if (get_config().debug) {
        for (const std::string & l : ggml_backend_xdna_planner_lines()) XDNA_LOG_SUMMARY("%s", l.c_str());
    }
}

// Whether the graph asks `node` to compute anything: views, reshapes and nodes without the compute flag do not.
static bool ggml_backend_xdna_computes(const ggml_tensor * node) {
    if ((node->flags & GGML_TENSOR_FLAG_COMPUTE) == 0) return false;
    switch (node->op) {
        case GGML_OP_NONE: case GGML_OP_RESHAPE: case GGML_OP_VIEW: case GGML_OP_PERMUTE: case GGML_OP_TRANSPOSE:
            return false;
        default:
            return true;
    }
}

// The node after `i` that computes something, or -1.
static int ggml_backend_xdna_next_computed(const struct ggml_cgraph * cgraph, int i) {
    for (int j = i + 1; j < cgraph->n_nodes; j++) {
        if (ggml_backend_xdna_computes(cgraph->nodes[j])) return j;
    }
    return -1;
}

// The multiply computed with node i as one (K after V, up after gate: the next node computed, of the same input), or
// null; *j is its index.
static const ggml_tensor * ggml_backend_xdna_twin_of(const ggml_backend_xdna_context * ctx, const struct ggml_cgraph * cgraph,
                                                     int i, int * j) {
    *j = ctx->engine->pairs() ? ggml_backend_xdna_next_computed(cgraph, i) : -1;
    return *j >= 0 && can_pair(cgraph->nodes[i], cgraph->nodes[*j]) ? cgraph->nodes[*j] : nullptr;
}

// The multiply to begin ahead once `node` (with `twin`) is computed: the next one in the graph, where it reads the
// same input in a later split; null otherwise.
static const ggml_backend_xdna_context::planned_multiply * ggml_backend_xdna_ahead_of(const ggml_backend_xdna_context * ctx,
                                                                                      const ggml_tensor * node,
                                                                                      const ggml_tensor * twin) {
    const auto it = ctx->order_of.find(node);
    if (node->op != GGML_OP_MUL_MAT || it == ctx->order_of.end() || it->second + 1 >= ctx->order.size()) return nullptr;
    const auto & cur = ctx->order[it->second], & next = ctx->order[it->second + 1];
    if (cur.node != node || cur.twin != twin || cur.weight != node->src[0] || cur.input != node->src[1] ||
        next.split <= cur.split) {
        return nullptr;
    }
    return next.input == node->src[1] && next.node->op == GGML_OP_MUL_MAT ? &next : nullptr;
}

static enum ggml_status ggml_backend_xdna_graph_compute(ggml_backend_t backend, struct ggml_cgraph * cgraph) {
    auto * ctx = (ggml_backend_xdna_context *) backend->context;
    xdna_state().prompt_arrived(ctx->cpu->threads());
    next_graph();
    ctx->computed = true;
    for (int i = 0; i < cgraph->n_nodes; i++) {
        ggml_tensor * node = cgraph->nodes[i];
        if (!ggml_backend_xdna_computes(node)) continue;
        switch (node->op) {
            case GGML_OP_MUL_MAT:
            case GGML_OP_MUL_MAT_ID: {
                int j = -1;
                const ggml_tensor * twin = ggml_backend_xdna_twin_of(ctx, cgraph, i, &j);
                const ggml_status st = ctx->engine->compute(node, twin);
                if (st != GGML_STATUS_SUCCESS) return st;
                if (const auto * next = ggml_backend_xdna_ahead_of(ctx, node, twin)) ctx->engine->run_ahead(next->node, next->twin);
                if (twin) i = j;
                break;
            }
            default:
                XDNA_LOG_ERROR("asked to compute %s, which it never claims", ggml_op_desc(node));
                return GGML_STATUS_FAILED;
        }
    }
    return GGML_STATUS_SUCCESS;
}

// Where ggml hands the backend its part of a graph before computing it (at the context's reserve, before the first
// prompt, and for every graph after): the weights its multiplies will read are offered to the NPU's warm-up, which
// converts them in the background until the first prompt arrives.
#if XDNA_HAS_GRAPH_OPTIMIZE_PARAMS
static void ggml_backend_xdna_graph_optimize(ggml_backend_t backend, struct ggml_cgraph * cgraph,
                                             struct ggml_backend_graph_optimize_params *) {
#else
static void ggml_backend_xdna_graph_optimize(ggml_backend_t backend, struct ggml_cgraph * cgraph) {
#endif
    device_state & st = xdna_state();
    for (int i = 0; i < cgraph->n_nodes; i++) st.offer_weight(cgraph->nodes[i]);
    auto * ctx = (ggml_backend_xdna_context *) backend->context;
    if (ctx->computed) {
        ctx->order.clear();
        ctx->order_of.clear();
        ctx->splits   = 0;
        ctx->computed = false;
    }
    for (int i = 0; i < cgraph->n_nodes; i++) {
        const ggml_tensor * node = cgraph->nodes[i];
        if (!ggml_backend_xdna_computes(node) || (node->op != GGML_OP_MUL_MAT && node->op != GGML_OP_MUL_MAT_ID)) continue;
        int j = -1;
        const ggml_tensor * twin = ggml_backend_xdna_twin_of(ctx, cgraph, i, &j);
        ctx->order_of[node] = ctx->order.size();
        ctx->order.push_back({ node, twin, node->src[0], node->src[1], ctx->splits });
        if (twin) i = j;
    }
    ctx->splits++;
}

// The interface tables are filled by member name (every other slot null), not by position: the structs grew members in
// the middle between the supported ggml versions (cmake/ggml.cmake).
static ggml_backend_i make_backend_i() {
    ggml_backend_i i{};
    i.get_name      = ggml_backend_xdna_get_name;
    i.free          = ggml_backend_xdna_free;
    i.graph_compute  = ggml_backend_xdna_graph_compute;
    i.graph_optimize = ggml_backend_xdna_graph_optimize;
    return i;
}
static const ggml_backend_i ggml_backend_xdna_i = make_backend_i();

static void ggml_backend_xdna_set_n_threads(ggml_backend_t backend, int n_threads) {
    if (ggml_backend_xdna_context * ctx = ggml_backend_xdna_context_of(backend, "ggml_backend_set_n_threads")) {
        ctx->cpu->set_n_threads(n_threads);
    }
}

static void ggml_backend_xdna_set_abort_callback(ggml_backend_t backend, ggml_abort_callback cb, void * data) {
    if (ggml_backend_xdna_context * ctx = ggml_backend_xdna_context_of(backend, "ggml_backend_set_abort_callback")) {
        ctx->cpu->set_abort_callback(cb, data);
    }
}

//
// device
//

static const char * ggml_backend_xdna_device_get_name(ggml_backend_dev_t) {
    return "XDNA";
}

static const char * ggml_backend_xdna_device_get_description(ggml_backend_dev_t) {
    static std::string desc = xdna_state().description();
    return desc.c_str();
}

static void ggml_backend_xdna_device_get_memory(ggml_backend_dev_t, size_t * free, size_t * total) {
    // host memory, shared with the CPU backend: nothing of its own to report (like BLAS)
    *free  = 0;
    *total = 0;
}

static enum ggml_backend_dev_type ggml_backend_xdna_device_get_type(ggml_backend_dev_t) {
    return GGML_BACKEND_DEVICE_TYPE_ACCEL;
}

static void ggml_backend_xdna_device_get_props(ggml_backend_dev_t dev, struct ggml_backend_dev_props * props) {
    props->name        = ggml_backend_xdna_device_get_name(dev);
    props->description = ggml_backend_xdna_device_get_description(dev);
    props->type        = ggml_backend_xdna_device_get_type(dev);
    ggml_backend_xdna_device_get_memory(dev, &props->memory_free, &props->memory_total);
    props->caps = {};
    props->caps.async                = false;
    props->caps.host_buffer          = false;
    props->caps.buffer_from_host_ptr = true;
    props->caps.events               = false;
#if XDNA_HAS_DEV_CAPS_MMAP
    props->caps.mmap_support         = true;
#endif
}

static ggml_backend_t ggml_backend_xdna_device_init_backend(ggml_backend_dev_t dev, const char *) {
    device_state & st = xdna_state();
    ggml_backend_dev_t cpu_dev = st.cpu_device();
    if (!cpu_dev) {
        XDNA_LOG_ERROR("no CPU backend is registered; the XDNA backend needs it for its CPU worker");
        return nullptr;
    }
    std::unique_ptr<cpu_worker> cpu = cpu_worker::create(cpu_dev);
    if (!cpu) return nullptr;   // said in one line
    auto * ctx   = new ggml_backend_xdna_context;
    ctx->cpu     = std::move(cpu);
    ctx->engine  = std::make_unique<compute_engine>(st.planner, st.decode_planner, st.cfg.min_batch, *ctx->cpu,
                                                    st.device_workers);
    auto * backend    = new ggml_backend{};
    backend->guid     = ggml_backend_xdna_guid();
    backend->iface    = ggml_backend_xdna_i;
    backend->device   = dev;
    backend->context  = ctx;
    return backend;
}

static ggml_backend_buffer_type_t ggml_backend_xdna_device_get_buffer_type(ggml_backend_dev_t) {
    return ggml_backend_cpu_buffer_type();
}

static ggml_backend_buffer_t ggml_backend_xdna_device_buffer_from_host_ptr(ggml_backend_dev_t, void * ptr, size_t size, size_t) {
    return ggml_backend_cpu_buffer_from_ptr(ptr, size);
}

static bool ggml_backend_xdna_device_supports_op(ggml_backend_dev_t, const struct ggml_tensor * op) {
    device_state & st = xdna_state();
    std::string why;
    const bool ok = claim(op, st.claim_ctx(), &why);
    st.log_decision_once(op, ok, why);
    return ok;
}

static bool ggml_backend_xdna_device_supports_buft(ggml_backend_dev_t, ggml_backend_buffer_type_t buft) {
    return claim_weight_buft(buft, xdna_state().claim_ctx());
}

static ggml_backend_device_i make_device_i() {
    ggml_backend_device_i i{};
    i.get_name             = ggml_backend_xdna_device_get_name;
    i.get_description      = ggml_backend_xdna_device_get_description;
    i.get_memory           = ggml_backend_xdna_device_get_memory;
    i.get_type             = ggml_backend_xdna_device_get_type;
    i.get_props            = ggml_backend_xdna_device_get_props;
    i.init_backend         = ggml_backend_xdna_device_init_backend;
    i.get_buffer_type      = ggml_backend_xdna_device_get_buffer_type;
    i.buffer_from_host_ptr = ggml_backend_xdna_device_buffer_from_host_ptr;
    i.supports_op          = ggml_backend_xdna_device_supports_op;
    i.supports_buft        = ggml_backend_xdna_device_supports_buft;
    return i;
}

//
// reg
//

static const char * ggml_backend_xdna_reg_get_name(ggml_backend_reg_t) {
    return "XDNA";
}

static size_t ggml_backend_xdna_reg_get_device_count(ggml_backend_reg_t) {
    return xdna_state().offered ? 1 : 0;   // no device when no worker would gain anything over stock llama.cpp
}

static ggml_backend_dev_t ggml_backend_xdna_reg_get_device(ggml_backend_reg_t reg, size_t index) {
    GGML_ASSERT(index == 0);
    static ggml_backend_device device = [reg] {
        ggml_backend_device d{};
        d.iface   = make_device_i();
        d.reg     = reg;
        d.context = nullptr;
        return d;
    }();
    return &device;
}

static void * ggml_backend_xdna_get_proc_address(ggml_backend_reg_t, const char * name) {
    if (strcmp(name, "ggml_backend_set_n_threads") == 0) return (void *) ggml_backend_xdna_set_n_threads;
    if (strcmp(name, "ggml_backend_set_abort_callback") == 0) return (void *) ggml_backend_xdna_set_abort_callback;
    return nullptr;
}

static ggml_backend_reg_i make_reg_i() {
    ggml_backend_reg_i i{};
    i.get_name         = ggml_backend_xdna_reg_get_name;
    i.get_device_count = ggml_backend_xdna_reg_get_device_count;
    i.get_device       = ggml_backend_xdna_reg_get_device;
    i.get_proc_address = ggml_backend_xdna_get_proc_address;
    return i;
}

static ggml_backend_reg_t ggml_backend_xdna_reg() {
    static ggml_backend_reg reg = [] {
        ggml_backend_reg r{};
        r.api_version = GGML_BACKEND_API_VERSION;
        r.iface       = make_reg_i();
        r.context     = nullptr;
        return r;
    }();
    static bool announced = false;
    if (!announced) {
        announced = true;
        if (xdna_state().offered) {
            XDNA_LOG_INFO("loaded (ggml %s): %s", XDNA_GGML_VERSION, xdna_state().description().c_str());
        } else {   // shown by every tool: the plugin does nothing here
            XDNA_LOG_WARN("%s", xdna_state().description().c_str());
        }
    }
    return &reg;
}

// The loader's gate: 0 refuses the plugin. The backend interface has no stable ABI, so the plugin only loads into the
// ggml it was built against (ggml_check.h says what is compared); GGML_XDNA_DISABLE=1 hides it entirely.
static int ggml_backend_xdna_score() {
    if (get_config().disable) {
        XDNA_LOG_INFO("disabled by GGML_XDNA_DISABLE");
        return 0;
    }
    const ggml_facts built = ggml_built_facts();
    std::string why;
    if (!ggml_matches(built, ggml_loaded_facts(built), &why)) {
        XDNA_LOG_ERROR("%s", why.c_str());
        return 0;
    }
    return 1;
}

GGML_BACKEND_DL_IMPL(ggml_backend_xdna_reg)
GGML_BACKEND_DL_SCORE_IMPL(ggml_backend_xdna_score)
