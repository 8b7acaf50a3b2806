"""Median, spread and the within-pass ratio, against values worked out by hand."""

import unittest

from xdna_bench import stats


class Median(unittest.TestCase):
    def test_odd_even_unsorted(self):
        self.assertEqual(stats.median([3.0, 1.0, 2.0]), 2.0)
        self.assertEqual(stats.median([4.0, 1.0, 3.0, 2.0]), 2.5)
        self.assertEqual(stats.median([7.0]), 7.0)
        with self.assertRaises(ValueError):
            stats.median([])


class Summarize(unittest.TestCase):
    def test_over_all_passes(self):
        s = stats.summarize([[100.0, 110.0], [90.0, 105.0, 95.0]])
        self.assertEqual((s.median, s.low, s.high, s.n), (100.0, 90.0, 110.0, 5))
        self.assertAlmostEqual(s.spread_pct, 20.0)

    def test_nothing(self):
        with self.assertRaises(ValueError):
            stats.summarize([[], []])


class WithinPassRatio(unittest.TestCase):
    def test_drift_between_passes_cancels(self):
        # the machine is twice as fast in pass 2: both sides move, the ratio stays 1.5
        base = [[100.0, 100.0, 100.0], [200.0, 200.0, 200.0]]
        mine = [[150.0, 150.0, 150.0], [300.0, 300.0, 300.0]]
        r = stats.within_pass_ratio(mine, base)
        self.assertAlmostEqual(r.median, 1.5)
        self.assertAlmostEqual(r.low, 1.5)
        self.assertAlmostEqual(r.high, 1.5)
        self.assertEqual(r.n, 2)

    def test_median_of_pass_ratios(self):
        base = [[100.0], [100.0], [100.0]]
        mine = [[120.0], [180.0], [130.0]]
        r = stats.within_pass_ratio(mine, base)
        self.assertAlmostEqual(r.median, 1.3)
        self.assertAlmostEqual(r.low, 1.2)
        self.assertAlmostEqual(r.high, 1.8)

    def test_passes_missing_a_side_are_skipped(self):
        r = stats.within_pass_ratio([[150.0], []], [[100.0], [100.0]])
        self.assertEqual(r.n, 1)
        self.assertIsNone(stats.within_pass_ratio([[]], [[100.0]]))


if __name__ == "__main__":
    unittest.main()
