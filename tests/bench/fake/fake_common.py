"""Shared by the stand-ins for llama-bench and llama-server in the harness's tests: what the plugin would do in
this environment, and a log of every call."""

import json
import os


def plugin_loaded():
    """Loaded when GGML_BACKEND_PATH names an existing libggml-xdna*.so and GGML_XDNA_DISABLE is not 1."""
    p = os.environ.get("GGML_BACKEND_PATH", "")
    return (os.path.isfile(p) and os.path.basename(p).startswith("libggml-xdna")
            and os.environ.get("GGML_XDNA_DISABLE", "0") != "1")


def claims():
    return plugin_loaded() and int(os.environ.get("GGML_XDNA_MIN_BATCH", "32")) <= 512


def speed():
    """Tokens/s: 100 for the CPU path, 100 * (1 + share) when the plugin claims with a fixed NPU share; then
    FAKE_PASS_FACTOR (a file of one number per call) scales it, to model a machine whose speed drifts."""
    share = float(os.environ.get("GGML_XDNA_NPU_SHARE", "0") or 0) if claims() else 0.0
    s = 100.0 * (1.0 + share)
    factors = os.environ.get("FAKE_FACTORS")
    if factors:
        calls = count_calls()
        with open(factors) as f:
            vals = [float(x) for x in f.read().split()]
        s *= vals[min(calls - 1, len(vals) - 1)]
    return s


def report_line(rows=4096):
    share = float(os.environ.get("GGML_XDNA_NPU_SHARE", "0") or 0)
    npu = int(rows * share)
    parts = ([f"npu: {npu} rows, 0.100 s"] if npu else []) + [f"cpu: {rows - npu} rows, 0.300 s"]
    return "ggml-xdna: 8 multiplies; " + " | ".join(parts)


def write_report():
    path = os.environ.get("GGML_XDNA_REPORT")
    if path and claims():
        with open(path, "a") as f:
            f.write(report_line() + "\n")


def log_call(tool, args):
    path = os.environ.get("FAKE_CALLS")
    if path:
        env = {k: v for k, v in os.environ.items() if k.startswith(("GGML_XDNA_", "XDNA_EMU_", "GGML_BACKEND"))}
        with open(path, "a") as f:
            f.write(json.dumps({"tool": tool, "args": args, "env": env, "nice": os.nice(0)}) + "\n")


def count_calls():
    path = os.environ.get("FAKE_CALLS")
    if not path or not os.path.exists(path):
        return 0
    with open(path) as f:
        return sum(1 for _ in f)
