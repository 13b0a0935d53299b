# SPDX-License-Identifier: Apache-2.0
# BPF ns per sample for a CPU-bound Python program 30 Python frames deep (python3.11, its eval
# loop's frames replaced by the interpreter frames) against the native workload 30 frames deep
# (edge-nofp "deep", the unwind bench's), both `record --pid --unwind=auto`, alternating for
# several rounds; medians and their ratio (the budget: at most 2x), the share of the Python
# samples that name the 30 frames, and the record's share of a core. As in bench_unwind.py,
# the cost of the program's runs for other processes (measured on a sleeping target) is taken
# out. py-spy and rbspy, the per-process peers, are not installable here: the comparison is
# with the agent's own native walk.
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pprof_py  # noqa: E402
import bench_unwind_peers as peers  # noqa: E402

DEPTH = 30
PYTHON = "/usr/bin/python3.11"
DEEP_PY = """
import sys
def spin():
    s = 0
    while True:
        for i in range(1000):
            s += i

def level(n):
    if n == 0:
        spin()
    level(n - 1)

level(%d - 2)  # <module> and spin make it %d
""" % (DEPTH, DEPTH)


def run_once(build, argv, seconds, freq, early_ns=0.0):
    out = tempfile.mktemp(prefix="rt-bench-python-", suffix=".pb.gz")
    target = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    log = tempfile.TemporaryFile(mode="w+")
    try:
        time.sleep(0.5)
        start = time.monotonic()
        rc, cpu_s, _ = peers.run_with_rusage(
            [os.path.join(build, "roottrace-agent"), "record", "--pid", str(target.pid),
             "--unwind", "auto", "--duration", "%ds" % seconds, "--frequency", str(freq),
             "--output", out], stdout=subprocess.DEVNULL, stderr=log)
        wall_s = time.monotonic() - start
    finally:
        target.kill()
        target.wait()
    log.seek(0)
    err = log.read()
    if rc:
        raise SystemExit("record failed: " + err)
    prof = pprof_py.parse_file(out)
    os.unlink(out)
    m = re.search(r"BPF run time: ([\d.]+) ms over (\d+) runs", err)
    run_ns = float(m.group(1)) * 1e6 if m else 0
    runs = int(m.group(2)) if m else 0
    samples = sum(s.values[0] for s in prof.samples)
    named = sum(s.values[0] for s in prof.samples
                if sum(1 for mod in s.modules if mod == "[python]") >= DEPTH)
    return {
        "ns_per_sample": (run_ns - (runs - samples) * early_ns) / samples if samples else 0,
        "ns_per_run": run_ns / runs if runs else 0,
        "named_30": named / samples if samples else 0,
        "core_share": (cpu_s + run_ns / 1e9) / wall_s,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--frequency", type=int, default=99)
    a = ap.parse_args()
    if os.geteuid():
        raise SystemExit("bench-python needs root")
    if not os.access(PYTHON, os.X_OK):
        print("bench-python: %s not installed, not measured" % PYTHON)
        return
    script = tempfile.NamedTemporaryFile("w", suffix=".py", prefix="rt-deep-", delete=False)
    script.write(DEEP_PY)
    script.close()
    native = [os.path.join(a.build, "unwind", "edge-nofp"), "deep", str(a.seconds + 5),
              str(DEPTH)]
    cells = {"python": [PYTHON, script.name], "native": native}
    results = {k: [] for k in cells}
    try:
        for r in range(a.rounds):
            early = run_once(a.build, ["sleep", str(a.seconds + 5)], 3, a.frequency)
            order = list(cells) if r % 2 == 0 else list(reversed(list(cells)))
            for cell in order:
                res = run_once(a.build, cells[cell], a.seconds, a.frequency,
                               early["ns_per_run"])
                results[cell].append(res)
                print("round %d %-6s %7.0f ns/sample  30 Python frames named %5.1f%%  "
                      "%.2f%% of a core" % (r + 1, cell, res["ns_per_sample"],
                                             100 * res["named_30"], 100 * res["core_share"]),
                      file=sys.stderr)
    finally:
        os.unlink(script.name)

    def med(cell, field):
        return statistics.median(x[field] for x in results[cell])

    py, nat = med("python", "ns_per_sample"), med("native", "ns_per_sample")
    print("| stack (30 deep, --unwind=auto) | BPF ns/sample (median of %d) | vs native |"
          % a.rounds)
    print("|---|---|---|")
    print("| native (edge-nofp deep) | %.0f | 1.00x |" % nat)
    print("| Python 3.11 (interpreter frames) | %.0f | %.2fx |" % (py, py / nat if nat else 0))
    print("Python samples naming all 30 interpreter frames: %.1f%%; record's share of a core: "
          "python %.2f%%, native %.2f%%" % (100 * med("python", "named_30"),
                                           100 * med("python", "core_share"),
                                           100 * med("native", "core_share")))


if __name__ == "__main__":
    main()
