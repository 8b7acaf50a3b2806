# The plugin's own settings for a MinGW-w64 build for Windows (cmake/windows/mingw-w64.cmake is the toolchain).

# libgcc, libstdc++ and winpthread linked into every DLL and program: the plugin then needs no MinGW DLL beside it,
# and loads into a process built with MSVC (whose C++ runtime it never shares: its interface to ggml is plain C).
# --exclude-libs: the static libraries' own exports (libgcc's _Unwind_* are marked for export) stay inside; a DLL
# exports only what the plugin marks (ggml_backend_init, ggml_backend_score; the XRT DLL its C interface).
add_link_options(-static -Wl,--exclude-libs,ALL)

# nlohmann/json is header-only: the host's copy (Debian's nlohmann-json3-dev) serves the cross-build, but its CMake
# package would add /usr/include, the Linux system headers, to the compiler's search path. Only its folder is linked in.
if(NOT TARGET nlohmann_json::nlohmann_json)
    find_path(XDNA_HOST_NLOHMANN nlohmann/json.hpp PATHS /usr/include NO_DEFAULT_PATH NO_CMAKE_FIND_ROOT_PATH)
    if(NOT XDNA_HOST_NLOHMANN)
        message(FATAL_ERROR "ggml-xdna: nlohmann/json.hpp not found under /usr/include (apt-get install nlohmann-json3-dev)")
    endif()
    set(_nl "${CMAKE_BINARY_DIR}/host-headers")
    file(MAKE_DIRECTORY "${_nl}")
    file(CREATE_LINK "${XDNA_HOST_NLOHMANN}/nlohmann" "${_nl}/nlohmann" SYMBOLIC)
    add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED GLOBAL)
    set_target_properties(nlohmann_json::nlohmann_json PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_nl}")
endif()

# The programs the build runs (the version probe of cmake/ggml.cmake, the emulator's kernel set) run under Wine,
# which finds DLLs on WINEPATH (Windows paths: Z: is the Linux root): ggml's, and the MinGW runtime DLLs that
# llama.cpp's cross-build needs (it is linked as llama.cpp links it, against the shared libstdc++ and winpthread).
set(_wine_path "Z:${LLAMA_BUILD}/bin")
foreach(_dll libstdc++-6.dll libwinpthread-1.dll)
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=${_dll} OUTPUT_VARIABLE _at OUTPUT_STRIP_TRAILING_WHITESPACE)
    get_filename_component(_at "${_at}" DIRECTORY)
    get_filename_component(_at "${_at}" REALPATH)
    string(APPEND _wine_path ";Z:${_at}")
endforeach()
set(ENV{WINEPATH} "${_wine_path}")
