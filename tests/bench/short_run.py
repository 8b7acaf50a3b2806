"""A short real run of the harness (CI): a tiny generated model, CPU alone against the plugin's defaults, one pass,
64-token prompts, with the pinned llama.cpp and the built plugin. It must produce the table and the chart, and the
plugin's own report must show that its workers computed the multiplies in one configuration and none in the other.

usage: short_run.py llama-bench|llama-server <build dir> <llama.cpp bin dir> <llama.cpp source dir>
"""

import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "..", "tools", "bench", "bench.py")


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def main():
    if len(sys.argv) != 5 or sys.argv[1] not in ("llama-bench", "llama-server"):
        print(__doc__)
        return 2
    mode, build, llama_bin, llama_src = sys.argv[1:]
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, BENCH, "--gen", "llama-tiny:Q4_0", "--config", "cpu", "--config", "default",
               "--passes", "1", "-t", "2", "--out", out, "--llama-bin", llama_bin, "--llama-src", llama_src,
               "--plugin", os.path.join(build, "bin", "libggml-xdna.so"),
               "--gen-model", os.path.join(build, "bin", "xdna-gen-model"),
               "--env", "GGML_XDNA_NPU=emulator"]   # the software XDNA1, asked for (by default: no device here)
        if mode == "llama-server":
            cmd += ["--server", "--prompt-tokens", "128", "--ctx-size", "256", "--requests", "2"]
        else:
            cmd += ["-p", "64", "-r", "2"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("GGML_XDNA_")}
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        print(proc.stderr)
        print(proc.stdout)
        if proc.returncode != 0:
            fail(f"the harness exited with {proc.returncode}")

        with open(os.path.join(out, "results.md"), encoding="utf-8") as f:
            md = f.read()
        rows = [ln for ln in md.splitlines() if ln.startswith("| llama-tiny")]
        if len(rows) != 2:
            fail(f"expected 2 table rows, found {len(rows)}")
        if "| none claimed |" not in rows[0]:
            fail("CPU alone (GGML_XDNA_MIN_BATCH=1000000): the plugin should have computed nothing: " + rows[0])
        if not re.search(r"\| (npu|gpu|cpu) \d+% \(", rows[1]):
            fail("defaults: the plugin's report should show which workers computed the rows: " + rows[1])
        if "| 1.00 |" not in rows[0]:
            fail("the baseline's ratio to itself is not 1.00: " + rows[0])

        with open(os.path.join(out, "results.json"), encoding="utf-8") as f:
            res = json.load(f)
        for cell in res["cells"]:
            samples = [x for p in cell["samples_per_pass"] for x in p]
            if len(samples) != 2 or not all(x > 0 for x in samples):
                fail(f"{cell['config']}: expected 2 positive samples, got {samples}")
            if mode == "llama-server" and cell["info"].get("prompt_tokens") != 128:
                fail(f"{cell['config']}: the server processed {cell['info'].get('prompt_tokens')} prompt tokens, "
                     "not the 128 sent")
        default = next(c for c in res["cells"] if c["config"] == "default")
        if default["workers"]["multiplies"] <= 0:
            fail("the default configuration's report counts no multiplies")

        png = os.path.join(out, "chart.png")
        if not os.path.isfile(png):
            fail("no chart.png")
        with open(png, "rb") as f:
            if f.read(8) != b"\x89PNG\r\n\x1a\n":
                fail("chart.png is not a PNG")
        if "![" not in md:
            fail("results.md does not show the chart")
    print(f"short {mode} run: table of 2 rows and a PNG chart")
    return 0


if __name__ == "__main__":
    sys.exit(main())
