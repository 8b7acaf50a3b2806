"""What each worker did: the lines the plugin appends to GGML_XDNA_REPORT at the end of each run.

    ggml-xdna: 22 multiplies in 0.350 s (0.020 s of it where a weight was converted for a device, 4 begun ahead); npu:
        1536 rows, 0.120 s | cpu: 4096 rows, 0.310 s   (one line; "in ... s (...)" is left out by plugins before it,
        ", N begun ahead" by those before that)
    ggml-xdna: 22 multiplies; npu: 256 rows, 0.040 s (2 runs failed, redone on the CPU) | cpu: 5376 rows, 0.5 s
    ggml-xdna: 3 multiplies; no rows
    ggml-xdna: 22 multiplies; npu: 1536 rows, 0.120 s (device busy 70%) (driven by the CPU's team in 11 runs, 30 results
        taken between its slices) | cpu: 4096 rows, 0.310 s   (one line)
    ggml-xdna: 22 multiplies; npu: 1536 rows, 0.120 s | cpu: 4096 rows, 0.310 s (in tiles in 18 runs)
"""

import re
from dataclasses import dataclass, field

_LINE_RE = re.compile(r"^ggml-xdna: (\d+) multiplies"
                      r"(?: in ([0-9.eE+-]+) s \(([0-9.eE+-]+) s of it where a weight was converted for a device"
                      r"(?:, (\d+) begun ahead)?\))?; (.*)$")
_PART_RE = re.compile(r"^([a-z]+): (\d+) rows, ([0-9.eE+-]+) s(?: \(device busy (\d+)%\))?"
                      r"(?: \(driven by the CPU's team in \d+ runs, \d+ results taken between its slices"
                      r"(?: in [0-9.eE+-]+ s)?\))?"
                      r"(?: \(in tiles in \d+ runs\))?"
                      r"(?: \((\d+) runs? failed[^)]*\))?$")


@dataclass
class WorkerTotals:
    rows: int = 0
    seconds: float = 0.0
    failed_runs: int = 0
    busy_seconds: float = 0.0   # its device busy meanwhile (the NPU's runs), when the plugin reports it


@dataclass
class RunReport:
    """The sum of every report line of one configuration (all its runs)."""
    lines: int = 0
    multiplies: int = 0
    seconds: float = 0.0             # the multiplies' own time, where the plugin reports it
    first_use_seconds: float = 0.0   # of it, the multiplies in which a weight was converted for a device
    ahead: int = 0                   # multiplies the NPU began ahead of their turn (the plugin's run_ahead)
    workers: dict = field(default_factory=dict)   # name -> WorkerTotals, in first-seen order

    def add(self, other):
        self.lines += other.lines
        self.multiplies += other.multiplies
        self.seconds += other.seconds
        self.first_use_seconds += other.first_use_seconds
        self.ahead += other.ahead
        for name, t in other.workers.items():
            mine = self.workers.setdefault(name, WorkerTotals())
            mine.rows += t.rows
            mine.seconds += t.seconds
            mine.failed_runs += t.failed_runs
            mine.busy_seconds += t.busy_seconds

    def total_rows(self):
        return sum(t.rows for t in self.workers.values())

    def describe(self):
        """One cell of the results table: each worker's share of the rows and its time."""
        if self.lines == 0:
            return "none claimed"
        total = self.total_rows()
        if total == 0:
            return f"{self.multiplies} multiplies, no rows"
        parts = []
        for name, t in self.workers.items():
            busy = f", device busy {100.0 * t.busy_seconds / t.seconds:.0f}%" if t.busy_seconds and t.seconds else ""
            s = f"{name} {100.0 * t.rows / total:.0f}% ({t.seconds:.2f} s{busy})"
            if t.failed_runs:
                s += f", {t.failed_runs} failed runs redone on the CPU"
            parts.append(s)
        return " · ".join(parts)


def parse_line(line):
    """One report line; ValueError naming it when it is not in the plugin's format."""
    m = _LINE_RE.match(line.strip())
    if not m:
        raise ValueError(f"not a ggml-xdna report line: {line.strip()!r}")
    rep = RunReport(lines=1, multiplies=int(m.group(1)), seconds=float(m.group(2) or 0.0),
                    first_use_seconds=float(m.group(3) or 0.0), ahead=int(m.group(4) or 0))
    body = m.group(5).strip()
    if body == "no rows":
        return rep
    for part in body.split(" | "):
        p = _PART_RE.match(part.strip())
        if not p:
            raise ValueError(f"ggml-xdna report line: cannot read the worker part {part.strip()!r}")
        name = p.group(1)
        if name in rep.workers:
            raise ValueError(f"ggml-xdna report line: worker '{name}' appears twice")
        seconds = float(p.group(3))
        busy = seconds * int(p.group(4)) / 100.0 if p.group(4) else 0.0
        rep.workers[name] = WorkerTotals(int(p.group(2)), seconds, int(p.group(5) or 0), busy)
    return rep


def parse_text(text):
    """Every report line of a file's text (other lines are ignored: the file is the user's to choose)."""
    rep = RunReport()
    for line in text.splitlines():
        if line.startswith("ggml-xdna: "):
            rep.add(parse_line(line))
    return rep


def read_file(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return parse_text(f.read())
    except FileNotFoundError:
        return RunReport()
