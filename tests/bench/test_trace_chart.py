"""The timeline's chart (tools/bench/trace_chart.py) on a trace built by hand: the window it picks, each lane's busy
time, the NPU's share of the NPU worker's time, its errors, and the PNG."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(HERE, "..", "..", "tools", "bench")
SCRIPT = os.path.join(TOOLS, "trace_chart.py")
if TOOLS not in sys.path:      # CTest sets PYTHONPATH; this is for a run by hand
    sys.path.insert(0, TOOLS)

import trace_chart  # noqa: E402

LLAMA, HOST, DEVICE = 0, 1, 1000
PASS_US, LAYER_US = 10000, 1000


def meta(tid, name, sort_index):
    return [{"ph": "M", "name": "thread_name", "pid": 1, "tid": tid, "args": {"name": name}},
            {"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": tid, "args": {"sort_index": sort_index}}]


def x(tid, name, ts, dur, **args):
    e = {"ph": "X", "pid": 1, "tid": tid, "name": name, "ts": float(ts), "dur": float(dur)}
    if args:
        e["args"] = args
    return e


def layer_events(s, layer, second_multiply=True):
    """One pass over one layer starting at s µs; its window is [s, s + 900] µs. In it, by hand:
    llama.cpp lane: multiplies [0, 400] and [500, 900] (cpu rows nested in them): busy 800;
    NPU host lane: npu rows [100, 350] and [600, 800] (launch and wait nested) = 450 in "npu rows", plus weights
    [-100, 20] straddling the window's start (20 inside): busy 470 in the window, 570 in all;
    NPU lane: npu run [140, 240] and [200, 300] overlap (merged: [140, 300], 160) and [620, 700] (80): busy 240."""
    ev = [
        x(HOST, "weights", s - 100, 120, n=4096),
        x(LLAMA, "multiply", s, 400, n=3072, what=f"Qcur-{layer}: MUL_MAT q4_0(repacked) K=1024 rows=3072 tokens=512"),
        x(LLAMA, "cpu rows", s + 50, 200, n=1536),
        x(HOST, "npu rows", s + 100, 250, n=1536),
        x(HOST, "launch", s + 110, 20),
        x(HOST, "wait", s + 130, 210),
        x(DEVICE, "npu run", s + 140, 100),
        x(DEVICE, "npu run", s + 200, 100),
    ]
    if second_multiply:
        ev += [
            x(LLAMA, "multiply", s + 500, 400, n=3072,
              what=f"ffn_up-{layer}: MUL_MAT q4_0(repacked) K=1024 rows=3072 tokens=512"),
            x(LLAMA, "cpu rows", s + 550, 300, n=1536),
            x(HOST, "npu rows", s + 600, 200, n=1536),
            x(DEVICE, "npu run", s + 620, 80),
        ]
    return ev


def sample_trace(truncated_third_pass=False):
    ev = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "ggml-xdna"}}]
    ev += meta(LLAMA, "llama.cpp thread: CPU worker", 1) + meta(HOST, "NPU worker (host)", 2)
    ev += meta(DEVICE, "NPU (device)", 0)
    for p in range(2):
        for layer in range(3):
            ev += layer_events(PASS_US * (p + 1) + LAYER_US * layer, layer)
    if truncated_third_pass:   # the trace ran full in the third pass: layer 1 has only its first multiply
        ev += layer_events(3 * PASS_US, 0)
        ev += layer_events(3 * PASS_US + LAYER_US, 1, second_multiply=False)
    return {"displayTimeUnit": "ms", "traceEvents": ev}


class Common(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, content, name="trace.json"):
        path = os.path.join(self.dir, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(content if isinstance(content, str) else json.dumps(content))
        return path

    def run_tool(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=120)


class Window(Common):
    def test_default_is_the_middle_layer_last_pass(self):
        w = trace_chart.choose_window(trace_chart.parse(json.dumps(sample_trace())))
        self.assertEqual((w.layer, w.index, w.count), (1, 2, 2))
        self.assertEqual([e.node for e in w.multiplies], ["Qcur-1", "ffn_up-1"])
        self.assertAlmostEqual(w.t0, 21000e-6)
        self.assertAlmostEqual(w.t1, 21900e-6)

    def test_layer_and_pass_chosen(self):
        w = trace_chart.choose_window(trace_chart.parse(json.dumps(sample_trace())), layer=0, pass_no=1)
        self.assertEqual((w.layer, w.index, w.count), (0, 1, 2))
        self.assertAlmostEqual(w.t0, 10000e-6)
        self.assertAlmostEqual(w.duration, 900e-6)

    def test_default_skips_an_incomplete_last_pass(self):
        trace = trace_chart.parse(json.dumps(sample_trace(truncated_third_pass=True)))
        w = trace_chart.choose_window(trace, layer=1)
        self.assertEqual((w.index, w.count), (2, 3))
        w3 = trace_chart.choose_window(trace, layer=1, pass_no=3)
        self.assertEqual(len(w3.multiplies), 1)
        # layer 0's third pass is complete, so it is the default there
        self.assertEqual(trace_chart.choose_window(trace, layer=0).index, 3)

    def test_layer_of_node_names(self):
        self.assertEqual(trace_chart.layer_of("ffn_out-12"), 12)
        self.assertEqual(trace_chart.layer_of("Qcur-3 (reshaped)"), 3)
        self.assertIsNone(trace_chart.layer_of("result_output"))
        self.assertIsNone(trace_chart.layer_of("node_57"))
        self.assertIsNone(trace_chart.layer_of("ffn_up-x"))


class Busy(Common):
    def test_merge(self):
        self.assertEqual(trace_chart.merged([(5, 6), (0, 2), (1, 3), (3, 4)]), [[0, 4], [5, 6]])

    def test_window_figures(self):
        trace = trace_chart.parse(json.dumps(sample_trace()))
        w = trace_chart.choose_window(trace)
        figs = {name: (b, share, worker) for _, name, b, share, worker in trace_chart.lane_figures(trace, w.t0, w.t1)}
        self.assertEqual(list(figs), ["NPU (device)", "llama.cpp thread: CPU worker", "NPU worker (host)"])
        self.assertAlmostEqual(figs["llama.cpp thread: CPU worker"][0], 800e-6)
        self.assertAlmostEqual(figs["NPU worker (host)"][0], 470e-6)
        self.assertIsNone(figs["NPU worker (host)"][1])
        b, share, worker = figs["NPU (device)"]
        self.assertAlmostEqual(b, 240e-6)          # the overlapping runs merged: 160 + 80, not 200 + 80
        self.assertAlmostEqual(worker, 450e-6)
        self.assertAlmostEqual(share, 240 / 450)

    def test_window_summary_printed(self):
        trace = self.write(sample_trace())
        png = os.path.join(self.dir, "out.png")
        proc = self.run_tool(trace, png)
        if shutil.which("gnuplot") is None:
            self.assertNotEqual(proc.returncode, 0)
            self.assertIn("gnuplot", proc.stderr)
        else:
            self.assertEqual(proc.returncode, 0, proc.stderr)
        lines = proc.stdout.splitlines()
        self.assertEqual(len(lines), 4, proc.stdout)
        self.assertEqual(lines[0], "window: layer 1, pass 2 of 2, 21.000 to 21.900 ms (0.900 ms), 2 multiplies")
        self.assertEqual(lines[1], "NPU (device): busy 0.240 ms, 26.7% of the window; NPU busy 53.3% of the NPU "
                                   "worker's time (0.240 of 0.450 ms in \"npu rows\")")
        self.assertEqual(lines[2], "llama.cpp thread: CPU worker: busy 0.800 ms, 88.9% of the window")
        self.assertEqual(lines[3], "NPU worker (host): busy 0.470 ms, 52.2% of the window")

    def test_whole_trace_summary(self):
        proc = self.run_tool(self.write(sample_trace()), "--summary-only")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        lines = proc.stdout.splitlines()
        # 6 layer passes: from 9.900 ms (the first weights) to 22.900 ms, the end of the last multiply: 13 ms
        self.assertEqual(lines[0], "whole trace: 0.013 s from the first event to the end of the last, 3 lanes, "
                                   f"{6 * 12} events")
        trace = trace_chart.parse(json.dumps(sample_trace()))
        figs = {name: (b, share, worker) for _, name, b, share, worker in trace_chart.lane_figures(trace)}
        self.assertAlmostEqual(figs["llama.cpp thread: CPU worker"][0], 6 * 800e-6)
        self.assertAlmostEqual(figs["NPU worker (host)"][0], 6 * 570e-6)
        self.assertAlmostEqual(figs["NPU (device)"][0], 6 * 240e-6)
        self.assertAlmostEqual(figs["NPU (device)"][2], 6 * 450e-6)
        self.assertIn("NPU (device): busy 0.001 s (11.1% of the trace); NPU busy 53.3% of the NPU worker's time "
                      "(0.001 of 0.003 s in \"npu rows\")", lines)
        self.assertIn("llama.cpp thread: CPU worker: busy 0.005 s (36.9% of the trace)", lines)
        self.assertIn("NPU worker (host): busy 0.003 s (26.3% of the trace)", lines)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "out.png")))


class Errors(Common):
    def assert_fails(self, proc, text):
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)
        self.assertIn(text, proc.stderr)
        self.assertTrue(proc.stderr.startswith("trace_chart: "))

    def test_bad_json(self):
        path = self.write('{"traceEvents":[{"ph":"X",')
        self.assert_fails(self.run_tool(path, os.path.join(self.dir, "o.png")), "not a JSON trace")
        self.assert_fails(self.run_tool(path, "--summary-only"), "not a JSON trace")

    def test_malformed_events(self):
        self.assert_fails(self.run_tool(self.write({"traceEvents": 3}), "--summary-only"), "no traceEvents")
        bad_ts = {"traceEvents": [{"ph": "X", "tid": 0, "name": "multiply", "ts": "soon", "dur": 1}]}
        self.assert_fails(self.run_tool(self.write(bad_ts), "--summary-only"), "ts is not a number")
        self.assert_fails(self.run_tool(self.write({"traceEvents": []}), "--summary-only"), "no events")

    def test_missing_file(self):
        self.assert_fails(self.run_tool(os.path.join(self.dir, "none.json"), "--summary-only"), "cannot read")

    def test_missing_layer(self):
        png = os.path.join(self.dir, "o.png")
        proc = self.run_tool(self.write(sample_trace()), png, "--layer", "7")
        self.assert_fails(proc, "layer 7 not found in the trace (layers present: 0-2)")
        self.assertFalse(os.path.exists(png))

    def test_missing_pass(self):
        proc = self.run_tool(self.write(sample_trace()), os.path.join(self.dir, "o.png"), "--layer", "2",
                             "--pass", "3")
        self.assert_fails(proc, "no pass 3")


class Chart(Common):
    def test_lanes_top_to_bottom(self):
        trace = trace_chart.parse(json.dumps(sample_trace()))
        lanes, boxes, labels, legend, (lo, hi) = trace_chart.chart_data(trace, trace_chart.choose_window(trace))
        ys = dict(lanes)
        self.assertGreater(ys["NPU (device)"], ys["llama.cpp thread: CPU worker"])
        self.assertGreater(ys["llama.cpp thread: CPU worker"], ys["NPU worker (host)"])
        self.assertEqual([t for _, _, t in labels], ["Qcur-1", "ffn_up-1"])
        self.assertEqual([n for n, _ in legend], ["multiply", "cpu rows", "npu rows", "weights", "launch", "wait",
                                                  "npu run"])
        self.assertLess(lo, 0.0)
        self.assertGreater(hi, 0.9)
        self.assertTrue(all(lo <= b[0] <= b[1] <= hi for b in boxes))

    @unittest.skipIf(shutil.which("gnuplot") is None, "gnuplot is not installed")
    def test_png(self):
        png = os.path.join(self.dir, "layer.png")
        proc = self.run_tool(self.write(sample_trace()), png, "--layer", "0", "--pass", "1", "--title", "a test")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertTrue(proc.stdout.startswith("window: layer 0, pass 1 of 2"))
        with open(png, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")


if __name__ == "__main__":
    unittest.main()
