// The NPU runtime's way to the C interface of npu_xrt_c.h: a table of its functions, filled where the OS build
// decides (CMake picks one file): on Linux from the implementation linked into the plugin (npu_xrt_linked.cpp), on
// Windows from ggml-xdna-xrt.dll beside the plugin (npu_xrt_loaded.cpp).
#pragma once

#include "npu_xrt_c.h"

#include <string>

namespace xdna {

struct npu_xrt_api {
    int (*version)(void);
    int (*kind)(void);
    const char * (*last_error)(void);
    int (*device_open)(unsigned int, xdna_xrt_device **);
    int (*device_name)(xdna_xrt_device *, char *, size_t);
    void (*device_close)(xdna_xrt_device *);
    int (*xclbin_register)(xdna_xrt_device *, const char *, xdna_xrt_xclbin **);
    void (*xclbin_free)(xdna_xrt_xclbin *);
    int (*context_create)(xdna_xrt_device *, xdna_xrt_xclbin *, xdna_xrt_context **);
    void (*context_free)(xdna_xrt_context *);
    int (*kernel_open)(xdna_xrt_context *, const char *, xdna_xrt_kernel **);
    int (*kernel_group)(xdna_xrt_kernel *, int, int *);
    void (*kernel_free)(xdna_xrt_kernel *);
    int (*bo_alloc)(xdna_xrt_device *, size_t, int, int, xdna_xrt_bo **);
    int (*bo_sub)(xdna_xrt_bo *, size_t, size_t, xdna_xrt_bo **);
    void * (*bo_map)(xdna_xrt_bo *);
    int (*bo_write)(xdna_xrt_bo *, const void *, size_t, size_t);
    int (*bo_sync)(xdna_xrt_bo *, int, size_t, size_t);
    void (*bo_free)(xdna_xrt_bo *);
    int (*run_start)(xdna_xrt_kernel *, unsigned int, xdna_xrt_bo *, uint32_t, xdna_xrt_bo *, xdna_xrt_bo *,
                     xdna_xrt_bo *, xdna_xrt_run **);
    int (*run_wait)(xdna_xrt_run *, unsigned int, int *);
    int (*run_state)(xdna_xrt_run *, int *);
    void (*run_free)(xdna_xrt_run *);
    int (*device_timing)(xdna_xrt_device *, xdna_xrt_timing *);
    int (*set_run_observer)(xdna_xrt_run_observer);
};

// The table, or null with `why` (one sentence) when there is none: the DLL is missing, lacks a function or is of
// another interface version. Found once per process.
const npu_xrt_api * npu_xrt(std::string * why);

// Whether the XRT behind the table drives real hardware (false: the software XDNA1, or no table at all).
bool npu_xrt_is_hardware();

} // namespace xdna
