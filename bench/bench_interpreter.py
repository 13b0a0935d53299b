# SPDX-License-Identifier: Apache-2.0
# The interpreter benches' shared run (bench_python.py, bench_ruby.py, bench_php.py): a script
# DEPTH interpreter frames deep against the native workload DEPTH frames deep (edge-nofp "deep",
# the unwind bench's), both `record --pid --unwind=auto`, alternating for several rounds. As in
# bench_unwind.py, the cost of the program's runs for other processes (measured on a sleeping
# target) is taken out.
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
import bench_unwind_peers as peers  # noqa: E402
import pprof_py  # noqa: E402

DEPTH = 30


def run_once(build, argv, seconds, freq, module, early_ns=0.0):
    """One record of argv: BPF ns per sample (less early_ns for each run that took no sample),
    per run, the share of samples with DEPTH frames of module, and record's share of a core."""
    out = tempfile.mktemp(prefix="rt-bench-interpreter-", suffix=".pb.gz")
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
                if sum(1 for mod in s.modules if mod == module) >= DEPTH)
    return {
        "ns_per_sample": (run_ns - (runs - samples) * early_ns) / samples if samples else 0,
        "ns_per_run": run_ns / runs if runs else 0,
        "named_30": named / samples if samples else 0,
        "core_share": (cpu_s + run_ns / 1e9) / wall_s,
    }


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--frequency", type=int, default=99)
    return ap.parse_args()


def measure(a, cell, interpreter, suffix, script_text, label, core_share=False):
    """The rounds: {cell: [result], "native": [result]}, each round printed to stderr (with
    record's share of a core when core_share), or None when interpreter is not installed."""
    if os.geteuid():
        raise SystemExit("bench-%s needs root" % cell)
    if not os.access(interpreter, os.X_OK):
        print("bench-%s: %s not installed, not measured" % (cell, interpreter))
        return None
    script = tempfile.NamedTemporaryFile("w", suffix=suffix, prefix="rt-deep-", delete=False)
    script.write(script_text)
    script.close()
    native = [os.path.join(a.build, "unwind", "edge-nofp"), "deep", str(a.seconds + 5),
              str(DEPTH)]
    cells = {cell: [interpreter, script.name], "native": native}
    results = {k: [] for k in cells}
    try:
        for r in range(a.rounds):
            early = run_once(a.build, ["sleep", str(a.seconds + 5)], 3, a.frequency, "")
            order = list(cells) if r % 2 == 0 else list(reversed(list(cells)))
            for name in order:
                res = run_once(a.build, cells[name], a.seconds, a.frequency, "[%s]" % cell,
                               early["ns_per_run"])
                results[name].append(res)
                line = "round %d %-6s %7.0f ns/sample  30 %s frames named %5.1f%%" % (
                    r + 1, name, res["ns_per_sample"], label, 100 * res["named_30"])
                if core_share:
                    line += "  %.2f%% of a core" % (100 * res["core_share"])
                print(line, file=sys.stderr)
    finally:
        os.unlink(script.name)
    return results


def median(results, cell, field):
    return statistics.median(x[field] for x in results[cell])
