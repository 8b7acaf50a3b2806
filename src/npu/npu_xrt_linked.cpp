// npu_xrt() where the C interface is linked into the plugin (Linux: against XRT or the software XDNA1).
#include "npu_xrt_api.h"

namespace xdna {

const npu_xrt_api * npu_xrt(std::string *) {
    static const npu_xrt_api api = {
        xdna_xrt_version, xdna_xrt_kind, xdna_xrt_last_error, xdna_xrt_device_open, xdna_xrt_device_name,
        xdna_xrt_device_close, xdna_xrt_xclbin_register, xdna_xrt_xclbin_free, xdna_xrt_context_create,
        xdna_xrt_context_free, xdna_xrt_kernel_open, xdna_xrt_kernel_group, xdna_xrt_kernel_free, xdna_xrt_bo_alloc,
        xdna_xrt_bo_sub, xdna_xrt_bo_map, xdna_xrt_bo_write, xdna_xrt_bo_sync,
        xdna_xrt_bo_free, xdna_xrt_run_start, xdna_xrt_run_wait, xdna_xrt_run_state, xdna_xrt_run_free,
        xdna_xrt_device_timing, xdna_xrt_set_run_observer,
    };
    return &api;
}

bool npu_xrt_is_hardware() { return xdna_xrt_kind() == XDNA_XRT_KIND_XRT; }

} // namespace xdna
