# SPDX-License-Identifier: Apache-2.0
# BPF ns per sample for a CPU-bound PHP script 30 PHP frames deep (php8.2-cli, execute_ex's
# native frame replaced by the PHP frames it runs) against the native workload 30 frames deep
# (edge-nofp "deep", the unwind bench's), both `record --pid --unwind=auto`, alternating for
# several rounds; medians and their ratio (the budget: at most 2x) and the share of the PHP
# samples that name the 30 frames. As in bench_unwind.py, the cost of the program's runs for
# other processes (measured on a sleeping target) is taken out. phpspy, the per-process peer,
# is not installable here: the comparison is with the agent's own native walk.
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_interpreter as bench  # noqa: E402
from bench_interpreter import DEPTH  # noqa: E402

PHP = "/usr/bin/php8.2"
DEEP_PHP = """<?php
function spin() { $s = 0; while (true) { for ($i = 0; $i < 1000; $i++) { $s += $i; } } }
function level($n) { if ($n == 0) { spin(); } level($n - 1); }
level(%d - 2); // <main> and spin make it %d
""" % (DEPTH, DEPTH)


def main():
    a = bench.parse_args()
    results = bench.measure(a, "php", PHP, ".php", DEEP_PHP, "PHP")
    if results is None:
        return
    php, nat = (bench.median(results, "php", "ns_per_sample"),
                bench.median(results, "native", "ns_per_sample"))
    print("| stack (30 deep, --unwind=auto) | BPF ns/sample (median of %d) | vs native |"
          % a.rounds)
    print("|---|---|---|")
    print("| native (edge-nofp deep) | %.0f | 1.00x |" % nat)
    print("| PHP 8.2 (PHP frames) | %.0f | %.2fx |" % (php, php / nat if nat else 0))
    print("PHP samples naming all 30 PHP frames: %.1f%%" %
          (100 * bench.median(results, "php", "named_30")))


if __name__ == "__main__":
    main()
