# The NPU runtime is written against the XRT C++ API. With XRT installed the same sources build against the real
# library; otherwise against the project's software XDNA1 (emulator/). XRT is looked for in XRT_ROOT (a CMake or
# environment variable) when given, else in /opt/xilinx/xrt (AMD's packages, built with the xdna-driver) and then
# under /usr (distribution packages: headers in /usr/include/xrt, libxrt_coreutil in the system's library folder).
set(XRT_ROOT "$ENV{XRT_ROOT}" CACHE PATH "XRT installation (empty: /opt/xilinx/xrt, then /usr)")
option(GGML_XDNA_FORCE_EMULATOR "build against the software XDNA1 even when XRT is installed" OFF)

set(_xrt_root "")
set(_xrt_why "")
if(WIN32)
    # Windows: the plugin loads XRT's C interface from ggml-xdna-xrt.dll at run time (src/npu/npu_xrt_loaded.cpp); the
    # build makes that DLL from the software XDNA1, and a user builds the real one with MSVC (windows/xrt-shim/).
    set(_xrt_why "Windows: the real XRT comes as ggml-xdna-xrt.dll, built with MSVC")
elseif(GGML_XDNA_FORCE_EMULATOR)
    set(_xrt_why "GGML_XDNA_FORCE_EMULATOR is ON")
else()
    if(XRT_ROOT)
        set(_xrt_candidates "${XRT_ROOT}")
    else()
        set(_xrt_candidates "/opt/xilinx/xrt" "/usr")
    endif()
    foreach(_root IN LISTS _xrt_candidates)
        if(NOT EXISTS "${_root}/include/xrt/xrt_kernel.h")
            list(APPEND _xrt_why "no ${_root}/include/xrt/xrt_kernel.h")
            continue()
        endif()
        unset(XRT_COREUTIL CACHE)
        find_library(XRT_COREUTIL xrt_coreutil NO_DEFAULT_PATH
                     PATHS "${_root}/lib" "${_root}/lib64" "${_root}/lib/${CMAKE_LIBRARY_ARCHITECTURE}")
        if(XRT_COREUTIL)
            set(_xrt_root "${_root}")
            break()
        endif()
        list(APPEND _xrt_why "headers under ${_root} but no libxrt_coreutil in its lib folders")
    endforeach()
    list(JOIN _xrt_why "; " _xrt_why)
endif()

if(_xrt_root)
    add_library(xdna::xrt INTERFACE IMPORTED GLOBAL)
    set_target_properties(xdna::xrt PROPERTIES INTERFACE_LINK_LIBRARIES "${XRT_COREUTIL}")
    # /usr/include is the compiler's own: naming it again (as -isystem) would break libstdc++'s #include_next
    if(NOT _xrt_root STREQUAL "/usr")
        set_target_properties(xdna::xrt PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_xrt_root}/include")
    endif()
    set(GGML_XDNA_XRT_BACKEND "real XRT (${_xrt_root}: ${XRT_COREUTIL})")
    set(GGML_XDNA_EMULATED OFF)
else()
    add_subdirectory(emulator)
    add_library(xdna::xrt ALIAS xdna-emulator)
    set(GGML_XDNA_XRT_BACKEND "software XDNA1 emulator (${_xrt_why})")
    set(GGML_XDNA_EMULATED ON)
endif()
message(STATUS "ggml-xdna: NPU runtime builds against the ${GGML_XDNA_XRT_BACKEND}")
