#!/usr/bin/env bash
# The files a user names, end to end through llama-perplexity with the software XDNA1 (auto split, so the planner
# state is read and written): the plugin never destroys a file it did not write and never waits on one.
# - the state, report and trace at copies of the model: each copy byte for byte as it was, each named in one line;
# - all three at FIFOs: the run ends in seconds, each FIFO named in one line and still a FIFO;
# - all three at a character device of the test's own (as root; /dev/full's numbers, in the temporary folder): the
#   same, the node still a node;
# - all three where writing fails (a file size limit of 0, as a full disk): one line each;
# - the kernel manifest at a FIFO and at a folder: one line naming it, and the run goes on without the NPU.
# usage: own-files.sh <llama bin> <plugin> <xdna-gen-model> <llama src> <text>
set -euo pipefail
bin=$1 plugin=$2 gen=$3 src=$4 text=$5
model=$("$gen" --model llama-tiny --type Q4_0 --llama-src "$src" --llama-bin "$bin")
work=$(mktemp -d)
trap '[[ -n "${KEEP:-}" ]] || rm -rf "$work"' EXIT
for v in $(env | grep -oE '^GGML_XDNA_[A-Z0-9_]+'); do unset "$v"; done
passed=0 failed=0
check() {   # check <name> <condition...>
    local name=$1; shift
    if "$@"; then echo "ok   $name"; passed=$((passed + 1)); else echo "FAIL $name"; failed=$((failed + 1)); fi
}
# One run, bounded in time; its log in $work/<tag>.log, its exit status in $work/<tag>.rc. The pinned llama.cpp's
# logger loses the last lines of a run now and then (the plugin's lines written at exit among them), the more often
# the busier the machine (three of these scripts at once on 2 cores: a run in 9 lost them five times in a row): a run
# whose log lacks its final estimate or a line of `expect` is run again, up to ten times; the checks then judge the
# last log (a run that never gave its estimate fails no check that reads only its first lines, nor stops the script).
# `limit` (a command prefix) applies to llama-perplexity alone; its output goes through a pipe.
limit=()
run() {   # run <tag> <env...>
    local tag=$1 i; shift
    for i in 1 2 3 4 5 6 7 8 9 10; do
        local t0=$SECONDS rc=0
        env GGML_BACKEND_PATH="$plugin" GGML_XDNA_NPU=emulator "$@" timeout 120 "${limit[@]}" "$bin/llama-perplexity" \
            -m "$model" -f "$text" -c 128 --chunks 2 -b 128 -t 2 2>&1 | cat >"$work/$tag.log" || rc=$?
        echo "$rc $((SECONDS - t0))" >"$work/$tag.rc"
        grep -q 'Final estimate' "$work/$tag.log" && all_there "$tag" && break
    done
    return 0
}
expect=()
all_there() { local e; for e in "${expect[@]}"; do grep -qF -- "$e" "$work/$1.log" || return 1; done; }
finished() { read -r rc s <"$work/$1.rc"; [[ $rc == 0 && $s -lt 60 ]]; }
once() { [[ $(grep -cF -- "$2" "$work/$1.log") == 1 ]]; }   # once <tag> <text>: exactly one line has it
same() { cmp -s "$model" "$1"; }

for f in state report trace; do cp "$model" "$work/$f.gguf"; done
expect=("$work/state.gguf" "$work/report.gguf" "$work/trace.gguf")
run victims GGML_XDNA_PLANNER_STATE="$work/state.gguf" GGML_XDNA_REPORT="$work/report.gguf" \
    GGML_XDNA_TRACE="$work/trace.gguf"
check "victims: the run finishes" finished victims
for f in state report trace; do
    check "victims: the $f's copy of the model is byte for byte the model" same "$work/$f.gguf"
    check "victims: one line names the $f's copy" once victims "$work/$f.gguf"
done
check "victims: no file was added beside them" test "$(ls "$work" | grep -c gguf)" -eq 3

mkdir "$work/fifo"
for f in state report trace; do mkfifo "$work/fifo/$f"; done
expect=("$work/fifo/state" "$work/fifo/report" "$work/fifo/trace")
run fifos GGML_XDNA_PLANNER_STATE="$work/fifo/state" GGML_XDNA_REPORT="$work/fifo/report" \
    GGML_XDNA_TRACE="$work/fifo/trace"
check "FIFOs: the run finishes within a minute" finished fifos
for f in state report trace; do
    check "FIFOs: one line names the $f FIFO" once fifos "$work/fifo/$f is a FIFO, not a regular file"
    check "FIFOs: the $f FIFO is still a FIFO" test -p "$work/fifo/$f"
done

if [[ $(id -u) == 0 ]]; then
    mkdir "$work/dev"
    for f in state report trace; do mknod "$work/dev/$f" c 1 7; done
    expect=("$work/dev/state" "$work/dev/report" "$work/dev/trace")
    run devices GGML_XDNA_PLANNER_STATE="$work/dev/state" GGML_XDNA_REPORT="$work/dev/report" \
        GGML_XDNA_TRACE="$work/dev/trace"
    check "devices: the run finishes within a minute" finished devices
    for f in state report trace; do
        check "devices: one line names the $f node" once devices "$work/dev/$f is a character device"
        check "devices: the $f node is still a node" test -c "$work/dev/$f"
    done
else
    echo "skip devices: mknod needs root"
fi

# no room for a single byte: every write fails (SIGXFSZ ignored, so the write returns an error as on a full disk);
# the log goes through a pipe, which no file size limit applies to
mkdir "$work/full"
limit=(bash -c 'ulimit -f 0; trap "" XFSZ; exec "$@"' limited)
expect=("$work/full/state" "$work/full/report" "$work/full/trace")
run full GGML_XDNA_PLANNER_STATE="$work/full/state" GGML_XDNA_REPORT="$work/full/report" \
    GGML_XDNA_TRACE="$work/full/trace"
limit=()
check "full: the run finishes" finished full
for f in state report trace; do
    check "full: one line says the $f cannot be written" once full "$work/full/$f cannot be written"
done

mkfifo "$work/manifest.fifo"
expect=()
run manifest-fifo GGML_XDNA_NPU_KERNELS="$work/manifest.fifo"
check "manifest FIFO: the run finishes within a minute" finished manifest-fifo
check "manifest FIFO: one line names it" once manifest-fifo "kernel manifest '$work/manifest.fifo': is a FIFO"
run manifest-dir GGML_XDNA_NPU_KERNELS="$work"
check "manifest folder: the run finishes" finished manifest-dir
check "manifest folder: one line names it" once manifest-dir "kernel manifest '$work': is a folder"

echo "own-files: $passed passed, $failed failed"
[[ $failed == 0 ]]
