"""llama-bench: the command line and its JSON output (-o json)."""

import json
import os
from dataclasses import dataclass, field


@dataclass
class BenchRecord:
    """One llama-bench test: its timed repetitions as tokens/s, and what it ran on."""
    n_prompt: int
    n_gen: int
    n_threads: int
    avg_ts: float
    stddev_ts: float
    samples_ts: list = field(default_factory=list)
    backends: str = ""
    cpu_info: str = ""
    build_commit: str = ""
    model_type: str = ""


def command(llama_bin, model, prompt, reps, threads, extra=()):
    """The spec's measurement: llama-bench -p P -n 0 -r R -t T -ngl 0, as JSON."""
    return [os.path.join(llama_bin, "llama-bench"), "-m", model, "-p", str(prompt), "-n", "0",
            "-r", str(reps), "-t", str(threads), "-ngl", "0", "-o", "json", *extra]


def _number(rec, key, kind, where):
    if key not in rec:
        raise ValueError(f"llama-bench output: {where} has no '{key}'")
    try:
        return kind(rec[key])
    except (TypeError, ValueError):
        raise ValueError(f"llama-bench output: {where} has a non-numeric '{key}': {rec[key]!r}") from None


def parse_json(text):
    """The records of llama-bench's -o json output, in order. Raises ValueError with one line on bad input."""
    text = text.strip()
    if not text:
        raise ValueError("llama-bench printed nothing on stdout")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"llama-bench output is not JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(data, list):
        raise ValueError("llama-bench output: expected a JSON list of tests")
    out = []
    for i, rec in enumerate(data):
        where = f"test {i + 1}"
        if not isinstance(rec, dict):
            raise ValueError(f"llama-bench output: {where} is not an object")
        samples = rec.get("samples_ts", [])
        if not isinstance(samples, list) or not all(isinstance(x, (int, float)) for x in samples):
            raise ValueError(f"llama-bench output: {where} has a malformed 'samples_ts'")
        out.append(BenchRecord(
            n_prompt=_number(rec, "n_prompt", int, where),
            n_gen=_number(rec, "n_gen", int, where),
            n_threads=_number(rec, "n_threads", int, where),
            avg_ts=_number(rec, "avg_ts", float, where),
            stddev_ts=_number(rec, "stddev_ts", float, where),
            samples_ts=[float(x) for x in samples],
            backends=str(rec.get("backends", "")),
            cpu_info=str(rec.get("cpu_info", "")),
            build_commit=str(rec.get("build_commit", "")),
            model_type=str(rec.get("model_type", "")),
        ))
    return out


def prompt_record(records, n_prompt):
    """The one prompt-processing test of a run (n_prompt tokens, no generation)."""
    found = [r for r in records if r.n_prompt == n_prompt and r.n_gen == 0]
    if len(found) != 1:
        raise ValueError(f"llama-bench output: expected one test with n_prompt={n_prompt} and n_gen=0, "
                         f"found {len(found)}")
    rec = found[0]
    if not rec.samples_ts:
        rec.samples_ts = [rec.avg_ts]   # older outputs without samples: the average stands for them
    if any(x <= 0 for x in rec.samples_ts):
        raise ValueError("llama-bench output: a repetition has no positive tokens/s")
    return rec
