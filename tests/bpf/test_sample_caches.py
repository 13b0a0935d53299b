# SPDX-License-Identifier: Apache-2.0
# BPF's per-CPU caches of a sample's identity (bpf/sample_caches.h) never serve a stale name:
# a thread renamed on one CPU and renamed back on another is named by its last name. (A reused
# pid: tests/integration/test_agent_daemon.py's reused-pid case; stacks across drains:
# test_record's 60 s recording of twelve windows.)
import os
import unittest

import harness
from runtime_case import RuntimeCase, of_pid
from test_record import AGENT  # noqa: F401 (require_root checks it is built)

PYTHON = "/usr/bin/python3.11"

# The worker starts on CPU a named "alpha" (CPU a caches alpha), moves to CPU b (caches alpha,
# then beta after the rename: thread_names says beta), moves back to CPU a and is renamed alpha
# again: CPU a's copy says alpha, as the comm does, yet thread_names still says beta until a
# sample writes it. Fewer samples than the cache's recheck period (64) land on CPU a in all.
RENAME = """
import ctypes, os, sys, threading, time
libc = ctypes.CDLL(None)
cpu_a, cpu_b = sorted(os.sched_getaffinity(0))[:2]

def name_me(name):
    libc.prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME: the thread's comm

def spin(seconds):  # of the thread's CPU time: as many samples on a busy machine
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        sum(i for i in range(100))

def phase_one():
    spin(0.15)

def warm_two():
    spin(0.1)

def phase_two():
    spin(0.3)

def phase_three():
    spin(0.3)

def worker():
    os.sched_setaffinity(0, {cpu_a})
    name_me("alpha")
    phase_one()
    os.sched_setaffinity(0, {cpu_b})
    warm_two()
    name_me("beta")
    phase_two()
    os.sched_setaffinity(0, {cpu_a})
    name_me("alpha")
    phase_three()
    done.set()

done = threading.Event()
time.sleep(float(sys.argv[1]))
threading.Thread(target=worker).start()
done.wait()
threading.Event().wait()
"""


class SampleCaches(RuntimeCase):
    BINARY = PYTHON
    PREFIX = "rt-caches-"
    SCRIPTS = {"renamod.py": RENAME}

    def test_thread_renamed_back_on_another_cpu_is_named_by_its_last_name(self):
        if len(os.sched_getaffinity(0)) < 2:
            self.skipTest("needs two CPUs")
        # the worker starts 2 s in: the process is attached and its tables are loaded
        p = self.start(PYTHON, os.path.join(self.tmp, "renamod.py"), "2")
        # 0.85 s of CPU in all, pinned: several seconds when other processes share the CPUs
        rec, out = self.record(15, ["--pid", str(p.pid), "--frequency", "99"])
        prof, err = self.finish(rec, out)
        self.stop(p)
        samples = of_pid(prof, p.pid)
        last = [s for s in samples if "renamod.phase_three" in s.stack]
        self.assertGreater(len(last), 0, err)
        self.assertEqual({s.labels.get("thread") for s in last}, {"alpha"}, err)
        # the rename in between was seen too (its window may be the last one: then alpha)
        self.assertGreater(len([s for s in samples if "renamod.phase_two" in s.stack]), 0, err)


if __name__ == "__main__":
    harness.main()
