# SPDX-License-Identifier: Apache-2.0
# Java frames under real BPF from HotSpot's own structures: a JVM started without any profiling
# flag (before the agent, or after it) is recorded; its methods are named from their Method's
# constant pool through the interpreter, C1 and C2, with their callers, down to main or
# java.lang.Thread.run; several busy threads are named.
import os
import re
import shutil
import subprocess
import tempfile
import threading
import unittest

import harness
import pprof_py
from stacks import show, user_frames, weight

BUILD = os.environ.get("ROOTTRACE_BUILD", "build")
AGENT = os.path.join(BUILD, "roottrace-agent")
FIXTURES = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "fixtures", "jvm"))
JAVA = shutil.which("java") or "/usr/bin/java"
JAVAC = shutil.which("javac") or "/usr/bin/javac"
SECONDS = 4
_classes = None


def classes():
    """The fixture compiled once per run, into the build directory."""
    global _classes
    if _classes is None:
        out = os.path.join(os.path.realpath(BUILD), "tests", "jvm")
        os.makedirs(out, exist_ok=True)
        subprocess.run([JAVAC, "-d", out, os.path.join(FIXTURES, "Hot.java")], check=True)
        _classes = out
    return _classes


def above(sample, name):
    """The frame directly above (the caller of) the first frame called name, or None."""
    frames = user_frames(sample)
    for i, f in enumerate(frames[:-1]):
        if f == name:
            return frames[i + 1]
    return None


class JvmRecording:
    """java running the fixture, recorded with record --pid (started before the agent), or
    the whole machine with the JVM started once the agent samples (after=True)."""

    def __init__(self, *args, go=False, after=False, seconds=SECONDS):
        self.tmp = tempfile.mkdtemp(prefix="rt-jvm-")
        self.out = os.path.join(self.tmp, "p.pb.gz")
        # PrintCompilation only prints each compilation: the test sees the tiers go by
        java = [JAVA, "-XX:+PrintCompilation", "-cp", classes(), "Hot"] + \
            [args[0], str(seconds + 30)] + list(args[1:])
        record = [AGENT, "record", "--duration", "%ds" % seconds, "--frequency", "199",
                  "--output", self.out]
        self.stdout = []
        if after:
            self.agent = subprocess.Popen(record, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.PIPE, text=True)
            first = self.agent.stderr.readline()  # "record: sampling ..." once it samples
            self.java = self._start(java)
        else:
            self.java = self._start(java)
            self.agent = subprocess.Popen(record[:2] + ["--pid", str(self.java.pid)] + record[2:],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                          text=True)
            first = self.agent.stderr.readline()
        if go:  # the hot code starts now, inside the recording: its tiers are recorded
            self.java.stdin.write("go\n")
            self.java.stdin.flush()
        reader = threading.Thread(target=self._read_stdout, daemon=True)
        reader.start()
        self.stderr = first + self.agent.stderr.read()
        if self.agent.wait(timeout=120) != 0:
            raise AssertionError("record exited %d: %s" % (self.agent.returncode, self.stderr))
        self.java.kill()
        self.java.wait()
        reader.join(timeout=5)
        self.profile = pprof_py.parse_file(self.out)
        self.samples = [s for s in self.profile.samples if s.labels.get("pid") == self.java.pid]

    def _start(self, argv):
        java = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        watchdog = threading.Timer(60, java.kill)  # a JVM that never starts ends the test
        watchdog.start()
        line = java.stdout.readline()
        # compilations are printed before, and by another thread: "ready" may share a line
        while line and "ready" not in line:
            self.stdout.append(line)
            line = java.stdout.readline()
        watchdog.cancel()
        if not line:
            raise AssertionError("java did not start: %r" % self.stdout)
        self.stdout.append(line)
        return java

    def _read_stdout(self):
        for line in self.java.stdout:
            self.stdout.append(line)

    def why(self, samples=None):
        return show(samples if samples is not None else self.samples) + "\n" + self.stderr


class JvmUnderBpf(unittest.TestCase):
    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root for BPF")
        if not os.path.exists(JAVA) or not os.path.exists(JAVAC):
            self.fail("java/javac not installed (openjdk-17-jdk-headless)")

    def check_hot(self, rec, hot, caller, entry, min_share=0.95):
        hot_samples = [s for s in rec.samples if hot in s.stack]
        self.assertGreater(weight(hot_samples), 40, rec.why())  # the machine may be busy
        self.assertGreaterEqual(weight(hot_samples) / weight(rec.samples), min_share, rec.why())
        with_caller = [s for s in hot_samples if above(s, hot) == caller]
        self.assertGreaterEqual(weight(with_caller) / weight(hot_samples), 0.90,
                                rec.why([s for s in hot_samples if s not in with_caller]))
        to_entry = [s for s in hot_samples if entry in s.stack]
        self.assertGreaterEqual(weight(to_entry) / weight(hot_samples), 0.90,
                                rec.why([s for s in hot_samples if s not in to_entry]))
        return hot_samples

    def test_hot_method_named_with_its_caller_through_its_tiers_to_main(self):
        rec = JvmRecording("hot", go=True)
        self.check_hot(rec, "Hot.hotLoop", "Hot.callerOfHot", "Hot.main")
        self.assertRegex(rec.stderr, r"hotspot: 1 processes attached", rec.stderr)
        # one name through the tiers: C1 (3) then C2 (4) compiled it during the recording
        # (after "go"), and no other spelling of it was recorded
        log = "".join(rec.stdout)
        after_go = log[log.index("go\n"):] if "go\n" in log else ""
        self.assertRegex(after_go, r"\s3\s+Hot::hotLoop \(", log)
        self.assertRegex(after_go, r"\s4\s+Hot::hotLoop \(", log)
        spellings = {f for s in rec.samples for f in s.stack if "hotLoop" in f}
        self.assertEqual(spellings, {"Hot.hotLoop"})
        modules = {m for s in rec.samples for f, m in zip(s.stack, s.modules) if f == "Hot.hotLoop"}
        self.assertEqual(modules, {"[jit:jvm]"})
        # main was called through the VM's call stub: named by its blob, not [unknown]
        self.assertIn("[StubRoutines (1)]", {above(s, "Hot.main") for s in rec.samples})
        unknown = [s for s in rec.samples
                   if any(f == "[unknown]" and m == "[jit:jvm]" for f, m in zip(s.stack, s.modules))]
        self.assertLessEqual(weight(unknown) / weight(rec.samples), 0.05, rec.why(unknown))

    def test_several_busy_threads_reach_thread_run(self):
        rec = JvmRecording("threads", "3")
        self.check_hot(rec, "Hot.workerHot", "Hot.workerCaller", "java.lang.Thread.run",
                       min_share=0.9)

    def test_a_jvm_started_after_the_agent(self):
        # The launcher maps libjvm.so after exec and the VM sets its code cache up later:
        # the agent captures it again until the VM is up.
        rec = JvmRecording("hot", go=True, after=True)
        self.check_hot(rec, "Hot.hotLoop", "Hot.callerOfHot", "Hot.main", min_share=0.8)


if __name__ == "__main__":
    harness.main()
