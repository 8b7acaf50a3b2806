"""A description of the machine a run measured, for the report: results mean nothing without it."""

import os
import platform


def cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def memory_gib():
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / (1024 * 1024)
    except (OSError, ValueError, IndexError):
        pass
    return None


def load_average():
    try:
        a, b, c = os.getloadavg()
        return f"{a:.1f} / {b:.1f} / {c:.1f}"
    except OSError:
        return "unknown"


def npu_line(env):
    """What the NPU side of this machine is: a real driver and XRT, or nothing (so the emulator, if the plugin
    was built with it), and any emulator settings every configuration ran with."""
    xrt = os.path.isdir("/opt/xilinx/xrt")
    accel = os.path.isdir("/dev/accel") and any(n.startswith("accel") for n in os.listdir("/dev/accel"))
    emu = " ".join(f"{k}={v}" for k, v in sorted(env.items()) if k.startswith("XDNA_EMU_"))
    if xrt and accel:
        line = "NPU: XRT and an accel device are present (a real NPU, if the plugin was built against XRT)"
    elif xrt:
        line = "NPU: XRT is installed but no accel device exists"
    else:
        line = "NPU: none on this machine (no XRT): any NPU work ran on the software XDNA1 emulator"
    if emu:
        line += f"; emulator settings: `{emu}`"
    return line


def describe(threads, env):
    mem = memory_gib()
    lines = [
        f"machine: {cpu_model()}, {os.cpu_count()} logical CPUs"
        + (f", {mem:.0f} GiB RAM" if mem else "") + f", {platform.system()} {platform.release()}",
        f"threads: -t {threads}",
        npu_line(env),
    ]
    return lines
