# Imported targets for the pinned ggml, and the version and commit the plugin is built against.
# Only libggml (the registry) and libggml-base are linked; the CPU backend is reached through the registry.

add_library(xdna::ggml-base SHARED IMPORTED GLOBAL)
set_target_properties(xdna::ggml-base PROPERTIES
    IMPORTED_LOCATION "${LLAMA_BUILD}/bin/libggml-base.so"
    INTERFACE_INCLUDE_DIRECTORIES "${LLAMA_SRC}/ggml/include"
    INTERFACE_COMPILE_DEFINITIONS "GGML_SHARED;GGML_BACKEND_SHARED")

add_library(xdna::ggml SHARED IMPORTED GLOBAL)
set_target_properties(xdna::ggml PROPERTIES
    IMPORTED_LOCATION "${LLAMA_BUILD}/bin/libggml.so"
    INTERFACE_LINK_LIBRARIES xdna::ggml-base)

# ggml-backend-impl.h and ggml-impl.h are not installed by llama.cpp: they come from its source tree.
add_library(xdna::ggml-internal INTERFACE IMPORTED GLOBAL)
set_target_properties(xdna::ggml-internal PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${LLAMA_SRC}/ggml/src")

# Ask the library itself which version and commit it is, so the plugin refuses any other at load time.
set(_probe "${CMAKE_BINARY_DIR}/ggml-version-probe.c")
file(WRITE "${_probe}" "#include <stdio.h>\n#include \"ggml.h\"\nint main(void) { printf(\"%s;%s\", ggml_version(), ggml_commit()); return 0; }\n")
try_run(_run_rc _compile_ok "${CMAKE_BINARY_DIR}/ggml-version-probe" "${_probe}"
    CMAKE_FLAGS "-DINCLUDE_DIRECTORIES=${LLAMA_SRC}/ggml/include"
    LINK_LIBRARIES "${LLAMA_BUILD}/bin/libggml-base.so"
    COMPILE_OUTPUT_VARIABLE _compile_out
    RUN_OUTPUT_VARIABLE _run_out)
if(NOT _compile_ok OR NOT _run_rc EQUAL 0)
    message(FATAL_ERROR "ggml-xdna: cannot query ggml_version()/ggml_commit() from ${LLAMA_BUILD}: ${_compile_out}")
endif()
list(GET _run_out 0 XDNA_GGML_VERSION)
list(GET _run_out 1 XDNA_GGML_COMMIT)
message(STATUS "ggml-xdna: built against ggml ${XDNA_GGML_VERSION} (commit ${XDNA_GGML_COMMIT})")
