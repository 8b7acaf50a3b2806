# Sourced by the set-up scripts: a long step shows one updating line (step, percent, elapsed) instead of pages of
# output, which go to a log file that an error names.
#
#   progress LABEL LOG COMMAND...   runs COMMAND with stdout and stderr appended to LOG
#
# The percent is read from the log as it grows: ninja's "[n/m]", apt's status lines (APT::Status-Fd) and
# llama-quantize's "[ n/ m]"; a step without any shows its elapsed time alone. On a terminal the line updates in place;
# elsewhere (CI, a pipe) only the step's last line is printed. On failure: the log's last lines and its path.

progress_fmt() {   # progress_fmt SECONDS
    printf '%dm%02ds' $(( $1 / 60 )) $(( $1 % 60 ))
}

progress_percent() {   # progress_percent LOG: the step's percent so far, or nothing
    tail -c 20000 "$1" 2>/dev/null | tr '\r' '\n' | awk '
        match($0, /^\[ *[0-9]+ *\/ *[0-9]+ *\]/) {
            s = substr($0, RSTART + 1, RLENGTH - 2); split(s, a, "/"); if (a[2] + 0 > 0) p = 100 * a[1] / a[2]
        }
        /^(pm|dl)status:/ { split($0, a, ":"); p = a[3] + 0; ph = (a[1] == "dlstatus" ? "downloading " : "installing ") }
        END { if (p != "") printf "%s%d%%", ph, p }'
}

progress() {
    local label=$1 log=$2
    shift 2
    mkdir -p "$(dirname "$log")"
    : >"$log"
    local start=$SECONDS pct rc=0 tty=0
    [[ -t 2 ]] && tty=1
    "$@" >>"$log" 2>&1 &
    local pid=$!
    if (( tty )); then
        while kill -0 "$pid" 2>/dev/null; do
            pct=$(progress_percent "$log")
            printf '\r\033[K   %-34s %-18s %s' "$label" "${pct:-}" "$(progress_fmt $(( SECONDS - start )))" >&2
            sleep 1
        done
    fi
    wait "$pid" || rc=$?
    local took
    took=$(progress_fmt $(( SECONDS - start )))
    if (( rc != 0 )); then
        (( tty )) && printf '\r\033[K' >&2
        printf '   %-34s FAILED after %s; the last lines of its log (%s):\n' "$label" "$took" "$log" >&2
        tail -n 25 "$log" | sed 's/^/     | /' >&2
        return "$rc"
    fi
    (( tty )) && printf '\r\033[K' >&2
    printf '   %-34s done   %s\n' "$label" "$took" >&2
}
