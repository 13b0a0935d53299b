# SPDX-License-Identifier: Apache-2.0
# BPF ns per sample for a CPU-bound Ruby script 30 Ruby frames deep (ruby3.1, vm_exec_core's
# native frame replaced by the control frames it runs, each with its method entry for
# Class#method) against the native workload 30 frames deep (edge-nofp "deep", the unwind
# bench's), both `record --pid --unwind=auto`, alternating for several rounds; medians and
# their ratio (the budget: at most 2x) and the share of the Ruby samples that name the 30
# frames. As in bench_unwind.py, the cost of the program's runs for other processes (measured
# on a sleeping target) is taken out. rbspy, the per-process peer, is not installable here:
# the comparison is with the agent's own native walk.
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

DEPTH = 30
RUBY = "/usr/bin/ruby3.1"
DEEP_RUBY = """
class Deep
  def spin
    s = 0
    while true
      i = 0
      while i < 1000
        s += i
        i += 1
      end
    end
  end

  def level(n)
    n == 0 ? spin : level(n - 1)
  end
end

Deep.new.level(%d - 3) # <main> and spin make it %d
""" % (DEPTH, DEPTH)


def run_once(build, argv, seconds, freq, early_ns=0.0):
    out = tempfile.mktemp(prefix="rt-bench-ruby-", suffix=".pb.gz")
    target = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        rec = subprocess.run([os.path.join(build, "roottrace-agent"), "record", "--pid",
                              str(target.pid), "--unwind", "auto", "--duration",
                              "%ds" % seconds, "--frequency", str(freq), "--output", out],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    finally:
        target.kill()
        target.wait()
    if rec.returncode:
        raise SystemExit("record failed: " + rec.stderr)
    prof = pprof_py.parse_file(out)
    os.unlink(out)
    m = re.search(r"BPF run time: ([\d.]+) ms over (\d+) runs", rec.stderr)
    run_ns = float(m.group(1)) * 1e6 if m else 0
    runs = int(m.group(2)) if m else 0
    samples = sum(s.values[0] for s in prof.samples)
    named = sum(s.values[0] for s in prof.samples
                if sum(1 for mod in s.modules if mod == "[ruby]") >= DEPTH)
    return {
        "ns_per_sample": (run_ns - (runs - samples) * early_ns) / samples if samples else 0,
        "ns_per_run": run_ns / runs if runs else 0,
        "named_30": named / samples if samples else 0,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--frequency", type=int, default=99)
    a = ap.parse_args()
    if os.geteuid():
        raise SystemExit("bench-ruby needs root")
    if not os.access(RUBY, os.X_OK):
        print("bench-ruby: %s not installed, not measured" % RUBY)
        return
    script = tempfile.NamedTemporaryFile("w", suffix=".rb", prefix="rt-deep-", delete=False)
    script.write(DEEP_RUBY)
    script.close()
    native = [os.path.join(a.build, "unwind", "edge-nofp"), "deep", str(a.seconds + 5),
              str(DEPTH)]
    cells = {"ruby": [RUBY, script.name], "native": native}
    results = {k: [] for k in cells}
    try:
        for r in range(a.rounds):
            early = run_once(a.build, ["sleep", str(a.seconds + 5)], 3, a.frequency)
            order = list(cells) if r % 2 == 0 else list(reversed(list(cells)))
            for cell in order:
                res = run_once(a.build, cells[cell], a.seconds, a.frequency,
                               early["ns_per_run"])
                results[cell].append(res)
                print("round %d %-6s %7.0f ns/sample  30 Ruby frames named %5.1f%%" %
                      (r + 1, cell, res["ns_per_sample"], 100 * res["named_30"]),
                      file=sys.stderr)
    finally:
        os.unlink(script.name)

    def med(cell, field):
        return statistics.median(x[field] for x in results[cell])

    rb, nat = med("ruby", "ns_per_sample"), med("native", "ns_per_sample")
    print("| stack (30 deep, --unwind=auto) | BPF ns/sample (median of %d) | vs native |"
          % a.rounds)
    print("|---|---|---|")
    print("| native (edge-nofp deep) | %.0f | 1.00x |" % nat)
    print("| Ruby 3.1 (control frames, Class#method) | %.0f | %.2fx |" %
          (rb, rb / nat if nat else 0))
    print("Ruby samples naming all 30 Ruby frames: %.1f%%" % (100 * med("ruby", "named_30")))


if __name__ == "__main__":
    main()
