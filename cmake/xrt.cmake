# The NPU runtime is written against the XRT C++ API. With XRT installed (/opt/xilinx/xrt, or XRT_ROOT) the same
# sources build against the real library; otherwise against the project's software XDNA1 (emulator/).
set(XRT_ROOT "/opt/xilinx/xrt" CACHE PATH "XRT installation")
option(GGML_XDNA_FORCE_EMULATOR "build against the software XDNA1 even when XRT is installed" OFF)

if(NOT GGML_XDNA_FORCE_EMULATOR AND EXISTS "${XRT_ROOT}/include/xrt/xrt_kernel.h")
    find_library(XRT_COREUTIL xrt_coreutil HINTS "${XRT_ROOT}/lib" REQUIRED)
    add_library(xdna::xrt INTERFACE IMPORTED GLOBAL)
    set_target_properties(xdna::xrt PROPERTIES
        INTERFACE_INCLUDE_DIRECTORIES "${XRT_ROOT}/include"
        INTERFACE_LINK_LIBRARIES "${XRT_COREUTIL}")
    set(GGML_XDNA_XRT_BACKEND "real XRT (${XRT_ROOT})")
    set(GGML_XDNA_EMULATED OFF)
else()
    add_subdirectory(emulator)
    add_library(xdna::xrt ALIAS xdna-emulator)
    set(GGML_XDNA_XRT_BACKEND "software XDNA1 emulator (no XRT found at ${XRT_ROOT})")
    set(GGML_XDNA_EMULATED ON)
endif()
message(STATUS "ggml-xdna: NPU runtime builds against the ${GGML_XDNA_XRT_BACKEND}")
