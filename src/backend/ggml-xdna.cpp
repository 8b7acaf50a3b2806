// ggml-xdna: the ggml backend interface (reg, device, backend), in the order of ggml-blas: context, backend
// interface, device interface, reg interface, DL entry points. The work itself is in compute.cpp and the workers.
#include "backend/compute.h"
#include "backend/device.h"
#include "util/log.h"

#include "ggml-backend-impl.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

#include <cstdio>
#include <cstring>
#include <memory>

using namespace xdna;

static device_state & xdna_state() {
    static device_state state;
    return state;
}

//
// backend (stream)
//

struct ggml_backend_xdna_context {
    std::unique_ptr<cpu_worker>     cpu;
    std::unique_ptr<compute_engine> engine;
};

static const char * ggml_backend_xdna_get_name(ggml_backend_t) {
    return "XDNA";
}

static void ggml_backend_xdna_free(ggml_backend_t backend) {
    auto * ctx = (ggml_backend_xdna_context *) backend->context;
    if (!ctx->engine->idle()) {
        const std::string line = ctx->engine->summary();
        XDNA_LOG_SUMMARY("%s", line.c_str());
        const std::string & report = get_config().report;
        if (!report.empty()) {
            // llama.cpp's logger can lose its last lines at exit: scripts read the summary from this file
            if (FILE * f = fopen(report.c_str(), "a")) {
                fprintf(f, "ggml-xdna: %s\n", line.c_str());
                fclose(f);
            } else {
                XDNA_LOG_WARN("cannot write GGML_XDNA_REPORT=%s", report.c_str());
            }
        }
    }
    delete ctx;
    delete backend;
    if (get_config().debug) {
        // what the planner learned, per shape, over the process so far
        device_state & st = xdna_state();
        XDNA_LOG_SUMMARY("planner: %s", st.planner.summary().c_str());
        for (const std::string & line : st.planner.shape_report()) XDNA_LOG_SUMMARY("planner: %s", line.c_str());
    }
}

static enum ggml_status ggml_backend_xdna_graph_compute(ggml_backend_t backend, struct ggml_cgraph * cgraph) {
    auto * ctx = (ggml_backend_xdna_context *) backend->context;
    xdna_state().prompt_arrived();
    for (int i = 0; i < cgraph->n_nodes; i++) {
        ggml_tensor * node = cgraph->nodes[i];
        if ((node->flags & GGML_TENSOR_FLAG_COMPUTE) == 0) continue;
        switch (node->op) {
            case GGML_OP_MUL_MAT:
            case GGML_OP_MUL_MAT_ID: {
                const ggml_status st = ctx->engine->compute(node);
                if (st != GGML_STATUS_SUCCESS) return st;
                break;
            }
            case GGML_OP_NONE:
            case GGML_OP_RESHAPE:
            case GGML_OP_VIEW:
            case GGML_OP_PERMUTE:
            case GGML_OP_TRANSPOSE:
                break;
            default:
                XDNA_LOG_ERROR("asked to compute %s, which it never claims", ggml_op_desc(node));
                return GGML_STATUS_FAILED;
        }
    }
    return GGML_STATUS_SUCCESS;
}

static struct ggml_backend_i ggml_backend_xdna_i = {
    /* .get_name            = */ ggml_backend_xdna_get_name,
    /* .free                = */ ggml_backend_xdna_free,
    /* .set_tensor_async    = */ NULL,
    /* .get_tensor_async    = */ NULL,
    /* .set_tensor_2d_async = */ NULL,
    /* .get_tensor_2d_async = */ NULL,
    /* .cpy_tensor_async    = */ NULL,
    /* .synchronize         = */ NULL,
    /* .graph_plan_create   = */ NULL,
    /* .graph_plan_free     = */ NULL,
    /* .graph_plan_update   = */ NULL,
    /* .graph_plan_compute  = */ NULL,
    /* .graph_compute       = */ ggml_backend_xdna_graph_compute,
    /* .event_record        = */ NULL,
    /* .event_wait          = */ NULL,
    /* .graph_optimize      = */ NULL,
};

static ggml_guid_t ggml_backend_xdna_guid() {
    static ggml_guid guid = { 0x58, 0x44, 0x4e, 0x41, 0x31, 0x2d, 0x67, 0x67, 0x6d, 0x6c, 0x2d, 0x78, 0x64, 0x6e, 0x61, 0x01 };
    return &guid;
}

static void ggml_backend_xdna_set_n_threads(ggml_backend_t backend, int n_threads) {
    auto * ctx = (ggml_backend_xdna_context *) backend->context;
    ctx->cpu->set_n_threads(n_threads);
}

static void ggml_backend_xdna_set_abort_callback(ggml_backend_t backend, ggml_abort_callback cb, void * data) {
    auto * ctx = (ggml_backend_xdna_context *) backend->context;
    ctx->cpu->set_abort_callback(cb, data);
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
    props->caps = {
        /* .async                = */ false,
        /* .host_buffer          = */ false,
        /* .buffer_from_host_ptr = */ true,
        /* .events               = */ false,
        /* .mmap_support         = */ true,
    };
}

static ggml_backend_t ggml_backend_xdna_device_init_backend(ggml_backend_dev_t dev, const char *) {
    device_state & st = xdna_state();
    ggml_backend_dev_t cpu_dev = st.cpu_device();
    if (!cpu_dev) {
        XDNA_LOG_ERROR("no CPU backend is registered; the XDNA backend needs it for its CPU worker");
        return nullptr;
    }
    auto * ctx   = new ggml_backend_xdna_context;
    ctx->cpu     = std::make_unique<cpu_worker>(cpu_dev, st.repack_buft());
    ctx->engine  = std::make_unique<compute_engine>(st.planner, st.decode_planner, st.cfg.min_batch, *ctx->cpu,
                                                    st.device_workers);
    return new ggml_backend{ ggml_backend_xdna_guid(), ggml_backend_xdna_i, dev, ctx };
}

static ggml_backend_buffer_type_t ggml_backend_xdna_device_get_buffer_type(ggml_backend_dev_t) {
    return ggml_backend_cpu_buffer_type();
}

static ggml_backend_buffer_t ggml_backend_xdna_device_buffer_from_host_ptr(ggml_backend_dev_t, void * ptr, size_t size, size_t) {
    return ggml_backend_cpu_buffer_from_ptr(ptr, size);
}

static bool ggml_backend_xdna_device_supports_op(ggml_backend_dev_t, const struct ggml_tensor * op) {
    device_state & st = xdna_state();
    const char * why = nullptr;
    const bool ok = claim(op, st.claim_ctx(), &why);
    st.log_decision_once(op, ok, why);
    if (ok) st.offer_weight(op);
    return ok;
}

static bool ggml_backend_xdna_device_supports_buft(ggml_backend_dev_t, ggml_backend_buffer_type_t buft) {
    return claim_weight_buft(buft, xdna_state().claim_ctx());
}

static const struct ggml_backend_device_i ggml_backend_xdna_device_i = {
    /* .get_name             = */ ggml_backend_xdna_device_get_name,
    /* .get_description      = */ ggml_backend_xdna_device_get_description,
    /* .get_memory           = */ ggml_backend_xdna_device_get_memory,
    /* .get_type             = */ ggml_backend_xdna_device_get_type,
    /* .get_props            = */ ggml_backend_xdna_device_get_props,
    /* .init_backend         = */ ggml_backend_xdna_device_init_backend,
    /* .get_buffer_type      = */ ggml_backend_xdna_device_get_buffer_type,
    /* .get_host_buffer_type = */ NULL,
    /* .buffer_from_host_ptr = */ ggml_backend_xdna_device_buffer_from_host_ptr,
    /* .supports_op          = */ ggml_backend_xdna_device_supports_op,
    /* .supports_buft        = */ ggml_backend_xdna_device_supports_buft,
    /* .offload_op           = */ NULL,
    /* .event_new            = */ NULL,
    /* .event_free           = */ NULL,
    /* .event_synchronize    = */ NULL,
};

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
    static ggml_backend_device device = {
        /* .iface   = */ ggml_backend_xdna_device_i,
        /* .reg     = */ reg,
        /* .context = */ nullptr,
    };
    return &device;
}

static void * ggml_backend_xdna_get_proc_address(ggml_backend_reg_t, const char * name) {
    if (strcmp(name, "ggml_backend_set_n_threads") == 0) return (void *) ggml_backend_xdna_set_n_threads;
    if (strcmp(name, "ggml_backend_set_abort_callback") == 0) return (void *) ggml_backend_xdna_set_abort_callback;
    return nullptr;
}

static const struct ggml_backend_reg_i ggml_backend_xdna_reg_i = {
    /* .get_name         = */ ggml_backend_xdna_reg_get_name,
    /* .get_device_count = */ ggml_backend_xdna_reg_get_device_count,
    /* .get_device       = */ ggml_backend_xdna_reg_get_device,
    /* .get_proc_address = */ ggml_backend_xdna_get_proc_address,
};

static ggml_backend_reg_t ggml_backend_xdna_reg() {
    static struct ggml_backend_reg reg = {
        /* .api_version = */ GGML_BACKEND_API_VERSION,
        /* .iface       = */ ggml_backend_xdna_reg_i,
        /* .context     = */ nullptr,
    };
    static bool announced = false;
    if (!announced) {
        announced = true;
        if (xdna_state().offered) {
            XDNA_LOG_INFO("loaded (ggml %s, commit %s): %s", XDNA_GGML_VERSION, XDNA_GGML_COMMIT,
                          xdna_state().description().c_str());
        } else {   // shown by every tool: the plugin does nothing here
            XDNA_LOG_WARN("%s", xdna_state().description().c_str());
        }
    }
    return &reg;
}

// The loader's gate: 0 refuses the plugin. The backend interface has no stable ABI, so the plugin only loads into the
// exact ggml it was built against; GGML_XDNA_DISABLE=1 hides it entirely.
static int ggml_backend_xdna_score() {
    if (get_config().disable) {
        XDNA_LOG_INFO("disabled by GGML_XDNA_DISABLE");
        return 0;
    }
    if (strcmp(ggml_version(), XDNA_GGML_VERSION) != 0 || strcmp(ggml_commit(), XDNA_GGML_COMMIT) != 0) {
        XDNA_LOG_ERROR("built for ggml %s (commit %s) but loaded into ggml %s (commit %s); not loading: rebuild the plugin "
                       "against this llama.cpp", XDNA_GGML_VERSION, XDNA_GGML_COMMIT, ggml_version(), ggml_commit());
        return 0;
    }
    return 1;
}

GGML_BACKEND_DL_IMPL(ggml_backend_xdna_reg)
GGML_BACKEND_DL_SCORE_IMPL(ggml_backend_xdna_score)
