// Software XDNA1: the older include path of the hardware-context header, as XRT keeps it.
#ifndef XDNA_EMU_XRT_EXPERIMENTAL_HW_CONTEXT_H
#define XDNA_EMU_XRT_EXPERIMENTAL_HW_CONTEXT_H
#include "xrt/xrt_hw_context.h"
#endif
