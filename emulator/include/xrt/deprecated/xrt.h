// Software XDNA1: the handle typedefs and sync directions of XRT's xrt/deprecated/xrt.h (same names and values).
#ifndef XDNA_EMU_XRT_DEPRECATED_H
#define XDNA_EMU_XRT_DEPRECATED_H

#include "xrt/detail/xrt_mem.h"

typedef void* xclDeviceHandle;

enum xclBOSyncDirection {
    XCL_BO_SYNC_BO_TO_DEVICE = 0,
    XCL_BO_SYNC_BO_FROM_DEVICE,
    XCL_BO_SYNC_BO_GMIO_TO_AIE,
    XCL_BO_SYNC_BO_AIE_TO_GMIO,
};

#endif
