# The ggml the plugin is built against: imported targets, its version, and what its headers offer.
#
# Supported: the llama.cpp releases from b10361 (npm node-llama-cpp 3.20.0, ggml 0.19.0) to v0.5.0 (3.22.1,
# ggml 0.25.1). GGML_BACKEND_API_VERSION stayed 2 across them while the interface structs grew fields in the middle,
# so neither a version macro nor the loader's API check can tell them apart: compile-time probes of the headers do,
# into the generated header xdna_ggml_compat.h (XDNA_HAS_* flags, the version and the facts the load-time check compares).
# Only libggml (the registry) and libggml-base are linked; the CPU backend is reached through the registry.
include(CheckCXXSourceCompiles)

set(XDNA_GGML_RANGE "llama.cpp b10361 to v0.5.0 (ggml 0.19.0 to 0.25.1, npm node-llama-cpp 3.20.0 to 3.22.1)")
set(XDNA_GGML_MIN_VERSION "0.19.0")
set(XDNA_GGML_MAX_VERSION "0.25.1")
option(GGML_XDNA_UNTESTED_GGML "build against a ggml newer than the supported range (its headers still have to pass the probes)" OFF)

# Windows: ggml-base.dll and ggml.dll (MinGW's linker links against a DLL itself, no import library needed), the
# names llama.cpp's Windows releases give them, which the plugin DLL then imports.
if(WIN32)
    set(_ggml_base "${LLAMA_BUILD}/bin/ggml-base.dll")
    set(_ggml "${LLAMA_BUILD}/bin/ggml.dll")
else()
    set(_ggml_base "${LLAMA_BUILD}/bin/libggml-base.so")
    set(_ggml "${LLAMA_BUILD}/bin/libggml.so")
endif()
add_library(xdna::ggml-base SHARED IMPORTED GLOBAL)
set_target_properties(xdna::ggml-base PROPERTIES
    IMPORTED_LOCATION "${_ggml_base}" IMPORTED_IMPLIB "${_ggml_base}"
    INTERFACE_INCLUDE_DIRECTORIES "${LLAMA_SRC}/ggml/include"
    INTERFACE_COMPILE_DEFINITIONS "GGML_SHARED;GGML_BACKEND_SHARED")

add_library(xdna::ggml SHARED IMPORTED GLOBAL)
set_target_properties(xdna::ggml PROPERTIES
    IMPORTED_LOCATION "${_ggml}" IMPORTED_IMPLIB "${_ggml}"
    INTERFACE_LINK_LIBRARIES xdna::ggml-base)

# ggml-backend-impl.h and ggml-impl.h are not installed by llama.cpp: they come from its source tree. The generated
# compatibility header goes with them.
set(XDNA_GGML_GENERATED "${CMAKE_BINARY_DIR}/generated")
add_library(xdna::ggml-internal INTERFACE IMPORTED GLOBAL)
set_target_properties(xdna::ggml-internal PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${LLAMA_SRC}/ggml/src;${XDNA_GGML_GENERATED}")

# 1. The library itself: its version and commit, and the facts the plugin compares again when it is loaded (the load
#    must find the same). The probe is compiled with LLAMA_SRC's headers and run against LLAMA_BUILD's library, so it
#    also catches a source tree and a build of two different versions (the op and type names follow the headers' enums).
set(_probe "${CMAKE_BINARY_DIR}/ggml-version-probe.c")
file(WRITE "${_probe}" [=[
#include <stdio.h>
#include <string.h>
#include "ggml.h"
static const struct { enum ggml_type t; const char * name; } types[] = {
    { GGML_TYPE_F32, "f32" }, { GGML_TYPE_F16, "f16" }, { GGML_TYPE_BF16, "bf16" }, { GGML_TYPE_Q4_0, "q4_0" },
    { GGML_TYPE_Q4_1, "q4_1" }, { GGML_TYPE_Q5_0, "q5_0" }, { GGML_TYPE_Q5_1, "q5_1" }, { GGML_TYPE_Q8_0, "q8_0" },
    { GGML_TYPE_Q2_K, "q2_K" }, { GGML_TYPE_Q3_K, "q3_K" }, { GGML_TYPE_Q4_K, "q4_K" }, { GGML_TYPE_Q5_K, "q5_K" },
    { GGML_TYPE_Q6_K, "q6_K" }, { GGML_TYPE_IQ4_NL, "iq4_nl" }, { GGML_TYPE_IQ4_XS, "iq4_xs" }, { GGML_TYPE_MXFP4, "mxfp4" },
};
int main(void) {
    if (strcmp(ggml_op_name(GGML_OP_MUL_MAT), "MUL_MAT") != 0 || strcmp(ggml_op_name(GGML_OP_MUL_MAT_ID), "MUL_MAT_ID") != 0) {
        printf("MISMATCH: op MUL_MAT is %s in the library", ggml_op_name(GGML_OP_MUL_MAT));
        return 0;
    }
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); ++i) {
        if (strcmp(ggml_type_name(types[i].t), types[i].name) != 0) {
            printf("MISMATCH: type %s of the headers is %s in the library", types[i].name, ggml_type_name(types[i].t));
            return 0;
        }
    }
    printf("%s;%s;%zu;", ggml_version(), ggml_commit(), ggml_tensor_overhead());
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); ++i) {
        printf("%s{ %d, \"%s\", %lld, %zu }", i ? ", " : "", (int) types[i].t, types[i].name,
               (long long) ggml_blck_size(types[i].t), ggml_type_size(types[i].t));
    }
    return 0;
}
]=])
try_run(_run_rc _compile_ok "${CMAKE_BINARY_DIR}/ggml-version-probe" "${_probe}"
    CMAKE_FLAGS "-DINCLUDE_DIRECTORIES=${LLAMA_SRC}/ggml/include"
    LINK_LIBRARIES "${_ggml_base}"
    COMPILE_OUTPUT_VARIABLE _compile_out
    RUN_OUTPUT_VARIABLE _run_out)
if(NOT _compile_ok OR NOT _run_rc EQUAL 0)
    message(FATAL_ERROR "ggml-xdna: cannot query ggml_version() from ${LLAMA_BUILD} with the headers of ${LLAMA_SRC}; "
        "the plugin supports ${XDNA_GGML_RANGE}: ${_compile_out}")
endif()
if(_run_out MATCHES "^MISMATCH: (.*)")
    message(FATAL_ERROR "ggml-xdna: the headers of LLAMA_SRC=${LLAMA_SRC} do not match the library of "
        "LLAMA_BUILD=${LLAMA_BUILD} (${CMAKE_MATCH_1}): point both at one llama.cpp")
endif()
list(GET _run_out 0 XDNA_GGML_VERSION)
list(GET _run_out 1 XDNA_GGML_COMMIT)
list(GET _run_out 2 XDNA_GGML_TENSOR_OVERHEAD)
list(GET _run_out 3 XDNA_GGML_TYPE_FACTS)

# The source tree's own version (no public header has it; ggml's CMakeLists.txt does) must be the library's: headers of
# one release and a library of another compile, and crash.
file(STRINGS "${LLAMA_SRC}/ggml/CMakeLists.txt" _ver_lines REGEX "^set\\(GGML_VERSION_(MAJOR|MINOR|PATCH) [0-9]+\\)")
set(_src_version "")
foreach(_part MAJOR MINOR PATCH)
    foreach(_line ${_ver_lines})
        if(_line MATCHES "GGML_VERSION_${_part} ([0-9]+)")
            list(APPEND _src_version ${CMAKE_MATCH_1})
        endif()
    endforeach()
endforeach()
list(JOIN _src_version "." _src_version)
if(_src_version MATCHES "^[0-9]+\\.[0-9]+\\.[0-9]+$" AND NOT _src_version STREQUAL XDNA_GGML_VERSION)
    message(FATAL_ERROR "ggml-xdna: LLAMA_SRC=${LLAMA_SRC} is ggml ${_src_version} but LLAMA_BUILD=${LLAMA_BUILD} is "
        "ggml ${XDNA_GGML_VERSION}: point both at one llama.cpp")
endif()

# 2. The range, by the library's version.
if(NOT XDNA_GGML_VERSION MATCHES "^[0-9]+\\.[0-9]+\\.[0-9]+$" OR XDNA_GGML_VERSION VERSION_LESS XDNA_GGML_MIN_VERSION)
    message(FATAL_ERROR "ggml-xdna: ${LLAMA_BUILD} is ggml ${XDNA_GGML_VERSION}; the plugin supports ${XDNA_GGML_RANGE} "
        "(scripts/build-llama.sh --release 3.22.1 builds the newest)")
endif()
if(XDNA_GGML_VERSION VERSION_GREATER XDNA_GGML_MAX_VERSION AND NOT GGML_XDNA_UNTESTED_GGML)
    message(FATAL_ERROR "ggml-xdna: ${LLAMA_BUILD} is ggml ${XDNA_GGML_VERSION}, newer than the supported "
        "${XDNA_GGML_RANGE}; -DGGML_XDNA_UNTESTED_GGML=ON builds it anyway, untested")
endif()

# 3. The headers: what the plugin needs (a failure is one error naming the range) and what varies (XDNA_HAS_* flags).
set(CMAKE_REQUIRED_INCLUDES "${LLAMA_SRC}/ggml/include" "${LLAMA_SRC}/ggml/src")
set(CMAKE_REQUIRED_DEFINITIONS -DGGML_SHARED -DGGML_BACKEND_SHARED)
set(CMAKE_REQUIRED_QUIET ON)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)   # compile only: the probes ask the headers, not the library
set(_probe_head "#include \"ggml-backend-impl.h\"\n#include \"ggml-backend.h\"\n#include \"ggml-cpu.h\"\n#include \"ggml.h\"\n")
function(xdna_probe var body)
    unset(${var} CACHE)   # LLAMA_SRC may have changed since the last configure: probe again
    check_cxx_source_compiles("${_probe_head}${body}\nint main() { return 0; }" ${var})
    set(${var} ${${var}} PARENT_SCOPE)
endfunction()

# every slot and field the plugin fills, by name (b10361 is the first with the 2D tensor copies it relies on)
xdna_probe(_xdna_baseline [=[
static void probe() {
    ggml_backend_i b{};            b.get_name = nullptr; b.free = nullptr; b.graph_compute = nullptr;
    b.set_tensor_2d_async = nullptr; b.get_tensor_2d_async = nullptr;
    ggml_backend_device_i d{};     d.get_name = nullptr; d.get_description = nullptr; d.get_memory = nullptr;
    d.get_type = nullptr; d.get_props = nullptr; d.init_backend = nullptr; d.get_buffer_type = nullptr;
    d.buffer_from_host_ptr = nullptr; d.supports_op = nullptr; d.supports_buft = nullptr;
    ggml_backend_reg_i r{};        r.get_name = nullptr; r.get_device_count = nullptr; r.get_device = nullptr;
    r.get_proc_address = nullptr;
    ggml_backend_reg reg{};        reg.api_version = GGML_BACKEND_API_VERSION; reg.iface = r; reg.context = nullptr;
    ggml_backend_device dev{};     dev.iface = d; dev.reg = nullptr; dev.context = nullptr;
    ggml_backend be{};             be.guid = nullptr; be.iface = b; be.device = nullptr; be.context = nullptr;
    ggml_backend_dev_caps c{};     c.async = c.host_buffer = c.buffer_from_host_ptr = c.events = false;
    ggml_backend_dev_props p{};    p.caps = c;
    (void) reg; (void) dev; (void) be; (void) p;
    (void) &ggml_backend_tensor_get_2d_async;
}
static_assert(GGML_BACKEND_API_VERSION == 2, "backend API version");
]=])
if(NOT _xdna_baseline)
    message(FATAL_ERROR "ggml-xdna: the backend headers of ${LLAMA_SRC} (ggml ${XDNA_GGML_VERSION}) lack what the plugin "
        "fills in; the plugin supports ${XDNA_GGML_RANGE}")
endif()

# ggml 0.23: device capabilities gained mmap_support
xdna_probe(XDNA_HAS_DEV_CAPS_MMAP [=[ static bool probe(ggml_backend_dev_caps c) { return c.mmap_support; } ]=])
# ggml 0.23: graph_optimize takes a params struct (allocation dependencies)
xdna_probe(XDNA_HAS_GRAPH_OPTIMIZE_PARAMS [=[
static void probe(ggml_backend_i & i) { ggml_backend_graph_optimize_params p{}; i.graph_optimize(nullptr, nullptr, &p); }
]=])
# ggml 0.25: precision requests (TAG_GGML_PREC): ggml_prec_set_acc for MUL_MAT and MUL_MAT_ID in op_params[0],
# ggml_prec_set_src for src1 in op_params[3], and the BF16/F16/Q8/Q4 levels
xdna_probe(XDNA_HAS_PREC_REQUESTS [=[
static bool probe(ggml_tensor * t) { return ggml_prec_set_acc(t, GGML_PREC_BF16) && ggml_prec_set_src(t, GGML_PREC_Q8, 1); }
]=])
unset(CMAKE_TRY_COMPILE_TARGET_TYPE)

set(XDNA_HAS_FLAGS "")
foreach(_flag XDNA_HAS_DEV_CAPS_MMAP XDNA_HAS_GRAPH_OPTIMIZE_PARAMS XDNA_HAS_PREC_REQUESTS)
    if(${_flag})
        string(APPEND XDNA_HAS_FLAGS "#define ${_flag} 1\n")
    else()
        string(APPEND XDNA_HAS_FLAGS "#define ${_flag} 0\n")
    endif()
endforeach()
configure_file("${CMAKE_CURRENT_LIST_DIR}/xdna_ggml_compat.h.in" "${XDNA_GGML_GENERATED}/xdna_ggml_compat.h" @ONLY)
string(REPLACE "\n#define " ", " _flags_line "${XDNA_HAS_FLAGS}")
string(REGEX REPLACE "^#define |\n$" "" _flags_line "${_flags_line}")
message(STATUS "ggml-xdna: built against ggml ${XDNA_GGML_VERSION} (commit ${XDNA_GGML_COMMIT}): ${_flags_line}")
