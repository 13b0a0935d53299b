# SPDX-License-Identifier: Apache-2.0
# BPF ns per sample for a CPU-bound Ruby script 30 Ruby frames deep (ruby3.1, vm_exec_core's
# native frame replaced by the control frames it runs, each with its method entry for
# Class#method) against the native workload 30 frames deep (edge-nofp "deep", the unwind
# bench's), both `record --pid --unwind=auto`, alternating for several rounds; medians and
# their ratio (the budget: at most 2x) and the share of the Ruby samples that name the 30
# frames. As in bench_unwind.py, the cost of the program's runs for other processes (measured
# on a sleeping target) is taken out. rbspy, the per-process peer, is not installable here:
# the comparison is with the agent's own native walk.
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_interpreter as bench  # noqa: E402
from bench_interpreter import DEPTH  # noqa: E402

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


def main():
    a = bench.parse_args()
    results = bench.measure(a, "ruby", RUBY, ".rb", DEEP_RUBY, "Ruby")
    if results is None:
        return
    rb, nat = (bench.median(results, "ruby", "ns_per_sample"),
               bench.median(results, "native", "ns_per_sample"))
    print("| stack (30 deep, --unwind=auto) | BPF ns/sample (median of %d) | vs native |"
          % a.rounds)
    print("|---|---|---|")
    print("| native (edge-nofp deep) | %.0f | 1.00x |" % nat)
    print("| Ruby 3.1 (control frames, Class#method) | %.0f | %.2fx |" %
          (rb, rb / nat if nat else 0))
    print("Ruby samples naming all 30 Ruby frames: %.1f%%" %
          (100 * bench.median(results, "ruby", "named_30")))


if __name__ == "__main__":
    main()
