"""The results of one harness run: every (model, configuration) cell with its samples per pass."""

import json
from dataclasses import dataclass, field

from . import stats
from .configs import Config
from .worker_report import RunReport, WorkerTotals


@dataclass
class Cell:
    model: str
    config: Config
    passes: list = field(default_factory=list)     # one list of tokens/s samples per pass
    report: RunReport = field(default_factory=RunReport)
    info: dict = field(default_factory=dict)       # what the runs said about themselves (backends, device, ...)

    def summary(self):
        return stats.summarize(self.passes)


@dataclass
class Results:
    mode: str                   # "llama-bench" or "llama-server"
    measurement: str            # the measured command, as a user would type it
    models: list                # model labels, in order
    configs: list               # Config, in order
    baseline: str               # the configuration the ratios are taken against
    passes: int
    cells: dict = field(default_factory=dict)     # (model, config name) -> Cell
    machine: list = field(default_factory=list)   # lines describing the machine
    label: str = ""             # e.g. "emulated NPU, timed mode: the NPU's times are modelled"
    command: str = ""           # the command that reproduces this run
    started: str = ""
    seconds: float = 0.0

    def cell(self, model, config):
        key = (model, config.name)
        if key not in self.cells:
            self.cells[key] = Cell(model, config)
        return self.cells[key]

    def ratio(self, model, config_name):
        c = self.cells.get((model, config_name))
        b = self.cells.get((model, self.baseline))
        if not c or not b or not c.passes or not b.passes:
            return None
        return stats.within_pass_ratio(c.passes, b.passes)

    def to_json(self):
        return {
            "mode": self.mode, "measurement": self.measurement, "models": self.models,
            "configs": [{"name": c.name, "env": c.env, "about": c.about} for c in self.configs],
            "baseline": self.baseline, "passes": self.passes, "machine": self.machine, "label": self.label,
            "command": self.command, "started": self.started, "seconds": self.seconds,
            "cells": [{
                "model": cell.model, "config": cell.config.name, "samples_per_pass": cell.passes,
                "info": cell.info,
                "workers": {"report_lines": cell.report.lines, "multiplies": cell.report.multiplies,
                            "per_worker": {n: vars(t) for n, t in cell.report.workers.items()}},
            } for cell in self.cells.values()],
        }

    @staticmethod
    def from_json(data):
        """Reads back what to_json wrote (to redraw a table or chart without measuring again)."""
        try:
            configs = [Config(c["name"], dict(c["env"]), c.get("about", "")) for c in data["configs"]]
            r = Results(data["mode"], data["measurement"], list(data["models"]), configs, data["baseline"],
                        int(data["passes"]), machine=list(data.get("machine", [])), label=data.get("label", ""),
                        command=data.get("command", ""), started=data.get("started", ""),
                        seconds=float(data.get("seconds", 0.0)))
            by_name = {c.name: c for c in configs}
            for c in data["cells"]:
                cell = r.cell(c["model"], by_name[c["config"]])
                cell.passes = [[float(x) for x in p] for p in c["samples_per_pass"]]
                cell.info = dict(c.get("info", {}))
                w = c.get("workers", {})
                cell.report = RunReport(lines=int(w.get("report_lines", 0)), multiplies=int(w.get("multiplies", 0)))
                for name, t in w.get("per_worker", {}).items():
                    cell.report.workers[name] = WorkerTotals(int(t["rows"]), float(t["seconds"]),
                                                             int(t.get("failed_runs", 0)))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"not a results file of this harness ({type(e).__name__}: {e})") from None
        return r


def save(results, path):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(results.to_json(), f, indent=1)
        f.write("\n")


def load(path):
    with open(path, encoding="utf-8") as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not JSON ({e.msg} at line {e.lineno})") from None
    return Results.from_json(data)
