"""The checker of docs' code names (check_code_names.py) finds names the code does not have, and only those."""

import os
import subprocess
import sys
import tempfile
import unittest

import check_code_names as ccn

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
CHECKER = os.path.join(HERE, "check_code_names.py")


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


class AStandInRepository(unittest.TestCase):
    """A repository of two files, and pages citing names it has and names it does not."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        write(os.path.join(self.root, "src", "engine", "engine.h"),
              "// engine.h: ghost_name lives on only in this comment\n"
              "namespace xdna {\n"
              "struct helper;\n"
              "class engine {\n"
              "  public:\n"
              "    void compute(); /* also_a_ghost */\n"
              "    int cores_to_spare();\n"
              "};\n"
              "}\n"
              "const char * env = \"GGML_XDNA_PAIRS\"; // a name in a string literal is code\n")
        write(os.path.join(self.root, "src", "engine", "engine.cpp"),
              "#include \"engine/engine.h\"\nvoid xdna::engine::compute() {}\nstruct helper { int part; };\n")
        write(os.path.join(self.root, "scripts", "run.sh"), "#!/bin/sh\n")
        self.code = ccn.Code(self.root)

    def tearDown(self):
        self.tmp.cleanup()

    def missing(self, page):
        return [s for _, s, _ in ccn.missing(page, self.code)]

    def test_names_the_code_has_pass(self):
        page = ("`engine::compute`, `engine::cores_to_spare()`, `xdna::engine`, `compute()`, `GGML_XDNA_PAIRS=1`,\n"
                "`engine/engine.h`, `engine.cpp`, `scripts/run.sh`, `src/`, `engine/`, `helper::part`\n")
        self.assertEqual(self.missing(page), [])

    def test_a_name_the_code_does_not_have_is_named(self):
        self.assertEqual(self.missing("the `engine::core_to_spare` and `xdna_config_vars`\n"),
                         ["engine::core_to_spare", "xdna_config_vars"])

    def test_a_name_only_in_a_comment_counts_as_gone(self):
        self.assertEqual(self.missing("`ghost_name`, `also_a_ghost`\n"), ["ghost_name", "also_a_ghost"])

    def test_a_member_of_another_class_is_not_this_ones(self):
        # `part` exists, but in helper, not in engine; a declaration (struct helper;) defines nothing
        self.assertEqual(self.missing("`engine::part`, `helper::compute`\n"), ["engine::part", "helper::compute"])

    def test_a_path_that_does_not_exist_is_named(self):
        self.assertEqual(self.missing("`engine/gone.cpp`, `gone.h`, `scripts/gone.sh`\n"),
                         ["engine/gone.cpp", "gone.h", "scripts/gone.sh"])

    def test_the_diagram_is_checked_for_qualified_names_and_paths(self):
        page = "```\n  engine::compute (engine/engine.cpp) then engine::gone (engine/gone.cpp); plain words\n```\n"
        self.assertEqual(self.missing(page), ["engine::gone", "engine/gone.cpp"])

    def test_what_is_not_a_code_name_is_not_checked(self):
        page = "`-t 8`, `GGML_XDNA_*`, `sched/...`, `llama-bench -p 512`, `0.5`, `--rows 256,512`\n"
        self.assertEqual(self.missing(page), [])

    def test_names_from_elsewhere_are_skipped(self):
        page = "the `ggml_backend_sched` calls\n\n## Names from elsewhere\n\n`ggml_backend_sched`\n"
        self.assertEqual(self.missing(page), [])


class TheRealPage(unittest.TestCase):
    """docs/architecture.md against the code as it is: a wrong name fails the check, and the check names it."""

    def run_checker(self, page_text):
        with tempfile.TemporaryDirectory() as d:
            page = os.path.join(d, "architecture.md")
            write(page, page_text)
            return subprocess.run([sys.executable, CHECKER, page, ROOT], capture_output=True, text=True)

    def test_a_wrong_name_in_the_page_fails_it(self):
        with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as f:
            text = f.read()
        self.assertIn("`cpu_worker::cores_to_spare`", text)
        r = self.run_checker(text.replace("`cpu_worker::cores_to_spare`", "`cpu_worker::core_to_spare`", 1))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("`cpu_worker::core_to_spare`", r.stdout)
        r = self.run_checker(text.replace("`backend/compute.cpp`", "`backend/computer.cpp`", 1))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("`backend/computer.cpp`", r.stdout)


if __name__ == "__main__":
    unittest.main()
