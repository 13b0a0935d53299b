# SPDX-License-Identifier: Apache-2.0
# Two figures for Java frames (docs/performance.md):
# 1. BPF time per sample of a JVM stack 30 Java frames deep (tests/fixtures/jvm/Deep.java, its
#    frames found in the code cache from HotSpot's own structures) against a native stack 30
#    frames deep (tests/fixtures/unwind/edge.c "deep", with frame pointers and without:
#    .eh_frame tables), each recorded with `record --pid`, alternating for several rounds; the
#    cost of the program's runs for other processes (measured on a sleeping target) is taken
#    out, as bench_unwind.py does.
# 2. A whole-machine `record` at 99 Hz while a JVM (tests/fixtures/jvm/Hot.java) and a node
#    process spin: the agent's CPU (all threads, schedstat), its BPF programs' run time and its
#    RSS over a steady window after a warm-up (bench_steady_overhead.py's method).
# bench/bench_jvm.py --build DIR [--rounds 3] [--seconds 5] [--window 60]. Needs root.
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
import bench_unwind  # noqa: E402
import bench_steady_overhead as steady  # noqa: E402

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(SRC, "tests", "fixtures", "jvm")
DEPTH = 30


def classes(build):
    out = os.path.join(build, "bench", "jvm")
    os.makedirs(out, exist_ok=True)
    subprocess.run(["javac", "-d", out, os.path.join(FIXTURES, "Deep.java"),
                    os.path.join(FIXTURES, "Hot.java")], check=True)
    return out


def run_jvm(build, cp, seconds, freq, early_ns):
    """One recording of a JVM at DEPTH Java frames: ns per sample, mean Java frames per
    sample at the bottom of the recursion."""
    out = tempfile.mktemp(prefix="rt-bench-jvm-", suffix=".pb.gz")
    java = subprocess.Popen(["java", "-XX:CompileCommand=quiet",
                             "-XX:CompileCommand=dontinline,Deep::*", "-cp", cp, "Deep",
                             str(seconds + 60), str(DEPTH)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        if not java.stdout.readline().startswith("ready"):
            raise SystemExit("java did not start Deep")
        java.stdin.write("go\n")
        java.stdin.flush()
        time.sleep(2)  # compiled by C2 before the recording: the steady state is measured
        agent = subprocess.Popen([os.path.join(build, "roottrace-agent"), "record", "--pid",
                                  str(java.pid), "--duration", "%ds" % seconds, "--frequency",
                                  str(freq), "--output", out], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
        err = agent.stderr.read()
        if agent.wait() != 0:
            raise SystemExit("record failed: " + err)
    finally:
        java.kill()
        java.wait()
    prof = pprof_py.parse_file(out)
    os.unlink(out)
    m = re.search(r"BPF run time: ([\d.]+) ms over (\d+) runs", err)
    run_ns, runs = (float(m.group(1)) * 1e6, int(m.group(2))) if m else (0, 0)
    samples = sum(s.values[0] for s in prof.samples)
    deep = [s for s in prof.samples if "Deep.leaf" in s.stack]
    java_frames = sum(s.values[0] * sum(1 for m in s.modules if m == "[jit:jvm]") for s in deep)
    user = sum(s.values[0] * sum(1 for m in s.modules if m != "[kernel]") for s in deep)
    n_deep = sum(s.values[0] for s in deep)
    return {
        "ns_per_sample": (run_ns - (runs - samples) * early_ns) / samples if samples else 0,
        "java_frames": java_frames / n_deep if n_deep else 0,
        "user_frames": user / n_deep if n_deep else 0,
        "deep_share": n_deep / samples if samples else 0,
    }


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def steady_run(build, cp, window, jvm=True):
    """A whole-machine record at 99 Hz with a JVM (unless not jvm) and node spinning."""
    spin = [subprocess.Popen(["node", "-e", steady.SPIN_JS], stdout=subprocess.DEVNULL)]
    if jvm:
        spin.append(subprocess.Popen(["java", "-cp", cp, "Hot", "threads",
                                      str(steady.WARMUP_S + window + 30), "1"],
                                     stdout=subprocess.DEVNULL))
    time.sleep(1)
    rec = subprocess.Popen([os.path.join(build, "roottrace-agent"), "record", "--duration",
                            "%ds" % (steady.WARMUP_S + window + 5), "--frequency", "99",
                            "--output", os.path.join(build, "bench", "jvm", "steady.pb.gz")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(steady.WARMUP_S)
    c0, (b0, n0), t0 = steady.cpu_ns(rec.pid), steady.bpf_run(rec.pid), time.monotonic()
    time.sleep(window)
    c1, (b1, n1), t1 = steady.cpu_ns(rec.pid), steady.bpf_run(rec.pid), time.monotonic()
    rss = rss_kib(rec.pid)
    err = rec.stderr.read()
    rec.wait()
    steady.stop_workload(spin)
    w = t1 - t0
    names = re.search(r"^hotspot: .*names: (\d+) read, (\d+) cached", err, re.M)
    return {"cpu": 100 * (c1 - c0) / 1e9 / w, "bpf": 100 * (b1 - b0) / 1e9 / w,
            "per_sample_us": (b1 - b0) / 1e3 / max(n1 - n0, 1), "rss_mib": rss / 1024,
            "java_names": int(names.group(1)) if names else -1}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--frequency", type=int, default=99)
    ap.add_argument("--window", type=int, default=60)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    cp = classes(build)
    results = {"java": [], "fp": [], "nofp": []}
    for r in range(a.rounds):
        early = bench_unwind.run_once(build, None, "auto", 3, a.frequency)["ns_per_run"]
        for cell in (("java", "fp", "nofp") if r % 2 == 0 else ("nofp", "fp", "java")):
            if cell == "java":
                res = run_jvm(build, cp, a.seconds, a.frequency, early)
                print("round %d JVM x%d      %8.0f ns/sample (%.1f Java frames of %.1f, %.0f%% "
                      "of samples at the bottom)" % (r + 1, DEPTH, res["ns_per_sample"],
                                                     res["java_frames"], res["user_frames"],
                                                     100 * res["deep_share"]),
                      file=sys.stderr)
            else:
                exe = os.path.join(build, "unwind", "edge-" + cell)
                res = bench_unwind.run_once(build, exe, "auto", a.seconds, a.frequency, early)
                print("round %d native %-4s x%d %8.0f ns/sample" %
                      (r + 1, cell, DEPTH, res["ns_per_sample"]), file=sys.stderr)
            results[cell].append(res)
    med = {k: statistics.median(x["ns_per_sample"] for x in v) for k, v in results.items()}
    frames = statistics.median(x["user_frames"] for x in results["java"])
    native_frames = DEPTH + 4  # main, __libc_start_call_main, __libc_start_main, _start
    print("BPF ns per sample, --unwind=auto (median of %d rounds): JVM %.0f (%.1f Java frames "
          "of %.1f), native %d deep with frame pointers %.0f, with tables %.0f (JVM / native "
          "tables = %.2f); per frame: JVM %.0f, native fp %.0f, native tables %.0f (JVM / "
          "native tables = %.2f)" % (
              a.rounds, med["java"], statistics.median(x["java_frames"] for x in results["java"]),
              frames, DEPTH, med["fp"], med["nofp"],
              med["java"] / med["nofp"] if med["nofp"] else 0, med["java"] / frames,
              med["fp"] / native_frames, med["nofp"] / native_frames,
              (med["java"] / frames) / (med["nofp"] / native_frames) if med["nofp"] else 0))
    # node alone beside it: the JVM's share is the difference (the machine's other processes
    # cost the same in both)
    for jvm in (True, False):
        res = steady_run(build, cp, a.window, jvm)
        print("record at 99 Hz, whole machine, %s spinning (%d s after a %d s warm-up): own "
              "CPU %.2f%%, BPF %.2f%%, CPU + BPF %.2f%% of a core, %.1f µs BPF per sample, RSS "
              "%.1f MiB, %d Java names read" % (
                  "a JVM and node" if jvm else "node alone", a.window, steady.WARMUP_S,
                  res["cpu"], res["bpf"], res["cpu"] + res["bpf"], res["per_sample_us"],
                  res["rss_mib"], res["java_names"]))


if __name__ == "__main__":
    main()
