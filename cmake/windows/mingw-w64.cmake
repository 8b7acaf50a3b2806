# Cross-compiling for 64-bit Windows with Debian's MinGW-w64 (package mingw-w64), its POSIX-threads flavour: the
# plugin uses std::thread and std::mutex, which the win32 flavour of GCC 12 lacks.
# Programs built with it run here under Wine (package wine64): CMAKE_CROSSCOMPILING_EMULATOR lets try_run and
# add_test run them.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(_mingw x86_64-w64-mingw32)
set(CMAKE_C_COMPILER ${_mingw}-gcc-posix)
set(CMAKE_CXX_COMPILER ${_mingw}-g++-posix)
set(CMAKE_RC_COMPILER ${_mingw}-windres)
set(CMAKE_FIND_ROOT_PATH /usr/${_mingw})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
find_program(_wine NAMES wine64 wine)
if(_wine)
    set(CMAKE_CROSSCOMPILING_EMULATOR ${_wine})
endif()
# GCC on 64-bit Windows cannot align the stack beyond 16 bytes (GCC bug 54412), yet spills AVX and AVX-512 registers
# with aligned moves: a crash wherever a spill slot is not 32- or 64-byte aligned. The assembler turns every aligned
# vector move into an unaligned one (binutils 2.38 on), which is as fast on aligned data.
set(CMAKE_C_FLAGS_INIT "-Wa,-muse-unaligned-vector-move")
set(CMAKE_CXX_FLAGS_INIT "-Wa,-muse-unaligned-vector-move")
