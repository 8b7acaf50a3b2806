"""The Markdown report: how it was measured, on what, and one table row per (model, configuration)."""


def fmt_rate(x):
    """Tokens/s: no decimals from 100 on, with thousands separators; one decimal below."""
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:.1f}"


def fmt_ratio(r):
    if r is None:
        return "–"
    if r.n > 1 and r.high - r.low >= 0.005:
        return f"{r.median:.2f} ({r.low:.2f}–{r.high:.2f})"
    return f"{r.median:.2f}"


def _escape(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def _code(text):
    return f"`{_escape(text)}`" if text else "(none)"


def render_table(results):
    """The table alone (Markdown)."""
    unit = "prompt tokens/s" if results.mode == "llama-server" else "tokens/s"
    head = ["model", "configuration", "environment", f"{unit} (median)", "min–max", "spread", "samples",
            f"× {results.baseline}", "what each worker did (share of rows, time)"]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join(["---", "---", "---", "---:", "---:", "---:", "---:", "---:", "---"]) + "|"]
    for model in results.models:
        for config in results.configs:
            cell = results.cells.get((model, config.name))
            if cell is None or not cell.passes or not any(cell.passes):
                row = [model, config.name, _code(config.describe_env()), "not run", "", "", "", "", ""]
            else:
                s = cell.summary()
                row = [model, config.name, _code(config.describe_env()), fmt_rate(s.median),
                       f"{fmt_rate(s.low)}–{fmt_rate(s.high)}", f"{s.spread_pct:.0f}%", str(s.n),
                       fmt_ratio(results.ratio(model, config.name)), _escape(cell.report.describe())]
            lines.append("| " + " | ".join(_escape(x) if i != 2 else x for i, x in enumerate(row)) + " |")
    return "\n".join(lines) + "\n"


def render(results, chart_name=None, title=None):
    """The whole report file."""
    out = [f"# {title or 'ggml-xdna benchmark'}", ""]
    if results.label:
        out += [f"**{results.label}**", ""]
    per_pass = "one pass" if results.passes == 1 else f"{results.passes} passes"
    out.append(f"- measurement: `{results.measurement}`, {per_pass}, the configurations interleaved in each pass")
    for line in results.machine:
        out.append(f"- {line}")
    if results.started:
        out.append(f"- started {results.started}, took {results.seconds / 60:.1f} min")
    if results.command:
        out.append(f"- reproduce: `{results.command}`")
    out += ["", render_table(results)]
    if chart_name:
        out += [f"![{title or 'benchmark'}]({chart_name})", ""]
    out += [
        "Samples: every timed repetition of every pass. Spread: (max − min) / median. "
        f"× {results.baseline}: the ratio to the `{results.baseline}` configuration, taken within each pass "
        "(median over median) and then the median over the passes, with its range when they differ; compare "
        "configurations only within one run. What each worker did comes from the plugin's own report "
        "(`GGML_XDNA_REPORT`) over all runs of the configuration, warm-up runs included; \"none claimed\" means the "
        "plugin computed no multiply (or was not loaded).",
        "",
    ]
    return "\n".join(out)
