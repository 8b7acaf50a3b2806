/* Force-included into the MinGW-w64 cross-build of llama.cpp (scripts/build-llama-mingw.sh). ggml-cpu asks Windows not
 * to throttle its threads with SetThreadInformation(ThreadPowerThrottling, THREAD_POWER_THROTTLING_STATE), a
 * Windows 10 SDK type that mingw-w64 10 (Debian 12) declares the enum value of but not the struct. Its layout and
 * constants are those documented for SetThreadInformation on learn.microsoft.com. */
#ifdef _WIN32
#include <windows.h>
#ifndef THREAD_POWER_THROTTLING_CURRENT_VERSION
typedef struct XDNA_THREAD_POWER_THROTTLING_STATE {
    ULONG Version;
    ULONG ControlMask;
    ULONG StateMask;
} THREAD_POWER_THROTTLING_STATE;
#define THREAD_POWER_THROTTLING_CURRENT_VERSION 1
#define THREAD_POWER_THROTTLING_EXECUTION_SPEED 0x1
#endif
#endif
