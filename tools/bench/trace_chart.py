#!/usr/bin/env python3
"""Draws one layer of a ggml-xdna timeline (GGML_XDNA_TRACE=file.json) as a PNG, and sums up who was busy.

    python3 tools/bench/trace_chart.py TRACE.json OUT.png [--layer N] [--pass K] [--title T]
    python3 tools/bench/trace_chart.py TRACE.json --summary-only

The window is one pass over one layer: from the start of the layer's first "multiply" event to the end of its last
(a layer's occurrence is a run of consecutive multiplies named for it: llama-bench's repetitions give several).
Default: the middle layer present, its last complete occurrence. The chart has one lane per trace lane (the NPU's
own lane on top), an event a box coloured by its name, nested events thinner; time in ms from the window's start.

Printed, one line per lane: its busy time (the union of its events) in the window and its share of the window; for
the NPU's lane also the NPU's busy time as a share of the NPU worker's ("npu rows" events). With --summary-only the
same over the whole trace, and no chart. Python 3 standard library; the chart is drawn by gnuplot.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xdna_bench.chart import terminal  # noqa: E402  (the one place that asks gnuplot for its terminals)

DEVICE_NAME = "NPU (device)"
WORKER_EVENT = "npu rows"       # the NPU worker's share of a multiply, on its host lane
DEVICE_EVENT = "npu run"
MARGIN = 0.03                   # of the window, either side of the chart

# One colour per event name; names not listed take the next of SPARE.
COLOURS = {
    "multiply": "#9ecae1",
    "cpu rows": "#3182bd",
    "npu rows": "#c7e9c0",
    "weights": "#fd8d3c",
    "convert activations": "#9e9ac8",
    "copy weights": "#e6550d",
    "launch": "#31a354",
    "wait": "#bdbdbd",
    "take result": "#756bb1",
    "npu run": "#d62728",
}
SPARE = ["#8c564b", "#e377c2", "#bcbd22", "#17becf", "#7f7f7f", "#ff9896", "#aec7e8", "#98df8a"]


class TraceError(Exception):
    """A trace that cannot be read, or a window that is not in it: one line for the user."""


class Event:
    __slots__ = ("tid", "name", "t0", "t1", "n", "what")

    def __init__(self, tid, name, t0, t1, n=None, what=""):
        self.tid, self.name, self.t0, self.t1, self.n, self.what = tid, name, t0, t1, n, what

    @property
    def node(self):
        """The ggml node's name, for a multiply ("ffn_up-3: MUL_MAT ..." -> "ffn_up-3")."""
        return self.what.split(": ", 1)[0].strip()

    @property
    def layer(self):
        return layer_of(self.node)


class Trace:
    def __init__(self, events, lane_names, lane_order):
        self.events = events             # the complete ("X") events, in seconds, by start time
        self.lane_names = lane_names     # tid -> name
        self.lane_order = lane_order     # tid -> sort index

    def lanes(self):
        """The lanes that hold events, top first: by sort index, then tid."""
        tids = {e.tid for e in self.events}
        return sorted(tids, key=lambda t: (self.lane_order.get(t, 1 << 30), t))

    def name(self, tid):
        return self.lane_names.get(tid, f"lane {tid}")

    def is_device(self, tid):
        return self.name(tid) == DEVICE_NAME or any(e.tid == tid and e.name == DEVICE_EVENT for e in self.events)

    def multiplies(self):
        return [e for e in self.events if e.name == "multiply"]


_LAYER = re.compile(r"-(\d+)(?: \(.*\))?$")


def layer_of(node):
    """The layer a ggml node belongs to: the integer after the last '-' ("Qcur-3" -> 3), or None."""
    m = _LAYER.search(node)
    return int(m.group(1)) if m else None


def _number(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TraceError(f"malformed trace: {what} is not a number ({value!r})")
    return float(value)


def parse(text):
    """A Trace from the JSON text (the object form, or a bare list of events)."""
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise TraceError(f"not a JSON trace ({e})") from None
    raw = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(raw, list):
        raise TraceError("malformed trace: no traceEvents list")
    events, names, order = [], {}, {}
    for i, ev in enumerate(raw):
        if not isinstance(ev, dict):
            raise TraceError(f"malformed trace: event {i} is not an object")
        ph = ev.get("ph")
        args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
        if ph == "M":
            if "tid" not in ev:
                continue                          # process_name and the like
            if ev.get("name") == "thread_name" and isinstance(args.get("name"), str):
                names[ev["tid"]] = args["name"]
            elif ev.get("name") == "thread_sort_index" and isinstance(args.get("sort_index"), (int, float)):
                order[ev["tid"]] = args["sort_index"]
        elif ph == "X":
            if not isinstance(ev.get("name"), str):
                raise TraceError(f"malformed trace: event {i} has no name")
            ts = _number(ev.get("ts"), f"event {i}'s ts")
            dur = _number(ev.get("dur"), f"event {i}'s dur")
            if dur < 0:
                raise TraceError(f"malformed trace: event {i} has a negative duration")
            n = args.get("n")
            what = args.get("what")
            events.append(Event(ev.get("tid", 0), ev["name"], ts * 1e-6, (ts + dur) * 1e-6,
                                n if isinstance(n, int) else None, what if isinstance(what, str) else ""))
        # other phases (instant, counter, flow...) are not written by the plugin; ignored
    if not events:
        raise TraceError("the trace holds no events")
    events.sort(key=lambda e: (e.t0, -e.t1))
    return Trace(events, names, order)


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise TraceError(f"cannot read it ({e.strerror if isinstance(e, OSError) else e})") from None
    return parse(text)


# ---------------------------------------------------------------------------------------------------------------
# The window


class Window:
    def __init__(self, layer, index, count, multiplies):
        self.layer, self.index, self.count = layer, index, count   # index: 1-based occurrence
        self.multiplies = multiplies
        self.t0 = min(e.t0 for e in multiplies)
        self.t1 = max(e.t1 for e in multiplies)

    @property
    def duration(self):
        return self.t1 - self.t0


def occurrences(trace, layer):
    """The layer's occurrences: runs of consecutive multiplies (by start time) all named for that layer."""
    runs, current = [], []
    for e in trace.multiplies():
        if e.layer == layer:
            current.append(e)
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return runs


def layers(trace):
    return sorted({e.layer for e in trace.multiplies() if e.layer is not None})


def choose_window(trace, layer=None, pass_no=None):
    present = layers(trace)
    if not present:
        raise TraceError("no multiply in the trace names a layer (node names ending in -<layer>)")
    if layer is None:
        layer = present[len(present) // 2]
    runs = occurrences(trace, layer)
    if not runs:
        raise TraceError(f"layer {layer} not found in the trace (layers present: {_ranges(present)})")
    if pass_no is None:
        # the last complete one: as many multiplies as the layer's fullest occurrence (a full trace loses its end)
        most = max(len(r) for r in runs)
        index = max(i for i, r in enumerate(runs) if len(r) == most) + 1
    else:
        if not 1 <= pass_no <= len(runs):
            raise TraceError(f"layer {layer} occurs {len(runs)} time(s) in the trace, so there is no pass {pass_no}")
        index = pass_no
    return Window(layer, index, len(runs), runs[index - 1])


def _ranges(values):
    out, start, prev = [], None, None
    for v in values + [None]:
        if start is not None and (v is None or v != prev + 1):
            out.append(str(start) if start == prev else f"{start}-{prev}")
            start = None
        if v is not None and start is None:
            start = v
        prev = v
    return ", ".join(out)


# ---------------------------------------------------------------------------------------------------------------
# Busy time


def merged(intervals):
    """The union of [t0, t1] intervals, as disjoint sorted intervals."""
    out = []
    for t0, t1 in sorted(intervals):
        if out and t0 <= out[-1][1]:
            out[-1][1] = max(out[-1][1], t1)
        else:
            out.append([t0, t1])
    return out


def busy(events, lo=None, hi=None):
    """Time covered by at least one of the events, clipped to [lo, hi] when given."""
    spans = []
    for e in events:
        t0 = e.t0 if lo is None else max(e.t0, lo)
        t1 = e.t1 if hi is None else min(e.t1, hi)
        if t1 > t0:
            spans.append((t0, t1))
    return sum(t1 - t0 for t0, t1 in merged(spans))


def total(events, lo=None, hi=None):
    """The events' durations added up (clipped to [lo, hi] when given)."""
    s = 0.0
    for e in events:
        t0 = e.t0 if lo is None else max(e.t0, lo)
        t1 = e.t1 if hi is None else min(e.t1, hi)
        s += max(0.0, t1 - t0)
    return s


def lane_figures(trace, lo=None, hi=None):
    """[(tid, name, busy seconds, device share or None, worker seconds)] per lane, top first.
    The device share: the NPU's busy time over the NPU worker's time ("npu rows", added up over its lanes)."""
    worker = total([e for e in trace.events if e.name == WORKER_EVENT], lo, hi)
    out = []
    for tid in trace.lanes():
        evs = [e for e in trace.events if e.tid == tid]
        b = busy(evs, lo, hi)
        share = (b / worker if worker > 0 else None) if trace.is_device(tid) else None
        out.append((tid, trace.name(tid), b, share, worker))
    return out


def _pct(x):
    return f"{100.0 * x:.1f}%"


def summary_lines(trace, window=None):
    if window is None:
        t0 = min(e.t0 for e in trace.events)
        t1 = max(e.t1 for e in trace.events)
        span = t1 - t0
        lines = [f"whole trace: {span:.3f} s from the first event to the end of the last, "
                 f"{len(trace.lanes())} lanes, {len(trace.events)} events"]
        for tid, name, b, share, worker in lane_figures(trace):
            line = f"{name}: busy {b:.3f} s ({_pct(b / span) if span > 0 else '-'} of the trace)"
            if trace.is_device(tid):
                line += (f"; NPU busy {_pct(share)} of the NPU worker's time ({b:.3f} of {worker:.3f} s "
                         f"in \"{WORKER_EVENT}\")" if share is not None else f"; no \"{WORKER_EVENT}\" events")
            lines.append(line)
        return lines
    w = window
    ms = 1e3
    lines = [f"window: layer {w.layer}, pass {w.index} of {w.count}, {w.t0 * ms:.3f} to {w.t1 * ms:.3f} ms "
             f"({w.duration * ms:.3f} ms), {len(w.multiplies)} multiplies"]
    for tid, name, b, share, worker in lane_figures(trace, w.t0, w.t1):
        line = f"{name}: busy {b * ms:.3f} ms, {_pct(b / w.duration) if w.duration > 0 else '-'} of the window"
        if trace.is_device(tid):
            line += (f"; NPU busy {_pct(share)} of the NPU worker's time ({b * ms:.3f} of {worker * ms:.3f} ms "
                     f"in \"{WORKER_EVENT}\")" if share is not None else f"; no \"{WORKER_EVENT}\" in the window")
        lines.append(line)
    return lines


# ---------------------------------------------------------------------------------------------------------------
# The chart


def _quote(text):
    return '"' + str(text).replace("\\", "\\\\").replace('"', "'") + '"'


def colours_for(names):
    out, spare = {}, 0
    for n in names:
        if n in COLOURS:
            out[n] = COLOURS[n]
        else:
            out[n] = SPARE[spare % len(SPARE)]
            spare += 1
    return out


def depths(events):
    """Per event (same order), how many earlier events on its lane still run when it starts: its nesting."""
    out, stack = [], []
    for e in events:     # by start, longest first
        while stack and stack[-1] <= e.t0:
            stack.pop()
        out.append(len(stack))
        stack.append(e.t1)
        stack.sort(reverse=True)
    return out


def chart_data(trace, window):
    """(lanes [(name, y)], boxes [(x0, x1, y0, y1, colour int)], labels [(x, y, text)], legend [(name, colour)],
    x range (lo, hi)); x in ms from the window's start."""
    pad = max(window.duration * MARGIN, 1e-6)
    lo, hi = window.t0 - pad, window.t1 + pad
    ms = lambda t: (t - window.t0) * 1e3
    lanes = trace.lanes()
    labelled = {e.tid for e in window.multiplies}
    # y positions from the bottom; a lane with multiply labels gets room above it
    ys, y = {}, 0.0
    for tid in reversed(lanes):
        ys[tid] = y
        y += 1.0 + (1.1 if tid in labelled else 0.0)
    shown = [e for e in trace.events if e.t1 > lo and e.t0 < hi]
    present = {e.name for e in shown}
    names = [n for n in COLOURS if n in present] + sorted(present - set(COLOURS))
    colours = colours_for(names)
    boxes = []
    for tid in lanes:
        evs = [e for e in shown if e.tid == tid]
        for e, d in zip(evs, depths(evs)):
            half = max(0.1, 0.38 - 0.1 * d)
            boxes.append((d, ms(max(e.t0, lo)), ms(min(e.t1, hi)), ys[tid] - half, ys[tid] + half,
                          int(colours[e.name][1:], 16)))
    boxes.sort(key=lambda b: b[0])    # outer boxes first, so nested ones are drawn over them
    labels = [(ms(e.t0), ys[e.tid] + 0.42, e.node) for e in window.multiplies]
    return ([(trace.name(t), ys[t]) for t in lanes], [b[1:] for b in boxes], labels,
            [(n, colours[n]) for n in names], (ms(lo), ms(hi)))




def script_text(trace, window, data_file, png_file, title, term):
    lanes, boxes, labels, legend, (x_lo, x_hi) = chart_data(trace, window)
    top = max(y for _, y in lanes) + 0.6
    height = 160 + int(70 * (top + 0.6))
    lines = [
        f"set terminal {term} size 1400,{height}" + (" font 'sans,10'" if term == "pngcairo" else ""),
        "set termoption noenhanced",     # node names hold underscores
        f"set output {_quote(png_file)}",
        f"set title {_quote(title)}",
        "set xlabel 'ms from the start of the layer'",
        f"set xrange [{x_lo:.6f}:{x_hi:.6f}]",
        f"set yrange [-0.6:{top:.3f}]",
        "set ytics (" + ", ".join(f"{_quote(n)} {y:g}" for n, y in lanes) + ")",
        "set grid xtics",
        "set style fill solid 0.9 border rgb '#404040'",
        "set key outside right top vertical Left reverse noautotitle",
        "set border 3",
        "set tics nomirror",
    ]
    with open(data_file, "w", encoding="utf-8") as f:
        f.write("# x0 x1 y0 y1 colour\n")
        for x0, x1, y0, y1, c in boxes:
            f.write(f"{x0:.6f} {x1:.6f} {y0:.3f} {y1:.3f} {c}\n")
        f.write("\n\n# x y node\n")
        for x, y, text in labels:
            f.write(f"{x:.6f} {y:.3f} {_quote(text)}\n")
    plots = [f"{_quote(data_file)} index 0 using (($1+$2)/2):(($3+$4)/2):1:2:3:4:5 with boxxyerror lc rgb variable"]
    if labels:
        plots.append(f"'' index 1 using 1:2:3 with labels left rotate by 30 offset 0,0.2 font ',8'")
    plots += [f"keyentry with boxes lc rgb {_quote(c)} title {_quote(n)}" for n, c in legend]
    lines.append("plot " + ", \\\n     ".join(plots))
    return "\n".join(lines) + "\n"


def draw(trace, window, png, title):
    gp = shutil.which("gnuplot")
    if not gp:
        raise TraceError("gnuplot is not installed (Debian: gnuplot-nox), so no chart")
    png = os.path.abspath(png)
    if not os.path.isdir(os.path.dirname(png)):
        raise TraceError(f"cannot write {png}: no such directory")
    with tempfile.TemporaryDirectory(prefix="trace-chart-") as tmp:
        data_file = os.path.join(tmp, "trace.dat")
        script = os.path.join(tmp, "trace.gp")
        with open(script, "w", encoding="utf-8") as f:
            f.write(script_text(trace, window, data_file, png, title, terminal()))
        proc = subprocess.run([gp, script], cwd=tmp, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0 or not os.path.isfile(png) or os.path.getsize(png) == 0:
        err = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise TraceError(f"gnuplot failed ({err})")


# ---------------------------------------------------------------------------------------------------------------


def main(argv=None):
    ap = argparse.ArgumentParser(description="Draws one layer of a ggml-xdna timeline (GGML_XDNA_TRACE) as a PNG "
                                             "and prints each lane's busy time.")
    ap.add_argument("trace", help="the trace file (Chrome trace-event JSON)")
    ap.add_argument("png", nargs="?", help="the PNG to write")
    ap.add_argument("--layer", type=int, help="the layer to draw (default: the middle layer present)")
    ap.add_argument("--pass", dest="pass_no", type=int, metavar="K",
                    help="the layer's K-th occurrence, from 1 (default: the last complete one)")
    ap.add_argument("--title", help="the chart's title")
    ap.add_argument("--summary-only", action="store_true", help="print the whole trace's summary; no chart")
    args = ap.parse_args(argv)
    if not args.summary_only and not args.png:
        ap.error("the PNG to write is missing (or give --summary-only)")
    try:
        trace = load(args.trace)
        if args.summary_only:
            print("\n".join(summary_lines(trace)))
            return 0
        window = choose_window(trace, args.layer, args.pass_no)
        print("\n".join(summary_lines(trace, window)))
        title = args.title or (f"{os.path.basename(args.trace)}: layer {window.layer}, "
                               f"pass {window.index} of {window.count}")
        draw(trace, window, args.png, title)
    except TraceError as e:
        print(f"trace_chart: {args.trace}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
