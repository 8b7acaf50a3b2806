"""Progress while a run goes: one line per measurement, with the time spent and an estimate of what is left."""

import sys
import time


def fmt_duration(s):
    s = int(round(s))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


class Progress:
    def __init__(self, total, out=None, clock=time.monotonic):
        self.total = total
        self.done = 0
        self.out = out or sys.stderr
        self.clock = clock
        self.t0 = clock()
        self.current = ""

    def start(self, what):
        self.current = what
        width = len(str(self.total))
        self.out.write(f"[{self.done + 1:>{width}}/{self.total}] {what} ... ")
        self.out.flush()

    def finish(self, result):
        self.done += 1
        elapsed = self.clock() - self.t0
        left = elapsed / self.done * (self.total - self.done)
        tail = f"(elapsed {fmt_duration(elapsed)}" + (f", ~{fmt_duration(left)} left)" if self.done < self.total else ")")
        self.out.write(f"{result}  {tail}\n")
        self.out.flush()

    def note(self, text):
        self.out.write(text + "\n")
        self.out.flush()
