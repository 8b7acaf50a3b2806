#!/usr/bin/env bash
# One-definition-rule check of the plugin: recompiles every source that goes into libggml-xdna.so (the commands of an
# existing build, at -O0) as LTO objects and links them with -Wodr -Werror=odr. GCC's link-time optimiser compares
# every class, enum and function type that two objects define under one name, so two different types with the same
# name in the one shared library (e.g. two xdna::weight_cache classes) fail here, whether or not the code the linker
# happens to keep misbehaves in a given build. CI runs it after the tests (.ci/run); about a minute on 2 cores.
#   scripts/check-odr.sh [BUILD_DIR]     (default: build/, as scripts/build.sh leaves it)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-${GGML_XDNA_BUILD_DIR:-$root/build}}" && pwd)
[[ -f "$build/build.ninja" ]] || { echo "check-odr.sh: $build is not a Ninja build of this project (scripts/build.sh)" >&2; exit 2; }
work=$(mktemp -d -t xdna-odr.XXXXXX)
trap 'rm -rf "$work"' EXIT

cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
cxx=${cxx:-c++}

# First, that this compiler catches a violation at all (a check that cannot fail proves nothing): two objects with
# different classes of one name must fail the link.
printf 'namespace p { struct c { int a; ~c(); }; c::~c() {} } void f1() { p::c x; }\n' > "$work/probe1.cpp"
printf 'namespace p { struct c { double b, d; ~c() {} }; } void f2() { p::c x; }\n' > "$work/probe2.cpp"
if ! "$cxx" -O0 -flto -fno-fat-lto-objects -c "$work/probe1.cpp" -o "$work/probe1.o" ||
   ! "$cxx" -O0 -flto -fno-fat-lto-objects -c "$work/probe2.cpp" -o "$work/probe2.o"; then
    echo "check-odr.sh: $cxx cannot compile LTO objects" >&2
    exit 2
fi
if "$cxx" -shared -flto -O0 -Wodr -Werror=odr -o "$work/probe.so" "$work/probe1.o" "$work/probe2.o" 2>/dev/null; then
    echo "check-odr.sh: $cxx does not report one-definition-rule violations at link time (-Wodr): cannot check" >&2
    exit 2
fi
rm -f "$work"/probe*

# The compile commands of the objects linked into the plugin (those its link line names, directly or through the static
# libraries it names; not those of the tools built on the way, such as the emulator's kernel generator, which are
# executables compiled without -fPIC), rewritten: objects into $work, no dependency files, -O0 (the type checks need
# no optimisation) and LTO.
ninja -C "$build" -t commands ggml-xdna | python3 -c '
import shlex, sys
work = sys.argv[1]
compiles, archives, linked = [], {}, None
for line in sys.stdin:
    a = shlex.split(line)
    if "-c" in a and "-o" in a:
        compiles.append(a)
    elif "ar" in [x.rsplit("/", 1)[-1] for x in a]:
        i = [x.rsplit("/", 1)[-1] for x in a].index("ar")
        archives[a[i + 2]] = [x for x in a[i + 3:] if x.endswith(".o")]
    elif "-shared" in a:
        linked = a
if linked is None:
    sys.exit("check-odr.sh: no link command of libggml-xdna.so")
wanted = set()
for x in linked:
    if x.endswith(".o"):
        wanted.add(x)
    elif x in archives:
        wanted.update(archives[x])
n = 0
for a in compiles:
    if a[a.index("-o") + 1] not in wanted:
        continue
    out, skip = [], 0
    for i, x in enumerate(a):
        if skip:
            skip -= 1
            continue
        if x in ("-MT", "-MF"):
            skip = 1
            continue
        if x == "-MD":
            continue
        if x == "-o":
            out += ["-o", f"{work}/{n}.o"]
            skip = 1
            n += 1
            continue
        out.append(x)
    out += ["-O0", "-g0", "-flto", "-fno-fat-lto-objects", "-w"]
    print(shlex.join(out))
' "$work" > "$work/commands"
count=$(grep -c . "$work/commands")
[[ $count -gt 0 ]] || { echo "check-odr.sh: no compile commands for ggml-xdna in $build" >&2; exit 2; }
(cd "$build" && xargs -d '\n' -P "${JOBS:-$(nproc)}" -I{} sh -c '{}' < "$work/commands") ||
    { echo "check-odr.sh: compiling the LTO objects failed" >&2; exit 2; }
if ! "$cxx" -shared -flto=auto -O0 -Wodr -Werror=odr -o "$work/odr.so" "$work"/*.o 2> "$work/link.log"; then
    grep -E "One Definition Rule|odr|note:" "$work/link.log" | head -40 >&2 || cat "$work/link.log" >&2
    echo "check-odr.sh: FAIL: the plugin's objects break the one-definition rule (above): give each type a name or" \
         "namespace of its owner (xdna::npu::, xdna::gpu::)" >&2
    exit 1
fi
echo "check-odr.sh: $count objects of libggml-xdna.so, no one-definition-rule violation"
