"""The PNG chart, drawn by gnuplot (a Debian package; the harness installs nothing).

One panel per model: a bar per configuration at its median tokens/s, the min-max of its samples as an error bar,
and its ratio to the baseline written above it.
"""

import os
import shutil
import subprocess

from .table import fmt_rate


def _quote(text):
    return '"' + str(text).replace("\\", "\\\\").replace('"', "'") + '"'


def data_text(results):
    """gnuplot data: one block per model (blocks separated by two blank lines, for `index`).
    Columns: configuration, median, min, max, label above the bar."""
    blocks = []
    for model in results.models:
        rows = []
        for config in results.configs:
            cell = results.cells.get((model, config.name))
            if cell is None or not any(cell.passes):
                continue
            s = cell.summary()
            r = results.ratio(model, config.name)
            label = fmt_rate(s.median) + (f"  ({r.median:.2f}x)" if r is not None else "")
            rows.append(f"{_quote(config.name)} {s.median:.6g} {s.low:.6g} {s.high:.6g} {_quote(label)}")
        blocks.append("\n".join(rows) if rows else "")
    return "\n\n\n".join(blocks) + "\n"


def script_text(results, data_file, png_file, title):
    n = len(results.models)
    n_conf = len(results.configs)
    width = max(640, 110 * n_conf + 160)
    height = 60 + 330 * n
    unit = "prompt tokens/s" if results.mode == "llama-server" else "tokens/s"
    lines = [
        f"set terminal {terminal()} size {width},{height}" + (" font 'sans,10'" if terminal() == "pngcairo" else ""),
        "set termoption noenhanced",   # model names hold underscores (Q4_0), not subscripts
        f"set output {_quote(png_file)}",
        f"set multiplot layout {n},1 title {_quote(title)}",
        "set style fill solid 0.75 border -1",
        "set boxwidth 0.6",
        "set grid ytics",
        "set key off",
        f"set ylabel {_quote(unit)}",
        "set yrange [0:*]",
        "set offsets 0, 0, graph 0.12, 0",
        f"set xrange [-0.6:{n_conf - 0.4}]",
    ]
    for i, model in enumerate(results.models):
        ratio_note = f", ratio to {results.baseline} in ( )"
        lines.append(f"set title {_quote(model + ': median' + ratio_note + ', bars: min-max')}")
        lines.append(
            f"plot {_quote(data_file)} index {i} using 0:2:($0+1):xtic(1) with boxes lc variable, "
            f"'' index {i} using 0:2:3:4 with yerrorbars lc rgb 'black' pt -1, "
            f"'' index {i} using 0:4:5 with labels offset 0,0.8 font ',9'")
    lines.append("unset multiplot")
    return "\n".join(lines) + "\n"


_terminal = None


def terminal():
    """pngcairo when this gnuplot has it (antialiased), else the libgd png terminal."""
    global _terminal
    if _terminal is None:
        _terminal = "png"
        gp = shutil.which("gnuplot")
        if gp:
            try:
                out = subprocess.run([gp, "-e", "set terminal"], capture_output=True, text=True, timeout=30)
                if "pngcairo" in out.stdout + out.stderr:
                    _terminal = "pngcairo"
            except (OSError, subprocess.SubprocessError):
                pass
    return _terminal


def draw(results, out_dir, title, name="chart"):
    """Writes name.dat, name.gp and name.png into out_dir; returns the PNG's file name, or None with a reason."""
    gp = shutil.which("gnuplot")
    if not gp:
        return None, "gnuplot is not installed (Debian: gnuplot-nox), so no chart"
    if not any(cell.passes and any(cell.passes) for cell in results.cells.values()):
        return None, "nothing was measured, so no chart"
    data_file, script_file, png_file = name + ".dat", name + ".gp", name + ".png"
    with open(os.path.join(out_dir, data_file), "w", encoding="utf-8") as f:
        f.write(data_text(results))
    with open(os.path.join(out_dir, script_file), "w", encoding="utf-8") as f:
        f.write(script_text(results, data_file, png_file, title))
    proc = subprocess.run([gp, script_file], cwd=out_dir, capture_output=True, text=True, timeout=120)
    png = os.path.join(out_dir, png_file)
    if proc.returncode != 0 or not os.path.isfile(png) or os.path.getsize(png) == 0:
        err = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"gnuplot failed ({err})"
    return png_file, None
