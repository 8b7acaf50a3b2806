"""The plugin's end-of-run report lines (GGML_XDNA_REPORT) and their summary in the table."""

import os
import tempfile
import unittest

from xdna_bench import worker_report as wr


class ParseLine(unittest.TestCase):
    def test_cpu_only(self):
        r = wr.parse_line("ggml-xdna: 22 multiplies; cpu: 5632 rows, 1.158 s")
        self.assertEqual(r.multiplies, 22)
        self.assertEqual(list(r.workers), ["cpu"])
        self.assertEqual(r.workers["cpu"].rows, 5632)
        self.assertAlmostEqual(r.workers["cpu"].seconds, 1.158)

    def test_the_multiplies_own_time(self):
        r = wr.parse_line("ggml-xdna: 772 multiplies in 0.812 s (0.105 s of it where a weight was converted for a "
                          "device); npu: 1347584 rows, 0.747 s (device busy 75%) | cpu: 0 rows, 0 s")
        self.assertEqual(r.multiplies, 772)
        self.assertAlmostEqual(r.seconds, 0.812)
        self.assertAlmostEqual(r.first_use_seconds, 0.105)
        self.assertEqual(r.workers["npu"].rows, 1347584)
        self.assertEqual(wr.parse_line("ggml-xdna: 22 multiplies; cpu: 5632 rows, 1.158 s").seconds, 0.0)

    def test_multiplies_begun_ahead(self):
        r = wr.parse_line("ggml-xdna: 772 multiplies in 0.812 s (0.105 s of it where a weight was converted for a "
                          "device, 168 begun ahead); npu: 1347584 rows, 0.747 s | cpu: 0 rows, 0 s")
        self.assertEqual(r.ahead, 168)
        self.assertAlmostEqual(r.first_use_seconds, 0.105)
        self.assertEqual(r.workers["npu"].rows, 1347584)
        total = wr.RunReport()
        total.add(r)
        total.add(r)
        self.assertEqual(total.ahead, 336)

    def test_three_workers_and_failures(self):
        r = wr.parse_line("ggml-xdna: 10 multiplies; npu: 1536 rows, 0.120 s (2 runs failed, redone on the CPU) "
                          "| gpu: 512 rows, 0.05 s | cpu: 2048 rows, 0.310 s")
        self.assertEqual(list(r.workers), ["npu", "gpu", "cpu"])
        self.assertEqual(r.workers["npu"].failed_runs, 2)
        self.assertEqual(r.workers["gpu"].failed_runs, 0)
        self.assertEqual(r.total_rows(), 4096)

    def test_device_busy_share(self):
        r = wr.parse_line("ggml-xdna: 50 multiplies; npu: 167936 rows, 0.480 s (device busy 25%) (1 run failed, redone "
                          "on the CPU) | cpu: 1024 rows, 0.1 s")
        self.assertAlmostEqual(r.workers["npu"].busy_seconds, 0.12)
        self.assertEqual(r.workers["npu"].failed_runs, 1)
        self.assertEqual(r.workers["cpu"].busy_seconds, 0.0)
        self.assertIn("device busy 25%", r.describe())

    def test_driven_by_the_cpu_team(self):
        r = wr.parse_line("ggml-xdna: 50 multiplies; npu: 4096 rows, 0.200 s (device busy 70%) (driven by the CPU's "
                          "team in 40 runs, 95 results taken between its slices) | cpu: 1024 rows, 0.1 s")
        self.assertAlmostEqual(r.workers["npu"].busy_seconds, 0.14)
        self.assertEqual(r.workers["npu"].rows, 4096)
        # with the team's time on those results (the plugin's report since it gives it)
        r = wr.parse_line("ggml-xdna: 50 multiplies; npu: 4096 rows, 0.200 s (device busy 70%) (driven by the CPU's "
                          "team in 40 runs, 95 results taken between its slices in 0.047 s) | cpu: 1024 rows, 0.1 s")
        self.assertAlmostEqual(r.workers["npu"].busy_seconds, 0.14)
        self.assertEqual(r.workers["cpu"].rows, 1024)

    def test_cpu_rows_in_tiles(self):
        r = wr.parse_line("ggml-xdna: 50 multiplies in 0.300 s (0.010 s of it where a weight was converted for a "
                          "device); npu: 4096 rows, 0.200 s | cpu: 1024 rows, 0.1 s (in tiles in 36 runs) (2 runs "
                          "failed, redone on the CPU)")
        self.assertEqual(r.workers["cpu"].rows, 1024)
        self.assertEqual(r.workers["cpu"].failed_runs, 2)

    def test_no_rows(self):
        r = wr.parse_line("ggml-xdna: 3 multiplies; no rows")
        self.assertEqual((r.multiplies, r.total_rows()), (3, 0))
        self.assertEqual(r.describe(), "3 multiplies, no rows")

    def test_malformed_lines_are_named(self):
        for line in ("ggml-xdna: loaded (ggml 0.23.0)", "ggml-xdna: 3 multiplies; cpu: many rows, 1 s",
                     "ggml-xdna: 3 multiplies; cpu: 1 rows, 1 s | cpu: 2 rows, 1 s"):
            with self.subTest(line=line), self.assertRaises(ValueError) as cm:
                wr.parse_line(line)
            self.assertTrue("report line" in str(cm.exception))


class Totals(unittest.TestCase):
    TEXT = ("ggml-xdna: 10 multiplies; npu: 1024 rows, 0.5 s | cpu: 3072 rows, 1.5 s\n"
            "something else the user's file holds\n"
            "ggml-xdna: 10 multiplies; npu: 1024 rows, 0.25 s (1 run failed, redone on the CPU) | cpu: 3072 rows, 1 s\n")

    def test_sums_every_run(self):
        r = wr.parse_text(self.TEXT)
        self.assertEqual((r.lines, r.multiplies), (2, 20))
        self.assertEqual(r.workers["npu"].rows, 2048)
        self.assertAlmostEqual(r.workers["cpu"].seconds, 2.5)
        self.assertEqual(r.workers["npu"].failed_runs, 1)

    def test_describe_gives_row_shares(self):
        r = wr.parse_text(self.TEXT)
        self.assertEqual(r.describe(), "npu 25% (0.75 s), 1 failed runs redone on the CPU · cpu 75% (2.50 s)")
        self.assertEqual(wr.RunReport().describe(), "none claimed")

    def test_read_file(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "r.report")
            self.assertEqual(wr.read_file(p).lines, 0)     # no file: the plugin computed nothing
            with open(p, "w") as f:
                f.write(self.TEXT)
            self.assertEqual(wr.read_file(p).lines, 2)


if __name__ == "__main__":
    unittest.main()
