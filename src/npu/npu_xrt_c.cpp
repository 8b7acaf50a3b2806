// The C interface of npu_xrt_c.h, implemented against XRT's C++ API. Built into the plugin on Linux (against XRT or
// the software XDNA1), and on Windows as ggml-xdna-xrt.dll: by MSVC against XRT's Windows SDK (windows/xrt-shim/),
// or by MinGW against the software XDNA1 for the tests. Plain standard C++17 and XRT's public headers only, so
// that every one of those compilers takes it. No exception leaves a function of the interface: each becomes
// XDNA_XRT_ERR and the thread's last error. A DLL build defines XDNA_XRT_C_BUILD, which exports the functions; linked
// into the plugin they stay hidden inside it.
#include "npu_xrt_c.h"

#include <chrono>
#include <cstring>
#include <exception>
#include <string>

#include "xrt/xrt_bo.h"
#include "xrt/xrt_device.h"
#include "xrt/xrt_kernel.h"

#ifdef GGML_XDNA_EMULATED
#include "xdna_emu/emu_extension.h"
#endif

struct xdna_xrt_device { xrt::device dev; };
struct xdna_xrt_xclbin { xrt::xclbin xclbin; xrt::uuid uuid; };
struct xdna_xrt_context { xrt::hw_context ctx; };
struct xdna_xrt_kernel { xrt::kernel kernel; };
struct xdna_xrt_bo { xrt::bo bo; };
struct xdna_xrt_run { xrt::run run; };

namespace {

thread_local std::string last_error;

// Runs f, turning any exception into XDNA_XRT_ERR and the thread's last error.
template <typename F> int guarded(F && f) {
    last_error.clear();
    try {
        f();
        return XDNA_XRT_OK;
    } catch (const std::exception & e) {
        last_error = e.what();
    } catch (...) {
        last_error = "unknown exception in XRT";
    }
    if (last_error.empty()) last_error = "XRT failed without saying why";
    return XDNA_XRT_ERR;
}

int refuse(const char * what) {
    last_error = what;
    return XDNA_XRT_ERR;
}

} // namespace

extern "C" {

int xdna_xrt_version(void) { return XDNA_XRT_C_VERSION; }

int xdna_xrt_kind(void) {
#ifdef GGML_XDNA_EMULATED
    return XDNA_XRT_KIND_EMULATOR;
#else
    return XDNA_XRT_KIND_XRT;
#endif
}

const char * xdna_xrt_last_error(void) { return last_error.c_str(); }

int xdna_xrt_device_open(unsigned int index, xdna_xrt_device ** out) {
    if (!out) return refuse("no result pointer");
    *out = nullptr;
    return guarded([&] { *out = new xdna_xrt_device{xrt::device(index)}; });
}

int xdna_xrt_device_name(xdna_xrt_device * dev, char * buf, size_t size) {
    if (!dev || !buf || size == 0) return refuse("no device or buffer");
    return guarded([&] {
        const std::string name = dev->dev.get_info<xrt::info::device::name>();
        const size_t n = name.size() < size - 1 ? name.size() : size - 1;
        std::memcpy(buf, name.data(), n);
        buf[n] = '\0';
    });
}

void xdna_xrt_device_close(xdna_xrt_device * dev) { delete dev; }

int xdna_xrt_xclbin_register(xdna_xrt_device * dev, const char * path, xdna_xrt_xclbin ** out) {
    if (!dev || !path || !out) return refuse("no device, path or result pointer");
    *out = nullptr;
    return guarded([&] {
        xrt::xclbin x(std::string{path});
        xrt::uuid id = dev->dev.register_xclbin(x);
        *out = new xdna_xrt_xclbin{x, id};
    });
}

void xdna_xrt_xclbin_free(xdna_xrt_xclbin * xclbin) { delete xclbin; }

int xdna_xrt_context_create(xdna_xrt_device * dev, xdna_xrt_xclbin * xclbin, xdna_xrt_context ** out) {
    if (!dev || !xclbin || !out) return refuse("no device, xclbin or result pointer");
    *out = nullptr;
    return guarded([&] { *out = new xdna_xrt_context{xrt::hw_context(dev->dev, xclbin->uuid)}; });
}

void xdna_xrt_context_free(xdna_xrt_context * ctx) { delete ctx; }

int xdna_xrt_kernel_open(xdna_xrt_context * ctx, const char * name, xdna_xrt_kernel ** out) {
    if (!ctx || !name || !out) return refuse("no context, name or result pointer");
    *out = nullptr;
    return guarded([&] { *out = new xdna_xrt_kernel{xrt::kernel(ctx->ctx, std::string{name})}; });
}

int xdna_xrt_kernel_group(xdna_xrt_kernel * kernel, int arg, int * group) {
    if (!kernel || !group) return refuse("no kernel or result pointer");
    return guarded([&] { *group = static_cast<int>(kernel->kernel.group_id(arg)); });
}

void xdna_xrt_kernel_free(xdna_xrt_kernel * kernel) { delete kernel; }

int xdna_xrt_bo_alloc(xdna_xrt_device * dev, size_t bytes, int kind, int group, xdna_xrt_bo ** out) {
    if (!dev || !out) return refuse("no device or result pointer");
    if (kind != XDNA_XRT_BO_HOST_ONLY && kind != XDNA_XRT_BO_CACHEABLE) return refuse("unknown buffer kind");
    *out = nullptr;
    const xrt::bo::flags flags = kind == XDNA_XRT_BO_HOST_ONLY ? xrt::bo::flags::host_only : xrt::bo::flags::cacheable;
    return guarded([&] {
        *out = new xdna_xrt_bo{xrt::bo(dev->dev, bytes, flags, static_cast<xrt::memory_group>(group))};
    });
}

int xdna_xrt_bo_sub(xdna_xrt_bo * parent, size_t bytes, size_t offset, xdna_xrt_bo ** out) {
    if (!parent || !out) return refuse("no buffer or result pointer");
    *out = nullptr;
    return guarded([&] { *out = new xdna_xrt_bo{xrt::bo(parent->bo, bytes, offset)}; });
}

void * xdna_xrt_bo_map(xdna_xrt_bo * bo) {
    void * p = nullptr;
    if (!bo) {
        refuse("no buffer");
        return nullptr;
    }
    guarded([&] { p = bo->bo.map(); });
    return p;
}

int xdna_xrt_bo_write(xdna_xrt_bo * bo, const void * src, size_t bytes, size_t offset) {
    if (!bo || !src) return refuse("no buffer or source");
    return guarded([&] { bo->bo.write(src, bytes, offset); });
}

int xdna_xrt_bo_sync(xdna_xrt_bo * bo, int direction, size_t bytes, size_t offset) {
    if (!bo) return refuse("no buffer");
    const xclBOSyncDirection dir = direction == XDNA_XRT_SYNC_TO_DEVICE ? XCL_BO_SYNC_BO_TO_DEVICE
                                                                         : XCL_BO_SYNC_BO_FROM_DEVICE;
    return guarded([&] { bo->bo.sync(dir, bytes, offset); });
}

void xdna_xrt_bo_free(xdna_xrt_bo * bo) { delete bo; }

int xdna_xrt_run_start(xdna_xrt_kernel * kernel, unsigned int opcode, xdna_xrt_bo * instr, uint32_t instr_words,
                       xdna_xrt_bo * a, xdna_xrt_bo * b, xdna_xrt_bo * c, xdna_xrt_run ** out) {
    if (!kernel || !instr || !a || !b || !c || !out) return refuse("no kernel, buffer or result pointer");
    *out = nullptr;
    return guarded([&] { *out = new xdna_xrt_run{kernel->kernel(opcode, instr->bo, instr_words, a->bo, b->bo, c->bo)}; });
}

int xdna_xrt_run_wait(xdna_xrt_run * run, unsigned int timeout_ms, int * state) {
    if (!run || !state) return refuse("no run or result pointer");
    return guarded([&] { *state = static_cast<int>(run->run.wait(std::chrono::milliseconds(timeout_ms))); });
}

int xdna_xrt_run_state(xdna_xrt_run * run, int * state) {
    if (!run || !state) return refuse("no run or result pointer");
    return guarded([&] { *state = static_cast<int>(run->run.state()); });
}

void xdna_xrt_run_free(xdna_xrt_run * run) { delete run; }

int xdna_xrt_device_timing(xdna_xrt_device * dev, xdna_xrt_timing * out) {
    if (!dev || !out) return refuse("no device or result pointer");
#ifdef GGML_XDNA_EMULATED
    const xdna::xdna1_device_timing t = xdna_emu::device_timing(dev->dev);
    out->clock_hz = t.clock_hz;
    out->dispatch_s = t.dispatch_s;
    out->queued_s = t.queued_s;
    out->switch_s = t.switch_s;
    out->flat_bf16_flops = t.flat_bf16_flops;
    out->flat_int8_ops = t.flat_int8_ops;
    return XDNA_XRT_OK;
#else
    return XDNA_XRT_UNSUPPORTED;
#endif
}

int xdna_xrt_set_run_observer(xdna_xrt_run_observer fn) {
#ifdef GGML_XDNA_EMULATED
    xdna_emu::set_run_observer(fn);
    return XDNA_XRT_OK;
#else
    (void) fn;
    return XDNA_XRT_UNSUPPORTED;
#endif
}

} // extern "C"
