# SPDX-License-Identifier: Apache-2.0
# BPF time per sample of a JS stack 30 frames deep (node, tests/fixtures/v8/deep.js: its JS
# frames found from V8's own structures) against a native stack 30 frames deep
# (tests/fixtures/unwind/edge.c "deep", built with frame pointers, and without: .eh_frame
# tables), each recorded with `record --pid`, alternating for several rounds; prints medians
# and the ratio, and how deep the recorded JS stacks were. As bench_unwind.py does, the cost
# of the program's runs for other processes (measured on a sleeping target) is taken out.
# bench/bench_v8.py --build DIR [--rounds 3] [--seconds 5]. Needs root.
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

NODE = "/usr/bin/node"
DEEP_JS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures",
                       "v8", "deep.js")
DEPTH = 30


def run_node(build, seconds, freq, early_ns):
    """One recording of node at DEPTH JS frames: ns per sample, mean JS frames per sample."""
    out = tempfile.mktemp(prefix="rt-bench-v8-", suffix=".pb.gz")
    node = subprocess.Popen([NODE, DEEP_JS, str(seconds + 60), str(DEPTH)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        if not node.stdout.readline().startswith("ready"):
            raise SystemExit("node did not start deep.js")
        agent = subprocess.Popen([os.path.join(build, "roottrace-agent"), "record", "--pid",
                                  str(node.pid), "--duration", "%ds" % seconds, "--frequency",
                                  str(freq), "--output", out], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
        first = agent.stderr.readline()  # sampling from now: the JS stack starts growing
        node.stdin.write("go\n")
        node.stdin.flush()
        err = first + agent.stderr.read()
        if agent.wait() != 0:
            raise SystemExit("record failed: " + err)
    finally:
        node.kill()
        node.wait()
    prof = pprof_py.parse_file(out)
    os.unlink(out)
    m = re.search(r"BPF run time: ([\d.]+) ms over (\d+) runs", err)
    run_ns, runs = (float(m.group(1)) * 1e6, int(m.group(2))) if m else (0, 0)
    samples = sum(s.values[0] for s in prof.samples)
    deep = [s for s in prof.samples if "leaf" in s.stack]
    js = sum(s.values[0] * sum(1 for m in s.modules if m == "[jit:v8]") for s in deep)
    user = sum(s.values[0] * sum(1 for m in s.modules if m != "[kernel]") for s in deep)
    n_deep = sum(s.values[0] for s in deep)
    return {
        "ns_per_sample": (run_ns - (runs - samples) * early_ns) / samples if samples else 0,
        "js_frames": js / n_deep if n_deep else 0,
        "user_frames": user / n_deep if n_deep else 0,
        "deep_share": n_deep / samples if samples else 0,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--frequency", type=int, default=99)
    a = ap.parse_args()
    results = {"js": [], "fp": [], "nofp": []}
    for r in range(a.rounds):
        early = bench_unwind.run_once(a.build, None, "auto", 3, a.frequency)["ns_per_run"]
        for cell in (("js", "fp", "nofp") if r % 2 == 0 else ("nofp", "fp", "js")):
            if cell == "js":
                res = run_node(a.build, a.seconds, a.frequency, early)
                print("round %d node JS x%d    %8.0f ns/sample (%.1f JS frames of %.1f, %.0f%% "
                      "of samples at the bottom)" % (r + 1, DEPTH, res["ns_per_sample"],
                                                     res["js_frames"], res["user_frames"],
                                                     100 * res["deep_share"]),
                      file=sys.stderr)
            else:
                exe = os.path.join(a.build, "unwind", "edge-" + cell)
                res = bench_unwind.run_once(a.build, exe, "auto", a.seconds, a.frequency,
                                            early)
                print("round %d native %-4s x%d %8.0f ns/sample" %
                      (r + 1, cell, DEPTH, res["ns_per_sample"]), file=sys.stderr)
            results[cell].append(res)
    med = {k: statistics.median(x["ns_per_sample"] for x in v) for k, v in results.items()}
    # node's stack is deeper than DEPTH (its event loop below the JS, node's own callbacks):
    # per frame, the native stacks count DEPTH + main, __libc_start_call_main,
    # __libc_start_main, _start
    frames = statistics.median(x["user_frames"] for x in results["js"])
    native_frames = DEPTH + 4
    print("BPF ns per sample, --unwind=auto (median of %d rounds): node JS %.0f (%.1f JS frames "
          "of %.1f), native %d deep with frame pointers %.0f, with tables %.0f; per frame: JS "
          "%.0f, native fp %.0f, native tables %.0f (JS / native tables = %.2f)" % (
              a.rounds, med["js"], statistics.median(x["js_frames"] for x in results["js"]),
              frames, DEPTH, med["fp"], med["nofp"], med["js"] / frames,
              med["fp"] / native_frames, med["nofp"] / native_frames,
              (med["js"] / frames) / (med["nofp"] / native_frames) if med["nofp"] else 0))


if __name__ == "__main__":
    main()
