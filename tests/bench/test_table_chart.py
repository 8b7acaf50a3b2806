"""The Markdown table, the results file and the gnuplot chart, from results built by hand."""

import os
import shutil
import tempfile
import unittest

from xdna_bench import chart, results, table
from xdna_bench.configs import parse_config
from xdna_bench.worker_report import parse_text


def sample_results():
    cpu, dflt, share = parse_config("cpu"), parse_config("default"), parse_config("share0.5")
    r = results.Results("llama-bench", "llama-bench -p 512 -n 0 -r 2 -t 8 -ngl 0", ["model-a", "model|b"],
                        [cpu, dflt, share], "cpu", 2, label="emulated NPU, timed: modelled")
    r.cell("model-a", cpu).passes = [[600.0, 620.0], [300.0, 310.0]]
    a = r.cell("model-a", dflt)
    a.passes = [[900.0, 930.0], [450.0, 465.0]]
    a.report = parse_text("ggml-xdna: 10 multiplies; npu: 1024 rows, 0.5 s | cpu: 3072 rows, 1.5 s")
    r.cell("model|b", cpu).passes = [[50.0], [52.0]]
    r.cell("model|b", dflt).passes = [[55.0], [57.2]]
    # model|b / share0.5 was never run
    return r


def rows_of(md):
    return [line for line in md.splitlines() if line.startswith("| ") and not line.startswith("| model |")]


class Table(unittest.TestCase):
    def test_one_row_per_model_and_configuration(self):
        rows = rows_of(table.render_table(sample_results()))
        self.assertEqual(len(rows), 6)
        cpu_a = [c.strip() for c in rows[0].strip("|").split(" | ")]
        self.assertEqual(cpu_a[:8], ["model-a", "cpu", "`GGML_XDNA_MIN_BATCH=1000000`", "455", "300–620",
                                     "70%", "4", "1.00"])
        self.assertEqual(cpu_a[8], "none claimed")

    def test_ratio_is_within_pass(self):
        rows = rows_of(table.render_table(sample_results()))
        dflt_a = [c.strip() for c in rows[1].strip("|").split(" | ")]
        # pass 1: 915 / 610 = 1.5, pass 2: 457.5 / 305 = 1.5
        self.assertEqual(dflt_a[7], "1.50")
        self.assertEqual(dflt_a[8], "npu 25% (0.50 s) · cpu 75% (1.50 s)")
        dflt_b = rows[4]
        # pass 1: 55 / 50 = 1.10, pass 2: 57.2 / 52 = 1.10; the pipe in the model name is escaped
        self.assertIn("model\\|b", dflt_b)
        self.assertIn("| 1.10 |", dflt_b)

    def test_a_ratio_range_shows_when_passes_disagree(self):
        r = sample_results()
        r.cell("model-a", r.configs[1]).passes = [[915.0], [366.0]]   # 1.5 then 1.2
        row = rows_of(table.render_table(r))[1]
        self.assertIn("| 1.35 (1.20–1.50) |", row)

    def test_missing_cells_say_so(self):
        rows = rows_of(table.render_table(sample_results()))
        self.assertIn("not run", rows[5])

    def test_number_format(self):
        self.assertEqual(table.fmt_rate(1234.4), "1,234")
        self.assertEqual(table.fmt_rate(99.94), "99.9")
        self.assertEqual(table.fmt_rate(100.2), "100")

    def test_report_has_method_machine_and_label(self):
        r = sample_results()
        r.machine = ["machine: a CPU"]
        r.command = "scripts/bench.sh --gen x:Q4_0"
        md = table.render(r, "chart.png", "Title")
        self.assertTrue(md.startswith("# Title\n"))
        self.assertIn("**emulated NPU, timed: modelled**", md)
        self.assertIn("- measurement: `llama-bench -p 512 -n 0 -r 2 -t 8 -ngl 0`, 2 passes", md)
        self.assertIn("- machine: a CPU", md)
        self.assertIn("- reproduce: `scripts/bench.sh --gen x:Q4_0`", md)
        self.assertIn("![Title](chart.png)", md)


class ResultsFile(unittest.TestCase):
    def test_round_trip(self):
        r = sample_results()
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "results.json")
            results.save(r, p)
            back = results.load(p)
        self.assertEqual(table.render_table(back), table.render_table(r))
        self.assertEqual(back.label, r.label)

    def test_a_foreign_file_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "x.json")
            with open(p, "w") as f:
                f.write('{"hello": 1}')
            with self.assertRaisesRegex(ValueError, "not a results file"):
                results.load(p)
            with open(p, "w") as f:
                f.write("{")
            with self.assertRaisesRegex(ValueError, "not JSON"):
                results.load(p)


class Chart(unittest.TestCase):
    def test_data_blocks(self):
        text = chart.data_text(sample_results())
        blocks = text.split("\n\n\n")
        self.assertEqual(len(blocks), 2)
        first = blocks[0].splitlines()
        self.assertEqual(len(first), 2)               # share0.5 has no samples
        self.assertEqual(first[0], '"cpu" 455 300 620 "455  (1.00x)"')
        self.assertEqual(first[1], '"default" 682.5 450 930 "682  (1.50x)"')

    def test_script_has_one_panel_per_model(self):
        gp = chart.script_text(sample_results(), "c.dat", "c.png", "T")
        self.assertEqual(gp.count("\nplot "), 2)
        self.assertIn("index 1", gp)
        self.assertIn("set multiplot layout 2,1", gp)
        self.assertIn("noenhanced", gp)

    @unittest.skipUnless(shutil.which("gnuplot"), "gnuplot is not installed")
    def test_draws_a_png(self):
        with tempfile.TemporaryDirectory() as d:
            png, why = chart.draw(sample_results(), d, "T")
            self.assertIsNone(why)
            with open(os.path.join(d, png), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_nothing_measured_no_chart(self):
        r = results.Results("llama-bench", "m", ["a"], [parse_config("cpu")], "cpu", 1)
        with tempfile.TemporaryDirectory() as d:
            png, why = chart.draw(r, d, "T")
        self.assertIsNone(png)
        self.assertTrue(why)


if __name__ == "__main__":
    unittest.main()
