# SPDX-License-Identifier: Apache-2.0
# Python frames from the node agent, on the real interpreter (Debian's python3.11, started
# without flags): a hot function under a known caller, a C call (zlib) in order between Python
# frames, four threads each named, processes started before and after the agent, one in its
# own mount namespace running an interpreter only that namespace has, and pyenv builds of
# 3.8-3.13 when the machine has them.
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

import harness
import pprof_py
from runtime_case import FREQ, RuntimeCase, frames_of, function_files, of_pid, parent_of, share
from test_record import AGENT, Recorder, require_root

PYTHON = "/usr/bin/python3.11"
PYENV = "/root/.pyenv/versions"

HOT = """
def hot(n):
    s = 0
    for i in range(n):
        s += i * i
    return s

def caller():
    while True:
        hot(20000)

caller()
"""

ZLIB = """
import os, zlib
data = os.urandom(1 << 14) + bytes(1 << 16)

def compress_loop():
    while True:
        zlib.compress(data, 6)

compress_loop()
"""

SHORT = """
import time
def hot(n):
    s = 0
    for i in range(n):
        s += i * i
    return s

def caller():
    end = time.monotonic() + 2
    while time.monotonic() < end:
        hot(20000)

caller()
"""

THREADS = """
import ctypes, threading
libc = ctypes.CDLL(None)

def name_me(name):
    libc.prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME: the thread's comm

def spin0():
    name_me("worker0")
    while True:
        sum(i for i in range(1000))

def spin1():
    name_me("worker1")
    while True:
        sum(i for i in range(1000))

def spin2():
    name_me("worker2")
    while True:
        sum(i for i in range(1000))

def spin3():
    name_me("worker3")
    while True:
        sum(i for i in range(1000))

for f in (spin0, spin1, spin2, spin3):
    threading.Thread(target=f, daemon=True).start()
threading.Event().wait()
"""


def python_frames(sample):
    """The sample's interpreter frames, leaf first (their mapping is [python])."""
    return frames_of(sample, "[python]")


def python_parent_of(sample, name):
    """The interpreter frame directly above name (3.8-3.10 keep native glue between)."""
    py = python_frames(sample)
    if name not in py:
        return None
    i = py.index(name)
    return py[i + 1] if i + 1 < len(py) else None


class PythonFrames(RuntimeCase):
    BINARY = PYTHON
    PREFIX = "rt-python-"
    SCRIPTS = {"hotmod.py": HOT, "zmod.py": ZLIB, "thrmod.py": THREADS, "shortmod.py": SHORT}

    def test_hot_function_and_its_caller_with_record_pid(self):
        samples, prof, err = self.record_alone("hotmod.py", 6)
        named = share(samples, lambda s: "hotmod.hot" in s.stack)
        under = share(samples, lambda s: parent_of(s, "hotmod.hot") == "hotmod.caller")
        self.assertGreaterEqual(named, 0.95, err)
        self.assertGreaterEqual(under, 0.90, err)
        # the file goes into Function.filename; the eval loop's own frame is replaced
        files = function_files(prof, samples, "hotmod.hot")
        self.assertEqual(files, {os.path.join(self.tmp, "hotmod.py")})
        self.assertLess(share(samples, lambda s: "_PyEval_EvalFrameDefault" in s.stack), 0.05)
        self.assertIn("python: 1 processes attached", err)

    def test_a_process_that_exits_before_the_window_is_named_keeps_its_names(self):
        warm = self.start(PYTHON, os.path.join(self.tmp, "hotmod.py"))
        rec, out = self.record(8)
        time.sleep(2)  # python3.11's and libc's tables built (for warm), kept by build-id
        p = self.start(PYTHON, os.path.join(self.tmp, "shortmod.py"))
        p.wait(30)  # exits after 2 s, long before the window is named
        prof, err = self.finish(rec, out)
        self.stop(warm)
        samples = of_pid(prof, p.pid)
        # whole stacks: walked once its tables were loaded (see the namespace case)
        whole = [s for s in samples if "_start" in s.stack]
        self.assertGreater(len(whole), 0, err)
        named = share(whole, lambda s: parent_of(s, "shortmod.hot") == "shortmod.caller")
        self.assertGreaterEqual(named, 0.90, err)

    def test_c_call_reads_python_caller_then_native_frames(self):
        samples, prof, err = self.record_alone("zmod.py", 5)
        in_libz = [s for s in samples if any("libz" in m for m in s.modules)]
        self.assertGreater(share(samples, lambda s: s in in_libz), 0.5, err)

        def ordered(s):
            z = max(i for i, m in enumerate(s.modules) if "libz" in m)
            if "zmod.compress_loop" not in s.stack:
                return False
            c = s.stack.index("zmod.compress_loop")
            # leaf first: zlib's C frames, then (rootward) the Python caller; no Python
            # frame below the C code
            return z < c and not any(m == "[python]" for m in s.modules[:z])

        self.assertGreaterEqual(share(in_libz, ordered), 0.95, err)

    def test_four_threads_each_named(self):
        samples, prof, err = self.record_alone("thrmod.py", 6, settle=1)
        for k in range(4):
            mine = [s for s in samples if s.labels.get("thread") == "worker%d" % k]
            self.assertGreater(len(mine), 0, "worker%d has no samples\n%s" % (k, err))
            own = share(mine, lambda s: "thrmod.spin%d" % k in s.stack)
            other = share(mine, lambda s: any("thrmod.spin%d" % j in s.stack
                                              for j in range(4) if j != k))
            self.assertGreaterEqual(own, 0.90, "worker%d\n%s" % (k, err))
            self.assertEqual(other, 0.0)

    def test_started_before_after_and_in_its_own_mount_namespace(self):
        before = self.start(PYTHON, os.path.join(self.tmp, "hotmod.py"))
        # an interpreter only its namespace has: a private tmpfs holding a copy of it
        ns_dir = os.path.join(self.tmp, "ns")
        os.mkdir(ns_dir)
        script = ("mount -t tmpfs none {d} && cp {py} {d}/python3.11 && cp {src} {d}/nsmod.py "
                  "&& exec {d}/python3.11 {d}/nsmod.py").format(
                      d=ns_dir, py=PYTHON, src=os.path.join(self.tmp, "hotmod.py"))
        time.sleep(0.5)
        rec, out = self.record(8)
        after = self.start(PYTHON, os.path.join(self.tmp, "hotmod.py"))
        in_ns = self.start("unshare", "-m", "--propagation", "private", "sh", "-c", script)
        time.sleep(7)
        self.assertIsNone(in_ns.poll(), "the namespaced interpreter did not start")
        self.assertFalse(os.path.exists(os.path.join(ns_dir, "python3.11")))
        prof, err = self.finish(rec, out)
        for p in (before, after, in_ns):
            self.stop(p)
        for p, hot in ((before, "hotmod.hot"), (after, "hotmod.hot"), (in_ns, "nsmod.hot")):
            samples = of_pid(prof, p.pid)
            self.assertGreater(len(samples), 0, "pid %d has no samples\n%s" % (p.pid, err))
            # Samples taken before the process's unwind tables were loaded are walked by the
            # kernel with frame pointers, which python3.11 has not: short native stacks,
            # counted in "before their tables were loaded". Once loaded, every whole stack
            # (down to _start) names the interpreter frames.
            whole = [s for s in samples if "_start" in s.stack]
            misses = [s.stack[:12] for s in whole if hot not in s.stack][:5]
            if p is in_ns:
                self.judge_after_its_tables_loaded(samples, whole, err)
            else:
                self.assertGreater(share(samples, lambda s: s in whole), 0.5,
                                   "pid %d\n%s" % (p.pid, err))
            self.assertGreaterEqual(share(whole, lambda s: hot in s.stack), 0.95,
                                    "pid %d %r\n%s" % (p.pid, misses, err))

    def judge_after_its_tables_loaded(self, samples, whole, err):
        """The namespaced interpreter is a copy only its namespace has: its big table is built
        from scratch, which took 4-5 s of the 7 on a loaded machine. What this case names is
        that it is read there and walked once built: its samples the tables walked (whole, or
        with interpreter frames, which only that walk gives) are judged; the others must be
        within the agent's count of samples taken before their tables were loaded."""
        m = re.search(r"(\d+) before their tables were loaded", err)
        self.assertIsNotNone(m, err)
        walked = [s for s in samples if s in whole or python_frames(s)]
        early = sum(s.values[0] for s in samples if s not in walked)
        self.assertLessEqual(early, int(m.group(1)), "not walked by the tables\n%s" % err)
        self.assertGreater(share(walked, lambda s: s in whole), 0.5, err)


class PyenvVersions(unittest.TestCase):
    """Every pyenv build this machine has, 3.8 to 3.13: hot under caller, by record --pid."""

    def test_each_installed_version_names_hot_under_caller(self):
        require_root(self)
        builds = []
        for minor in range(8, 14):
            for v in sorted(os.listdir(PYENV)) if os.path.isdir(PYENV) else []:
                if v.startswith("3.%d." % minor):
                    builds.append((v, os.path.join(PYENV, v, "bin", "python3.%d" % minor)))
        if not builds:
            raise unittest.SkipTest("no pyenv builds")
        tmp = tempfile.mkdtemp(prefix="rt-pyenv-")
        try:
            src = os.path.join(tmp, "hotmod.py")
            with open(src, "w") as f:
                f.write(HOT)
            for version, exe in builds:
                with self.subTest(version=version):
                    p = subprocess.Popen([exe, src], stdout=subprocess.DEVNULL)
                    try:
                        time.sleep(0.5)
                        out = os.path.join(tmp, version + ".pb.gz")
                        rec = Recorder(["--duration", "3s", "--frequency", str(FREQ), "--pid",
                                        str(p.pid)], out)
                        rec.wait_started()
                        rec.proc.wait(120)
                        self.assertEqual(rec.stop(timeout=120), 0, rec.stderr)
                    finally:
                        p.kill()
                        p.wait()
                    samples = of_pid(pprof_py.parse_file(out), p.pid)
                    self.assertGreater(len(samples), 0, rec.stderr)
                    self.assertGreaterEqual(
                        share(samples,
                              lambda s: python_parent_of(s, "hotmod.hot") == "hotmod.caller"),
                        0.90, "%s\n%s" % (version, rec.stderr))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    harness.main()
