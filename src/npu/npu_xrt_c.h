/* The narrow C interface between the plugin and XRT: everything the NPU runtime (npu_runtime.cpp) asks of XRT, as
 * plain C functions on opaque handles, with int results and the last error's text per thread.
 *
 * Why C: XRT's C API cannot run NPU kernels (hardware contexts and xclbin registration exist only in its C++ API),
 * and XRT's Windows DLL exports MSVC-mangled C++, which a MinGW-built plugin cannot call. So this interface is
 * implemented once, in npu_xrt_c.cpp, against XRT's C++ API, and that file is built three ways:
 *   - on Linux, linked into the plugin, against the installed XRT or the software XDNA1 (emulator/);
 *   - on Windows, by the user with MSVC against XRT's Windows SDK, as ggml-xdna-xrt.dll (windows/xrt-shim/);
 *   - on Windows in this project's tests, with MinGW against the software XDNA1, as a DLL of the same name.
 * No memory allocated on one side is freed on the other (the two sides may use different C runtimes): strings come
 * back into the caller's buffer, every handle is released by the function of this interface that made it.
 * Results: 0 on success, XDNA_XRT_ERR (and xdna_xrt_last_error()) on failure. */
#ifndef GGML_XDNA_NPU_XRT_C_H
#define GGML_XDNA_NPU_XRT_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* XDNA_XRT_C_BUILD: building ggml-xdna-xrt.dll, which exports the functions. */
#if defined(_WIN32) && defined(XDNA_XRT_C_BUILD)
#define XDNA_XRT_C_API __declspec(dllexport)
#else
#define XDNA_XRT_C_API
#endif

/* Bumped whenever a function's meaning or signature changes: the plugin refuses a DLL of another version. */
#define XDNA_XRT_C_VERSION 1

#define XDNA_XRT_OK 0
#define XDNA_XRT_ERR (-1)
#define XDNA_XRT_UNSUPPORTED (-2) /* the implementation does not offer it (xdna_xrt_set_run_observer on real XRT) */

/* What an implementation drives. */
#define XDNA_XRT_KIND_XRT 1      /* AMD's XRT and a real NPU */
#define XDNA_XRT_KIND_EMULATOR 2 /* the software XDNA1 */

/* Buffer kinds: host-only data buffers (XRT_BO_FLAGS_HOST_ONLY) and cacheable instruction buffers. */
#define XDNA_XRT_BO_HOST_ONLY 1
#define XDNA_XRT_BO_CACHEABLE 2

#define XDNA_XRT_SYNC_TO_DEVICE 0
#define XDNA_XRT_SYNC_FROM_DEVICE 1

/* Run states: XRT's ert_cmd_state values. A state is final from COMPLETED on, except SUBMITTED. */
#define XDNA_XRT_STATE_NEW 1
#define XDNA_XRT_STATE_QUEUED 2
#define XDNA_XRT_STATE_RUNNING 3
#define XDNA_XRT_STATE_COMPLETED 4
#define XDNA_XRT_STATE_ERROR 5
#define XDNA_XRT_STATE_ABORT 6
#define XDNA_XRT_STATE_SUBMITTED 7
#define XDNA_XRT_STATE_TIMEOUT 8
#define XDNA_XRT_STATE_NORESPONSE 9

typedef struct xdna_xrt_device xdna_xrt_device;
typedef struct xdna_xrt_xclbin xdna_xrt_xclbin;
typedef struct xdna_xrt_context xdna_xrt_context;
typedef struct xdna_xrt_kernel xdna_xrt_kernel;
typedef struct xdna_xrt_bo xdna_xrt_bo;
typedef struct xdna_xrt_run xdna_xrt_run;

XDNA_XRT_C_API int xdna_xrt_version(void);
XDNA_XRT_C_API int xdna_xrt_kind(void);
/* The calling thread's last error, valid until its next call of this interface; "" when none. */
XDNA_XRT_C_API const char * xdna_xrt_last_error(void);

XDNA_XRT_C_API int xdna_xrt_device_open(unsigned int index, xdna_xrt_device ** out);
/* The device's name into buf (truncated to size - 1 bytes, always terminated). */
XDNA_XRT_C_API int xdna_xrt_device_name(xdna_xrt_device * dev, char * buf, size_t size);
XDNA_XRT_C_API void xdna_xrt_device_close(xdna_xrt_device * dev);

/* Reads an xclbin file (UTF-8 path) and registers it with the device. */
XDNA_XRT_C_API int xdna_xrt_xclbin_register(xdna_xrt_device * dev, const char * path, xdna_xrt_xclbin ** out);
XDNA_XRT_C_API void xdna_xrt_xclbin_free(xdna_xrt_xclbin * xclbin);

/* A hardware context for a registered xclbin; failing when the device has no free context. */
XDNA_XRT_C_API int xdna_xrt_context_create(xdna_xrt_device * dev, xdna_xrt_xclbin * xclbin, xdna_xrt_context ** out);
XDNA_XRT_C_API void xdna_xrt_context_free(xdna_xrt_context * ctx);

XDNA_XRT_C_API int xdna_xrt_kernel_open(xdna_xrt_context * ctx, const char * name, xdna_xrt_kernel ** out);
/* The memory group of argument `arg`. */
XDNA_XRT_C_API int xdna_xrt_kernel_group(xdna_xrt_kernel * kernel, int arg, int * group);
XDNA_XRT_C_API void xdna_xrt_kernel_free(xdna_xrt_kernel * kernel);

/* Buffers. A handle keeps its buffer alive; a sub-buffer keeps its parent alive, and so does a run its arguments. */
XDNA_XRT_C_API int xdna_xrt_bo_alloc(xdna_xrt_device * dev, size_t bytes, int kind, int group, xdna_xrt_bo ** out);
XDNA_XRT_C_API int xdna_xrt_bo_sub(xdna_xrt_bo * parent, size_t bytes, size_t offset, xdna_xrt_bo ** out);
XDNA_XRT_C_API void * xdna_xrt_bo_map(xdna_xrt_bo * bo);
XDNA_XRT_C_API int xdna_xrt_bo_write(xdna_xrt_bo * bo, const void * src, size_t bytes, size_t offset);
XDNA_XRT_C_API int xdna_xrt_bo_sync(xdna_xrt_bo * bo, int direction, size_t bytes, size_t offset);
XDNA_XRT_C_API void xdna_xrt_bo_free(xdna_xrt_bo * bo);

/* Starts kernel(opcode, instr, instr_words, a, b, c): the NPU kernels' argument order. */
XDNA_XRT_C_API int xdna_xrt_run_start(xdna_xrt_kernel * kernel, unsigned int opcode, xdna_xrt_bo * instr,
                                      uint32_t instr_words, xdna_xrt_bo * a, xdna_xrt_bo * b, xdna_xrt_bo * c,
                                      xdna_xrt_run ** out);
/* Waits up to timeout_ms (0: no limit); *state: the final state, or XDNA_XRT_STATE_TIMEOUT when time ran out. */
XDNA_XRT_C_API int xdna_xrt_run_wait(xdna_xrt_run * run, unsigned int timeout_ms, int * state);
XDNA_XRT_C_API int xdna_xrt_run_state(xdna_xrt_run * run, int * state);
/* Only once the run's state is final: XRT aborts the process when a run in progress is destroyed. */
XDNA_XRT_C_API void xdna_xrt_run_free(xdna_xrt_run * run);

/* The software XDNA1 only: the timing its runs are charged by (XDNA_EMU_* settings: power mode, flat what-if rates,
 * dispatch), for the host to plan by. XDNA_XRT_UNSUPPORTED on real XRT. */
typedef struct xdna_xrt_timing {
    double clock_hz;
    double dispatch_s, queued_s, switch_s;
    double flat_bf16_flops, flat_int8_ops; /* > 0: runs at this rate instead of the silicon model */
} xdna_xrt_timing;
XDNA_XRT_C_API int xdna_xrt_device_timing(xdna_xrt_device * dev, xdna_xrt_timing * out);

/* The software XDNA1 only: called from its executor thread with the modelled start and end of each run, in seconds of
 * the steady clock. XDNA_XRT_UNSUPPORTED on real XRT. */
typedef void (*xdna_xrt_run_observer)(double start_s, double end_s);
XDNA_XRT_C_API int xdna_xrt_set_run_observer(xdna_xrt_run_observer fn);

#ifdef __cplusplus
}
#endif

#endif /* GGML_XDNA_NPU_XRT_C_H */
