"""Runs xdna-microbench briefly and checks that every benchmark ran (none skipped with an error), that the claim
benchmarks saw the claim policy's real verdicts, and that the scheduler
benchmark really handed the multiply to the XDNA backend (three graph splits instead of one).

usage: microbench_check.py <xdna-microbench>
"""

import json
import subprocess
import sys
import tempfile

EXPECTED_CLAIMS = {0: 1, 1: 0, 2: 1, 3: 1, 4: 0}   # mul_mat 512 tokens, 1 token, mul_mat_id, view, add


def main():
    exe = sys.argv[1]
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        proc = subprocess.run([exe, "--benchmark_min_time=0.01", f"--benchmark_out={f.name}",
                               "--benchmark_out_format=json"], capture_output=True, text=True, timeout=600)
        print(proc.stdout[-4000:])
        if proc.returncode != 0:
            print(proc.stderr[-2000:])
            print(f"FAIL: xdna-microbench exited with {proc.returncode}")
            return 1
        data = json.load(open(f.name))
    errors = []
    seen = set()
    for b in data["benchmarks"]:
        name = b["name"]
        seen.add(name.split("/")[0])
        if b.get("error_occurred"):
            errors.append(f"{name}: {b.get('error_message')}")
            continue
        if name.startswith("claim/"):
            case = int(name.split("/")[2])
            if int(b["claimed"]) != EXPECTED_CLAIMS[case]:
                errors.append(f"{name}: claimed={b['claimed']}, expected {EXPECTED_CLAIMS[case]}")
        if name.startswith("sched/"):
            want = 3 if "xdna" in name else 1
            if int(b["splits"]) != want:
                errors.append(f"{name}: {b['splits']} graph splits, expected {want}")
    for group in ("claim", "mul_mat", "cpu_rows", "sched", "planner"):
        if group not in seen:
            errors.append(f"no {group}/ benchmark ran")
    for e in errors:
        print("FAIL:", e)
    if not errors:
        print(f"{len(data['benchmarks'])} microbenchmarks ran")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
