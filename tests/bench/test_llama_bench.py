"""llama-bench's JSON output and the command line the harness runs."""

import json
import os
import unittest

from xdna_bench import llama_bench

HERE = os.path.dirname(os.path.abspath(__file__))


def fixture():
    with open(os.path.join(HERE, "data", "llama-bench-pp.json"), encoding="utf-8") as f:
        return f.read()


class ParseJson(unittest.TestCase):
    def test_reads_every_test(self):
        recs = llama_bench.parse_json(fixture())
        self.assertEqual(len(recs), 2)
        pp = recs[0]
        self.assertEqual((pp.n_prompt, pp.n_gen, pp.n_threads), (512, 0, 8))
        self.assertEqual(pp.samples_ts, [628.2, 625.9, 614.6])
        self.assertAlmostEqual(pp.avg_ts, 622.9)
        self.assertAlmostEqual(pp.stddev_ts, 6.8)
        self.assertEqual(pp.backends, "XDNA")
        self.assertEqual(pp.build_commit, "80fb11a")
        self.assertIn("XDNA split", pp.cpu_info)

    def test_picks_the_prompt_test(self):
        rec = llama_bench.prompt_record(llama_bench.parse_json(fixture()), 512)
        self.assertEqual(rec.n_prompt, 512)
        with self.assertRaisesRegex(ValueError, "found 0"):
            llama_bench.prompt_record(llama_bench.parse_json(fixture()), 256)

    def test_two_prompt_tests_are_ambiguous(self):
        data = json.loads(fixture())
        data[1] = dict(data[0])
        with self.assertRaisesRegex(ValueError, "found 2"):
            llama_bench.prompt_record(llama_bench.parse_json(json.dumps(data)), 512)

    def test_missing_samples_fall_back_to_the_average(self):
        data = json.loads(fixture())
        del data[0]["samples_ts"]
        rec = llama_bench.prompt_record(llama_bench.parse_json(json.dumps(data)), 512)
        self.assertEqual(rec.samples_ts, [622.9])

    def test_bad_output_gives_one_clear_line(self):
        data = json.loads(fixture())
        no_ts = [dict(data[0])]
        del no_ts[0]["avg_ts"]
        text_ts = [dict(data[0], avg_ts="fast")]
        bad_samples = [dict(data[0], samples_ts=[1.0, "x"])]
        zero = [dict(data[0], samples_ts=[0.0, 5.0])]
        cases = [
            ("", "printed nothing"),
            ("| model | size |", "not JSON"),
            ('{"a": 1}', "JSON list"),
            ("[1]", "not an object"),
            (json.dumps(no_ts), "no 'avg_ts'"),
            (json.dumps(text_ts), "non-numeric 'avg_ts'"),
            (json.dumps(bad_samples), "malformed 'samples_ts'"),
        ]
        for text, msg in cases:
            with self.subTest(msg=msg), self.assertRaisesRegex(ValueError, msg):
                llama_bench.parse_json(text)
        with self.assertRaisesRegex(ValueError, "no positive"):
            llama_bench.prompt_record(llama_bench.parse_json(json.dumps(zero)), 512)


class Command(unittest.TestCase):
    def test_the_specs_measurement(self):
        cmd = llama_bench.command("/b", "m.gguf", 512, 3, 8, ["-fa", "1"])
        self.assertEqual(cmd, ["/b/llama-bench", "-m", "m.gguf", "-p", "512", "-n", "0", "-r", "3", "-t", "8",
                               "-ngl", "0", "-o", "json", "-fa", "1"])


if __name__ == "__main__":
    unittest.main()
