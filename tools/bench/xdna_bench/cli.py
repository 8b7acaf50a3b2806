"""Command line of the benchmark harness (scripts/bench.sh runs it after building)."""

import argparse
import datetime
import os
import shlex
import sys

from . import chart, machine, models, results as results_mod, runner, table
from .configs import ConfigError, ignored_vars, parse_assignment, parse_configs, PRESETS
from .progress import Progress

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

EPILOG = """\
configurations (--config, repeatable; default: cpu and default):
  NAME                 a preset: {presets}, or shareX (a fixed NPU share, 0 <= X <= 1)
  NAME=                the plugin with its defaults, under your own name
  NAME=K=V[,K=V...]    the plugin with these variables, e.g. w8share=GGML_XDNA_NPU_W8=1,GGML_XDNA_NPU_SHARE=0.5
  GGML_BACKEND_PATH= (empty) in a configuration runs the stock llama.cpp without the plugin.
Your shell's GGML_XDNA_* variables are ignored (use --env for settings every configuration shares);
XDNA_EMU_* variables (the emulated NPU) are passed to every run.

models: --model FILE, --gen NAME:TYPE[:LAYERS] (xdna-gen-model --list), --set {sets}
  (default: --gen qwen3-0.6b:Q4_0).

output, in --out (default build/bench-results/<date-time>): results.md (the table), chart.png, results.json (every sample),
logs/ (each run's log and the plugin's report of what each worker did).
"""


def cmake_cache_value(build, key):
    try:
        with open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return ""


def positive(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"'{text}' must be at least 1")
    return v


def make_parser():
    p = argparse.ArgumentParser(
        prog=os.environ.get("XDNA_BENCH_ENTRY", "bench.py"),
        description="Benchmarks configurations of ggml-xdna against each other with llama-bench (or llama-server), "
                    "interleaved in passes, and writes a Markdown table and a PNG chart.",
        epilog=EPILOG.format(presets=", ".join(PRESETS), sets=", ".join(models.GEN_SETS)),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", action="append", default=[], metavar="FILE", help="a GGUF model (repeatable)")
    p.add_argument("--gen", action="append", default=[], metavar="NAME:TYPE[:LAYERS]",
                   help="a generated model (repeatable)")
    p.add_argument("--set", action="append", default=[], metavar="NAME", help="a named set of generated models")
    p.add_argument("--config", action="append", default=[], metavar="SPEC", help="a configuration (repeatable)")
    p.add_argument("--baseline", metavar="NAME", help="configuration the ratios are taken against "
                   "(default: cpu if given, else the first)")
    p.add_argument("--env", action="append", default=[], metavar="K=V", help="a variable for every configuration")
    p.add_argument("--passes", type=positive, default=3, help="passes over all configurations (default 3)")
    p.add_argument("--threads", "-t", type=positive, default=os.cpu_count() or 1,
                   help="threads, llama-bench -t / llama-server -t (default: every logical CPU; the spec used the "
                        "physical cores)")
    p.add_argument("--prompt", "-p", type=positive, default=512, help="llama-bench -p (default 512)")
    p.add_argument("--reps", "-r", type=positive, default=3, help="llama-bench -r (default 3)")
    p.add_argument("--bench-args", default="", metavar="ARGS", help="more llama-bench arguments (one string)")
    p.add_argument("--server", action="store_true", help="measure with llama-server instead of llama-bench")
    p.add_argument("--prompt-tokens", type=positive, default=2134,
                   help="--server: prompt length in tokens (default 2134, the spec's)")
    p.add_argument("--prompt-file", default=os.path.join(REPO, "data", "accuracy-text.txt"),
                   help="--server: text the prompt is cut from (repeated if short)")
    p.add_argument("--requests", type=positive, default=3, help="--server: measured requests (default 3)")
    p.add_argument("--ctx-size", type=positive, default=8192, help="--server: llama-server -c (default 8192)")
    p.add_argument("--server-args", default="", metavar="ARGS", help="--server: more llama-server arguments")
    p.add_argument("--nice", type=int, default=None, metavar="N",
                   help="run llama-bench / llama-server under nice -n N (a negative N, which needs the privilege, "
                        "keeps other work on a shared machine from adding noise)")
    p.add_argument("--timeout", type=positive, default=1800, help="seconds one run may take (default 1800)")
    p.add_argument("--out", metavar="DIR", help="output folder (default build/bench-results/<date-time>, in the build folder)")
    p.add_argument("--title", help="title of the table and chart")
    p.add_argument("--label", default="", help="a line shown in bold above the table, e.g. what the NPU is")
    p.add_argument("--redraw", metavar="RESULTS_JSON", help="only redraw the table and chart of an earlier run")
    p.add_argument("--llama-bin", default=os.environ.get("LLAMA_BIN", ""), help="llama.cpp's bin folder")
    p.add_argument("--llama-src", default=os.environ.get("LLAMA_SRC", ""), help="llama.cpp's source (tokenizers)")
    p.add_argument("--plugin", help="libggml-xdna.so (default: the build's)")
    p.add_argument("--gen-model", help="xdna-gen-model (default: the build's)")
    p.add_argument("--dry-run", action="store_true", help="print what would run, run nothing")
    return p


def default_title(opts):
    if opts.server:
        return f"Prompt processing, llama-server, {opts.prompt_tokens}-token prompt, -t {opts.threads}"
    return f"Prompt processing, llama-bench -p {opts.prompt} -t {opts.threads}"


def write_outputs(res, out_dir, title):
    png, why = chart.draw(res, out_dir, title)
    md = os.path.join(out_dir, "results.md")
    with open(md, "w", encoding="utf-8") as f:
        f.write(table.render(res, png, title))
    results_mod.save(res, os.path.join(out_dir, "results.json"))
    return md, png, why


def fail(msg):
    sys.stderr.write(f"bench: {msg}\n")
    return 2


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    opts = make_parser().parse_args(argv)

    if opts.redraw:
        try:
            res = results_mod.load(opts.redraw)
        except (OSError, ValueError) as e:
            return fail(str(e))
        out_dir = opts.out or os.path.dirname(os.path.abspath(opts.redraw))
        os.makedirs(out_dir, exist_ok=True)
        md, png, why = write_outputs(res, out_dir, opts.title or default_title_from(res))
        print(table.render_table(res))
        print(f"wrote {md}" + (f" and {os.path.join(out_dir, png)}" if png else f" ({why})"))
        return 0

    build = os.environ.get("XDNA_BENCH_BUILD") or os.path.join(REPO, "build")
    llama_build = cmake_cache_value(build, "LLAMA_BUILD")
    opts.llama_bin = opts.llama_bin or (os.path.join(llama_build, "bin") if llama_build else "")
    opts.llama_src = opts.llama_src or cmake_cache_value(build, "LLAMA_SRC")
    opts.plugin = opts.plugin or os.path.join(build, "bin", "libggml-xdna.so")
    opts.gen_model = opts.gen_model or os.path.join(build, "bin", "xdna-gen-model")
    opts.bench_args = shlex.split(opts.bench_args)
    opts.server_args = shlex.split(opts.server_args)

    try:
        configs = parse_configs(opts.config or ["cpu", "default"])
        common = dict(parse_assignment(a) for a in opts.env)
    except ConfigError as e:
        return fail(str(e))
    names = [c.name for c in configs]
    baseline = opts.baseline or ("cpu" if "cpu" in names else names[0])
    if baseline not in names:
        return fail(f"--baseline {baseline} is not one of the configurations ({', '.join(names)})")
    tool = "llama-server" if opts.server else "llama-bench"
    if opts.nice is not None and opts.nice < 0:
        # a raised priority needs the privilege: say so now rather than after the first run fails
        try:
            before = os.nice(0)
            os.nice(-1)
            os.setpriority(os.PRIO_PROCESS, 0, before)
        except PermissionError:
            return fail(f"--nice {opts.nice}: raising the priority needs root or CAP_SYS_NICE")
    if not os.access(os.path.join(opts.llama_bin, tool), os.X_OK):
        return fail(f"{tool} not found in '{opts.llama_bin}' (pass --llama-bin or set LLAMA_BIN)")
    if any(c.loads_plugin() for c in configs) and not os.path.isfile(opts.plugin):
        return fail(f"{opts.plugin}: no such plugin (build the project or pass --plugin)")
    prompt_text = None
    if opts.server:
        if opts.ctx_size < opts.prompt_tokens + 8:
            return fail(f"--ctx-size {opts.ctx_size} cannot hold a {opts.prompt_tokens}-token prompt")
        try:
            with open(opts.prompt_file, encoding="utf-8") as f:
                prompt_text = f.read()
        except OSError as e:
            return fail(f"--prompt-file: {e}")
        if not prompt_text.strip():
            return fail(f"{opts.prompt_file}: the prompt text is empty")

    try:
        if opts.dry_run and (opts.gen or opts.set):
            ms = [models.Model(models.gen_label(*models.parse_gen(g)), g) for g in opts.gen]
            ms += [models.Model(models.gen_label(*models.parse_gen(g)), g) for s in opts.set
                   for g in models.GEN_SETS.get(s, [])]
            ms += [models.file_model(f) for f in opts.model]
        else:
            ms = models.resolve(opts.model, opts.gen, opts.set, opts.gen_model, opts.llama_src, opts.llama_bin) \
                if (opts.model or opts.gen or opts.set) else \
                models.resolve([], ["qwen3-0.6b:Q4_0"], [], opts.gen_model, opts.llama_src, opts.llama_bin)
    except models.ModelError as e:
        return fail(str(e))

    # by default in the build folder, which version control ignores
    out_dir = opts.out or os.path.join(build, "bench-results", datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
    if opts.server:
        measurement = ("" if opts.nice is None else f"nice -n {opts.nice} ") + (f"llama-server -ngl 0 -t {opts.threads} -c {opts.ctx_size} -np 1: a fresh server per "
                       f"configuration, one warm-up request, then {opts.requests} measured requests of the same "
                       f"{opts.prompt_tokens}-token prompt (prompt tokens/s from the server's timings)")
    else:
        measurement = " ".join((["nice", "-n", str(opts.nice)] if opts.nice is not None else []) + ["llama-bench", "-p", str(opts.prompt), "-n", "0", "-r", str(opts.reps), "-t",
                                str(opts.threads), "-ngl", "0", *opts.bench_args])
    base_env = dict(os.environ)
    dropped = ignored_vars(base_env)
    total = opts.passes * len(ms) * len(configs)
    progress = Progress(total)
    progress.note(f"bench: {len(ms)} model(s) x {len(configs)} configuration(s) x {opts.passes} pass(es) = {total} "
                  f"runs of {tool}; output in {out_dir}")
    if dropped:
        progress.note(f"bench: ignoring your shell's {', '.join(dropped)} (use --env to set one for every run)")
    for c in configs:
        progress.note(f"  {c.name:12s} {c.describe_env() or '(no settings)'}" + (f"  - {c.about}" if c.about else ""))
    if opts.dry_run:
        for m in ms:
            progress.note(f"  model: {m.label} ({m.path})")
        return 0

    os.makedirs(out_dir, exist_ok=True)
    emu = [f"{k}={shlex.quote(v)}" for k, v in sorted(base_env.items()) if k.startswith("XDNA_EMU_")]
    entry = os.environ.get("XDNA_BENCH_ENTRY", "tools/bench/bench.py")
    res = results_mod.Results(
        mode=tool, measurement=measurement, models=[m.label for m in ms], configs=configs, baseline=baseline,
        passes=opts.passes, label=opts.label, command=" ".join(emu + [entry, shlex.join(argv)]).strip(),
        started=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    load_start = machine.load_average()
    paths = runner.Paths(opts.llama_bin, opts.plugin, out_dir)
    try:
        runner.run(opts, paths, res, ms, configs, base_env, common, progress, prompt_text)
    except runner.RunError as e:
        results_mod.save(res, os.path.join(out_dir, "results.json"))
        return fail(str(e)) and 1
    except KeyboardInterrupt:
        results_mod.save(res, os.path.join(out_dir, "results.json"))
        return fail("interrupted; what was measured is in results.json") and 130

    res.machine = machine.describe(opts.threads, base_env)
    res.machine.append(f"load average (1/5/15 min) at the start: {load_start}; at the end: {machine.load_average()}")
    infos = [c.info for c in res.cells.values()]
    commit = next((i["llama_commit"] for i in infos if i.get("llama_commit")), "")
    devices = sorted({i["devices"] for i in infos if i.get("devices")})
    if commit:
        res.machine.append(f"llama.cpp: commit {commit}")
    if devices:
        res.machine.append("devices, as the runs list them: " + "; ".join(f"`{d}`" for d in devices))
    if common:
        res.machine.append("every configuration also had: `" + " ".join(f"{k}={v}" for k, v in common.items()) + "`")

    title = opts.title or default_title(opts)
    md, png, why = write_outputs(res, out_dir, title)
    print(table.render_table(res))
    print(f"wrote {md}" + (f" and {os.path.join(out_dir, png)}" if png else f" (no chart: {why})"))
    return 0


def default_title_from(res):
    return "Prompt processing, " + res.measurement.split(":")[0]
