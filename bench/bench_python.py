# SPDX-License-Identifier: Apache-2.0
# BPF ns per sample for a CPU-bound Python program 30 Python frames deep (python3.11, its eval
# loop's frames replaced by the interpreter frames) against the native workload 30 frames deep
# (edge-nofp "deep", the unwind bench's), both `record --pid --unwind=auto`, alternating for
# several rounds; medians and their ratio (the budget: at most 2x), the share of the Python
# samples that name the 30 frames, and the record's share of a core. As in bench_unwind.py,
# the cost of the program's runs for other processes (measured on a sleeping target) is taken
# out. py-spy and rbspy, the per-process peers, are not installable here: the comparison is
# with the agent's own native walk.
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_interpreter as bench  # noqa: E402
from bench_interpreter import DEPTH  # noqa: E402

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


def main():
    a = bench.parse_args()
    results = bench.measure(a, "python", PYTHON, ".py", DEEP_PY, "Python", core_share=True)
    if results is None:
        return

    def med(cell, field):
        return bench.median(results, cell, field)

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
