#!/usr/bin/env bash
# cmake/xrt.cmake in a project of its own, against stand-in XRT installations: XRT_ROOT (as a CMake or environment
# variable) is used when given, an installation without libxrt_coreutil is passed over, a distribution's layout
# (lib/<arch>) is found, and configure says which XRT it builds against, or that it builds the emulator and why.
# usage: test-xrt-cmake.sh REPO_ROOT
set -euo pipefail
repo=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$work/p/cmake" "$work/p/emulator"
cp "$repo/cmake/xrt.cmake" "$work/p/cmake/"
echo 'add_library(xdna-emulator INTERFACE)' > "$work/p/emulator/CMakeLists.txt"
printf 'cmake_minimum_required(VERSION 3.16)\nproject(t CXX)\ninclude(cmake/xrt.cmake)\n' > "$work/p/CMakeLists.txt"
arch=$(gcc -print-multiarch 2>/dev/null || true)
for root in full headers-only distro; do mkdir -p "$work/$root/include/xrt"; touch "$work/$root/include/xrt/xrt_kernel.h"; done
mkdir -p "$work/full/lib" "$work/distro/lib/$arch"
touch "$work/full/lib/libxrt_coreutil.so" "$work/distro/lib/$arch/libxrt_coreutil.so"

configure() {   # configure ARGS...: prints the line configure says about XRT
    rm -rf "$work/b"
    cmake -S "$work/p" -B "$work/b" "$@" 2>&1 | sed -n 's/^-- ggml-xdna: NPU runtime builds against the //p'
}
expect() {   # expect PATTERN ARGS...
    local pattern=$1; shift
    local got
    got=$(configure "$@")
    [[ $got == $pattern ]] || fail "configure $*: '$got', expected '$pattern'"
}
expect "real XRT ($work/full: $work/full/lib/libxrt_coreutil.so)" -DXRT_ROOT="$work/full"
expect "software XDNA1 emulator (headers under $work/headers-only but no libxrt_coreutil in its lib folders)" \
    -DXRT_ROOT="$work/headers-only"
[[ -z $arch ]] || expect "real XRT ($work/distro: $work/distro/lib/$arch/libxrt_coreutil.so)" -DXRT_ROOT="$work/distro"
expect "software XDNA1 emulator (GGML_XDNA_FORCE_EMULATOR is ON)" -DXRT_ROOT="$work/full" -DGGML_XDNA_FORCE_EMULATOR=ON
got=$(XRT_ROOT="$work/full" configure)
[[ $got == "real XRT ($work/full: "* ]] || fail "XRT_ROOT in the environment: '$got'"
# with none given: /opt/xilinx/xrt, then /usr (whatever this machine has, configure names what it looked at)
got=$(env -u XRT_ROOT bash -c "$(declare -f configure); work='$work'; configure")
[[ $got == "real XRT (/opt/xilinx/xrt: "* || $got == "real XRT (/usr: "* ||
   $got == *"no /opt/xilinx/xrt/include/xrt/xrt_kernel.h"*"/usr"* ]] || fail "default places: '$got'"
echo "xrt.cmake: XRT_ROOT (CMake or environment), a distribution layout, no library, forced emulator, default places"
