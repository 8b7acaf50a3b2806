"""Configurations: presets, user-defined assignments, and the environment each run gets."""

import unittest

from xdna_bench.configs import ConfigError, Config, parse_assignment, parse_config, parse_configs, run_env


class ParseConfig(unittest.TestCase):
    def test_presets_are_the_spec_table(self):
        self.assertEqual(parse_config("cpu").env, {"GGML_XDNA_MIN_BATCH": "1000000"})
        self.assertEqual(parse_config("default").env, {})
        self.assertEqual(parse_config("w8").env, {"GGML_XDNA_NPU_W8": "1"})
        self.assertEqual(parse_config("decode").env, {"GGML_XDNA_NPU_DECODE": "1"})
        self.assertEqual(parse_config("gpu-off").env, {"GGML_XDNA_GPU": "none"})
        self.assertFalse(parse_config("stock").loads_plugin())
        self.assertTrue(parse_config("cpu").loads_plugin())

    def test_share_preset(self):
        self.assertEqual(parse_config("share0.4").env, {"GGML_XDNA_NPU_SHARE": "0.4"})
        self.assertEqual(parse_config("share1").env, {"GGML_XDNA_NPU_SHARE": "1"})
        self.assertEqual(parse_config("shareauto").env, {"GGML_XDNA_NPU_SHARE": "auto"})
        with self.assertRaisesRegex(ConfigError, "between 0 and 1"):
            parse_config("share1.5")

    def test_presets_are_copies(self):
        parse_config("cpu").env["X"] = "1"
        self.assertNotIn("X", parse_config("cpu").env)

    def test_user_configurations(self):
        c = parse_config("w8half=GGML_XDNA_NPU_W8=1, GGML_XDNA_NPU_SHARE=0.5")
        self.assertEqual(c.name, "w8half")
        self.assertEqual(list(c.env.items()), [("GGML_XDNA_NPU_W8", "1"), ("GGML_XDNA_NPU_SHARE", "0.5")])
        self.assertEqual(c.describe_env(), "GGML_XDNA_NPU_W8=1 GGML_XDNA_NPU_SHARE=0.5")
        self.assertEqual(parse_config("mine=").env, {})
        # a value may hold '='
        self.assertEqual(parse_config("k=GGML_XDNA_GPU=a=b").env, {"GGML_XDNA_GPU": "a=b"})
        # an empty GGML_BACKEND_PATH means: without the plugin
        self.assertFalse(parse_config("plain=GGML_BACKEND_PATH=").loads_plugin())

    def test_bad_configurations_name_the_problem(self):
        cases = {
            "nosuchpreset": "not a preset",
            "=GGML_XDNA_NPU_W8=1": "needs a name",
            "x=GGML_XDNA_NPU_W8": "not a VARIABLE=VALUE",
            "x=1BAD=2": "not a VARIABLE=VALUE",
            "x=A=1,A=2": "assigned twice",
            "bad name": "may only hold",
        }
        for spec, msg in cases.items():
            with self.subTest(spec=spec), self.assertRaisesRegex(ConfigError, msg):
                parse_config(spec)

    def test_names_are_unique_and_needed(self):
        with self.assertRaisesRegex(ConfigError, "given twice"):
            parse_configs(["cpu", "cpu=GGML_XDNA_NPU_W8=1"])
        with self.assertRaisesRegex(ConfigError, "no configuration"):
            parse_configs([])
        self.assertEqual([c.name for c in parse_configs(["cpu", "default", "share0.5"])],
                         ["cpu", "default", "share0.5"])

    def test_assignment(self):
        self.assertEqual(parse_assignment("XDNA_EMU_MODE=timed"), ("XDNA_EMU_MODE", "timed"))
        with self.assertRaises(ConfigError):
            parse_assignment("XDNA_EMU_MODE")


class RunEnv(unittest.TestCase):
    BASE = {"PATH": "/bin", "GGML_XDNA_NPU_SHARE": "0.9", "GGML_XDNA_REPORT": "stale", "XDNA_EMU_MODE": "timed",
            "GGML_BACKEND_PATH": "/other.so"}

    def test_the_shells_plugin_settings_do_not_leak(self):
        env = run_env(self.BASE, parse_config("default"), "/p/libggml-xdna.so")
        self.assertNotIn("GGML_XDNA_NPU_SHARE", env)
        self.assertNotIn("GGML_XDNA_REPORT", env)
        self.assertEqual(env["GGML_BACKEND_PATH"], "/p/libggml-xdna.so")
        self.assertEqual(env["XDNA_EMU_MODE"], "timed")   # the machine, shared by every configuration
        self.assertEqual(env["PATH"], "/bin")

    def test_configuration_over_common_over_plugin(self):
        env = run_env(self.BASE, Config("x", {"GGML_XDNA_NPU_W8": "1", "XDNA_EMU_MODE": "null"}), "/p.so",
                      common={"GGML_XDNA_NPU_W8": "0", "GGML_XDNA_DEBUG": "1"}, report_path="/r.report")
        self.assertEqual(env["GGML_XDNA_NPU_W8"], "1")
        self.assertEqual(env["GGML_XDNA_DEBUG"], "1")
        self.assertEqual(env["XDNA_EMU_MODE"], "null")
        self.assertEqual(env["GGML_XDNA_REPORT"], "/r.report")

    def test_stock_runs_without_the_plugin(self):
        env = run_env(self.BASE, parse_config("stock"), "/p.so", report_path="/r")
        self.assertNotIn("GGML_BACKEND_PATH", env)

    def test_a_configurations_own_report_wins(self):
        env = run_env({}, Config("x", {"GGML_XDNA_REPORT": "/mine"}), "/p.so", report_path="/r")
        self.assertEqual(env["GGML_XDNA_REPORT"], "/mine")


if __name__ == "__main__":
    unittest.main()
