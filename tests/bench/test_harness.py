"""The whole harness, run as a user runs it, against stand-ins for llama-bench and llama-server (fake/): the order
of the runs, the environment each gets, the table it writes, and how it fails."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "..", "tools", "bench", "bench.py")
FAKE = os.path.join(HERE, "fake")


class Harness(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.plugin = self.touch("libggml-xdna.so")
        self.model_a = self.touch("model-a.gguf")
        self.model_b = self.touch("model-b.gguf")
        self.calls = os.path.join(self.dir, "calls.jsonl")
        self.out = os.path.join(self.dir, "out")

    def tearDown(self):
        self.tmp.cleanup()

    def touch(self, name):
        p = os.path.join(self.dir, name)
        with open(p, "w") as f:
            f.write("x")
        return p

    def run_bench(self, *args, env=None, plugin=None):
        e = {k: v for k, v in os.environ.items() if not k.startswith(("GGML_XDNA_", "FAKE_", "XDNA_EMU_"))}
        e.update({"FAKE_CALLS": self.calls}, **(env or {}))
        cmd = [sys.executable, BENCH, "--llama-bin", FAKE, "--plugin", plugin or self.plugin, "--out", self.out,
               "-t", "2", *args]
        return subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=120)

    def calls_made(self, tool=None):
        with open(self.calls) as f:
            calls = [json.loads(line) for line in f]
        return [c for c in calls if tool is None or c["tool"] == tool]

    def results(self):
        with open(os.path.join(self.out, "results.json")) as f:
            return json.load(f)

    def report_text(self):
        with open(os.path.join(self.out, "results.md")) as f:
            return f.read()

    def table_rows(self):
        with open(os.path.join(self.out, "results.md")) as f:
            return [ln for ln in f.read().splitlines() if ln.startswith("| ") and not ln.startswith("| model |")]

    def test_configurations_are_interleaved_in_passes(self):
        p = self.run_bench("--model", self.model_a, "--model", self.model_b, "--config", "cpu", "--config",
                           "share0.5", "--config", "stock", "--passes", "2", "-r", "2", "-p", "64")
        self.assertEqual(p.returncode, 0, p.stderr)
        calls = self.calls_made()
        order = [(os.path.basename(c["args"][c["args"].index("-m") + 1]),
                  c["env"].get("GGML_XDNA_MIN_BATCH") or c["env"].get("GGML_XDNA_NPU_SHARE")
                  or ("plugin" if "GGML_BACKEND_PATH" in c["env"] else "stock")) for c in calls]
        one_pass = [("model-a.gguf", "1000000"), ("model-a.gguf", "0.5"), ("model-a.gguf", "stock"),
                    ("model-b.gguf", "1000000"), ("model-b.gguf", "0.5"), ("model-b.gguf", "stock")]
        self.assertEqual(order, one_pass * 2)
        args = calls[0]["args"]
        for flag, value in (("-p", "64"), ("-n", "0"), ("-r", "2"), ("-t", "2"), ("-ngl", "0"), ("-o", "json")):
            self.assertEqual(args[args.index(flag) + 1], value)
        # progress: one line per run, numbered
        self.assertIn("[12/12] pass 2/2", p.stderr)

    def test_table_ratios_and_workers(self):
        p = self.run_bench("--model", self.model_a, "--config", "cpu", "--config", "share0.5", "--passes", "2")
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = self.table_rows()
        self.assertEqual(len(rows), 2)
        self.assertIn("| 1.00 |", rows[0])
        self.assertIn("| none claimed |", rows[0])
        self.assertIn("| 1.50 |", rows[1])
        # two runs, each reporting 2048 NPU rows of 4096
        self.assertIn("npu 50% (0.20 s) · cpu 50% (0.60 s)", rows[1])
        res = self.results()
        self.assertEqual(len(res["cells"]), 2)
        self.assertTrue(all(len(c["samples_per_pass"]) == 2 for c in res["cells"]))
        self.assertTrue(os.path.isfile(os.path.join(self.out, "chart.png")) or "no chart" in p.stdout)
        self.assertIn("reproduce: `", self.report_text())

    def test_drift_between_passes_leaves_the_ratio(self):
        factors = self.touch("factors")
        with open(factors, "w") as f:
            f.write("1 1 2 2 0.5 0.5")   # the machine doubles, then halves its speed between passes
        p = self.run_bench("--model", self.model_a, "--config", "cpu", "--config", "share0.2", "--passes", "3",
                           "-r", "1", env={"FAKE_FACTORS": factors})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("| 1.20 |", self.table_rows()[1])

    def test_the_shells_plugin_settings_are_ignored(self):
        p = self.run_bench("--model", self.model_a, "--config", "default", "--passes", "1", "--env",
                           "GGML_XDNA_DEBUG=1", env={"GGML_XDNA_NPU_SHARE": "0.9", "XDNA_EMU_MODE": "timed"})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("ignoring your shell's GGML_XDNA_NPU_SHARE", p.stderr)
        env = self.calls_made()[0]["env"]
        self.assertNotIn("GGML_XDNA_NPU_SHARE", env)
        self.assertEqual(env["GGML_XDNA_DEBUG"], "1")
        self.assertEqual(env["XDNA_EMU_MODE"], "timed")
        self.assertIn("XDNA_EMU_MODE=timed", self.report_text())

    def test_a_failed_run_stops_with_its_log(self):
        p = self.run_bench("--model", self.model_a, "--passes", "1", env={"FAKE_FAIL": "1"})
        self.assertEqual(p.returncode, 1)
        self.assertIn("llama-bench failed (exit 1) on model-a / cpu", p.stderr)
        self.assertIn("error: failed to load model", p.stderr)

    def test_a_plugin_that_does_not_load_is_an_error(self):
        other = self.touch("libother.so")
        p = self.run_bench("--model", self.model_a, "--passes", "1", plugin=other)
        self.assertEqual(p.returncode, 1)
        self.assertIn("the plugin did not load", p.stderr)

    def test_bad_arguments_are_one_line(self):
        cases = [
            (["--model", os.path.join(self.dir, "none.gguf")], "no such model file"),
            (["--model", self.model_a, "--config", "nonsense"], "not a preset"),
            (["--model", self.model_a, "--baseline", "w8"], "--baseline w8 is not one of"),
            (["--gen", "qwen3"], "NAME:TYPE"),
            (["--model", self.model_a, "--server", "--prompt-tokens", "9000"], "cannot hold"),
        ]
        for args, msg in cases:
            with self.subTest(msg=msg):
                p = self.run_bench(*args)
                self.assertEqual(p.returncode, 2)
                self.assertIn(msg, p.stderr)
                self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)

    def test_nice(self):
        p = self.run_bench("--model", self.model_a, "--passes", "1", "-r", "1", "--nice", "3")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(all(c["nice"] == os.nice(0) + 3 for c in self.calls_made()))
        self.assertIn("`nice -n 3 llama-bench -p 512", self.report_text())

    def test_redraw(self):
        p = self.run_bench("--model", self.model_a, "--passes", "1", "-r", "1")
        self.assertEqual(p.returncode, 0, p.stderr)
        before = self.table_rows()
        os.remove(os.path.join(self.out, "results.md"))
        q = subprocess.run([sys.executable, BENCH, "--redraw", os.path.join(self.out, "results.json")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(q.returncode, 0, q.stderr)
        self.assertEqual(self.table_rows(), before)

    def test_server_mode(self):
        p = self.run_bench("--server", "--model", self.model_a, "--config", "cpu", "--config", "share0.5",
                           "--passes", "1", "--prompt-tokens", "300", "--ctx-size", "512", "--requests", "2")
        self.assertEqual(p.returncode, 0, p.stderr)
        servers = [c for c in self.calls_made("llama-server") if "--list-devices" not in c["args"]]
        self.assertEqual(len(servers), 2)   # a fresh server per configuration
        args = servers[0]["args"]
        for flag, value in (("-ngl", "0"), ("-c", "512"), ("-np", "1"), ("-t", "2")):
            self.assertEqual(args[args.index(flag) + 1], value)
        rows = self.table_rows()
        self.assertIn("| 1.50 |", rows[1])
        self.assertIn("| 2 |", rows[0])   # two measured requests
        res = self.results()
        # every measured request processed the whole prompt, cut to exactly 300 tokens
        self.assertEqual({c["info"]["prompt_tokens"] for c in res["cells"]}, {300})
        self.assertIn("npu 50%", rows[1])   # the report written at the server's clean shutdown


if __name__ == "__main__":
    unittest.main()
