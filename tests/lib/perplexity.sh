# Reading llama-perplexity's output in the end-to-end tests (sourced). The pinned llama.cpp leaks its logger at exit
# (common/log.cpp: "this design may cause logs to be lost if not flushed before the program exits"), so the last lines
# of a run are lost now and then (3 runs in 10 on the 2-CPU machine while another test ran; nearly every run when
# four test processes share its two cores). The tests therefore compute one chunk more than they compare: the lines
# at risk are that chunk's and the final estimate, and a run that still misses a compared value runs again.

# ppl_values <n> <output>: the running perplexity after each of the first n chunks, one per line ("[3]12.34", a number
# right after the bracket: a message that names a field like "designs[0].blocks" is not a value)
ppl_values() {
    grep -oE '\[[0-9]+\][0-9]+(\.[0-9]+)?' <<<"$2" | head -n "$1" | grep -oE '[0-9.]+$' || true
}

# ppl_run <n> <command...>: the command's output (stdout and stderr), run again, up to ten times, until it shows the
# first n chunks' values; a command that fails is not run again (its status is returned)
ppl_run() {
    local n=$1 out i
    shift
    for i in 1 2 3 4 5 6 7 8 9 10; do
        if ! out=$("$@" 2>&1); then
            local rc=$?
            printf '%s\n' "$out"
            return $rc
        fi
        [[ $(ppl_values "$n" "$out" | wc -l) == "$n" ]] && break
    done
    printf '%s\n' "$out"
}
