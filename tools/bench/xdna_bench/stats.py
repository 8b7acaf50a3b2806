"""Statistics of one measurement: the median and spread of its samples, and its ratio to the baseline.

Samples are kept per pass (a pass runs every configuration once, interleaved). The ratio to the baseline is taken
within each pass, then the median of those ratios is reported: a machine that drifts between passes (a busy
neighbour, a warm or cold cache) moves both sides of each ratio together.
"""

from dataclasses import dataclass


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    if n == 0:
        raise ValueError("median of no samples")
    mid = n // 2
    return xs[mid] if n % 2 else 0.5 * (xs[mid - 1] + xs[mid])


@dataclass
class Summary:
    median: float
    low: float
    high: float
    n: int

    @property
    def spread_pct(self):
        """(max - min) / median, in percent: how much the samples disagree."""
        return 100.0 * (self.high - self.low) / self.median if self.median > 0 else 0.0


def summarize(passes):
    """passes: a list (one per pass) of lists of samples."""
    flat = [x for p in passes for x in p]
    if not flat:
        raise ValueError("no samples to summarize")
    return Summary(median(flat), min(flat), max(flat), len(flat))


@dataclass
class Ratio:
    median: float
    low: float
    high: float
    n: int   # passes in which both sides were measured


def within_pass_ratio(passes, base_passes):
    """The ratio of a configuration to the baseline, per pass (median over median), then over passes."""
    ratios = []
    for mine, base in zip(passes, base_passes):
        if mine and base:
            b = median(base)
            if b > 0:
                ratios.append(median(mine) / b)
    if not ratios:
        return None
    return Ratio(median(ratios), min(ratios), max(ratios), len(ratios))
