"""The measurement loop: passes, in each pass every model, in each model every configuration, one after another.

Interleaving is what makes the comparison fair on a machine whose speed drifts: every configuration sees the same
conditions within a pass, and the ratios are taken within passes.
"""

import os
import re
import subprocess
import time
from dataclasses import dataclass

from . import llama_bench, server, worker_report
from .configs import is_true, run_env


class RunError(RuntimeError):
    """A run failed; the message names the configuration and the log to read."""


@dataclass
class Paths:
    llama_bin: str
    plugin: str
    out_dir: str


def _slug(text):
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")


def _tail(path, n=8):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return ""
    return "\n".join("    " + line for line in lines[-n:])


def _expect_plugin(env):
    """Whether a run with this environment must show the plugin loaded."""
    return bool(env.get("GGML_BACKEND_PATH")) and not is_true(env.get("GGML_XDNA_DISABLE", "0"))


def niced(opts, cmd):
    """The command under nice -n N when --nice was given."""
    nice = getattr(opts, "nice", None)
    return cmd if nice is None else ["nice", "-n", str(nice), *cmd]


def _files(paths, model, config, pass_no):
    os.makedirs(os.path.join(paths.out_dir, "logs"), exist_ok=True)
    base = os.path.join(paths.out_dir, "logs", f"{_slug(model.label)}.{_slug(config.name)}.pass{pass_no}")
    report = base + ".report"
    if os.path.exists(report):
        os.remove(report)   # the plugin appends: a stale file would count twice
    return base + ".log", report


def bench_one(opts, paths, model, config, pass_no, base_env, common_env):
    """One llama-bench run of one configuration. Returns (samples tokens/s, worker report, info)."""
    log, report = _files(paths, model, config, pass_no)
    env = run_env(base_env, config, paths.plugin, common_env, report)
    cmd = niced(opts, llama_bench.command(paths.llama_bin, model.path, opts.prompt, opts.reps, opts.threads,
                                          opts.bench_args))
    with open(log, "w", encoding="utf-8") as err:
        err.write("# " + " ".join(cmd) + "\n")
        err.flush()
        try:
            proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=err, text=True, timeout=opts.timeout)
        except subprocess.TimeoutExpired:
            raise RunError(f"llama-bench ran past {opts.timeout} s on {model.label} / {config.name}; see {log}") from None
    if proc.returncode != 0:
        raise RunError(f"llama-bench failed (exit {proc.returncode}) on {model.label} / {config.name}; "
                       f"the end of {log}:\n{_tail(log)}")
    try:
        rec = llama_bench.prompt_record(llama_bench.parse_json(proc.stdout), opts.prompt)
    except ValueError as e:
        raise RunError(f"{model.label} / {config.name}: {e} (log: {log})") from None
    backends = [b.strip() for b in rec.backends.split(",")]
    if _expect_plugin(env) and "XDNA" not in backends:
        raise RunError(f"{model.label} / {config.name}: the plugin did not load (llama-bench's backends: "
                       f"{rec.backends or 'none'}); see {log}")
    info = {"backends": rec.backends, "devices": rec.cpu_info, "llama_commit": rec.build_commit,
            "model_type": rec.model_type}
    return rec.samples_ts, worker_report.read_file(report), info


def server_one(opts, paths, model, config, pass_no, base_env, common_env, prompt_text):
    """One fresh llama-server for one configuration: a warm-up request, then opts.requests measured ones."""
    log, report = _files(paths, model, config, pass_no)
    env = run_env(base_env, config, paths.plugin, common_env, report)
    devices = server_devices(paths, env, log)
    if _expect_plugin(env) and not devices.startswith("XDNA") and "; XDNA" not in devices:
        raise RunError(f"{model.label} / {config.name}: the plugin did not load in llama-server (its devices: "
                       f"{devices or 'none'})")
    port = server.free_port()
    srv = server.Server(niced(opts, server.command(paths.llama_bin, model.path, opts.threads, opts.ctx_size, port,
                                                   opts.server_args)), env, log, port)
    try:
        srv.start(timeout=opts.timeout)
        tokens = server.fit_tokens(srv.tokenize(prompt_text), opts.prompt_tokens)
        srv.complete(tokens)                                   # warm-up
        measured = [srv.complete(tokens) for _ in range(opts.requests)]
    except server.ServerError as e:
        raise RunError(f"{model.label} / {config.name}: {e}\n{_tail(log)}") from None
    finally:
        srv.stop()
    counts = sorted({n for n, _ in measured})
    info = {"prompt_tokens": counts[0] if len(counts) == 1 else counts, "devices": devices}
    return [tps for _, tps in measured], worker_report.read_file(report), info


def server_devices(paths, env, log):
    """The devices llama-server sees with this environment (its --list-devices), as one line. The server's own
    log does not say whether the plugin loaded at its default verbosity, and a more verbose log costs time."""
    cmd = [os.path.join(paths.llama_bin, "llama-server"), "--list-devices"]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        raise RunError(f"llama-server --list-devices did not finish; see {log}") from None
    lines = [ln.strip() for ln in (proc.stdout + proc.stderr).splitlines()]
    after = lines[lines.index("Available devices:") + 1:] if "Available devices:" in lines else []
    # device lines read "NAME: description (memory)"; anything else there is some library's log
    return "; ".join(ln for ln in after if re.match(r"^[A-Za-z0-9_.-]+: ", ln))


def run(opts, paths, results, models, configs, base_env, common_env, progress, prompt_text=None):
    """Fills `results` pass by pass. Every cell gets exactly one list of samples per pass."""
    t0 = time.monotonic()
    for p in range(1, opts.passes + 1):
        for model in models:
            for config in configs:
                progress.start(f"pass {p}/{opts.passes}  {model.label}  {config.name}")
                if opts.server:
                    samples, rep, info = server_one(opts, paths, model, config, p, base_env, common_env, prompt_text)
                else:
                    samples, rep, info = bench_one(opts, paths, model, config, p, base_env, common_env)
                cell = results.cell(model.label, config)
                cell.passes.append(samples)
                cell.report.add(rep)
                cell.info.update(info)
                unit = "prompt tok/s" if opts.server else "tok/s"
                progress.finish(f"{' '.join(f'{x:.1f}' for x in samples)} {unit}")
    results.seconds = time.monotonic() - t0
    return results
