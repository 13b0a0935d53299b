# SPDX-License-Identifier: Apache-2.0
# Inlined Java methods under real BPF: a JVM started without any flag runs main -> outer ->
# middle -> inner -> hotLeaf (tests/fixtures/jvm/Inline.java), where C1 and C2 inline middle and
# inner into outer (checked once with -XX:+UnlockDiagnosticVMOptions -XX:+PrintInlining:
# "Inline::middle (11 bytes)   inline (hot)", "Inline::inner (9 bytes)   inline (hot)" under it).
# Once compiled, neither has a frame of its own: the agent names them from outer's scope data
# at the call's pc, each its own frame, between hotLeaf and outer.
import os
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
WARMUP = 3  # seconds the JVM spins before "ready": C2 has compiled outer by then


def classes():
    out = os.path.join(os.path.realpath(BUILD), "tests", "jvm-inline")
    os.makedirs(out, exist_ok=True)
    subprocess.run([JAVAC, "-d", out, os.path.join(FIXTURES, "Inline.java")], check=True)
    return out


def record_inline(tmp):
    """Inline spinning, recorded with record --pid once warm; its samples and record's stderr."""
    out = os.path.join(tmp, "p.pb.gz")
    java = subprocess.Popen([JAVA, "-cp", classes(), "Inline", str(SECONDS + 30), str(WARMUP)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        watchdog = threading.Timer(60, java.kill)  # a JVM that never starts ends the test
        watchdog.start()
        line = java.stdout.readline()
        watchdog.cancel()
        if "ready" not in line:
            raise AssertionError("java did not start: %r" % line)
        agent = subprocess.run([AGENT, "record", "--pid", str(java.pid), "--duration",
                                "%ds" % SECONDS, "--frequency", "199", "--output", out],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               timeout=120)
        if agent.returncode != 0:
            raise AssertionError("record exited %d: %s" % (agent.returncode, agent.stderr))
    finally:
        java.kill()
        java.wait()
    profile = pprof_py.parse_file(out)
    return [s for s in profile.samples if s.labels.get("pid") == java.pid], agent.stderr


def callers(sample, name):
    """The three frames above (the caller, its caller, ...) the first frame called name."""
    frames = user_frames(sample)
    if name not in frames:
        return None
    i = frames.index(name)
    return tuple(frames[i + 1:i + 4])


class InlinedJavaFrames(unittest.TestCase):
    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root for BPF")
        if not os.path.exists(JAVA) or not os.path.exists(JAVAC):
            self.fail("java/javac not installed (openjdk-17-jdk-headless)")
        self.tmp = tempfile.mkdtemp(prefix="rt-jvm-inline-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def test_inlined_methods_are_their_own_frames_between_their_callee_and_caller(self):
        samples, stderr = record_inline(self.tmp)
        why = lambda s: show(s) + "\n" + stderr
        hot = [s for s in samples if "Inline.hotLeaf" in s.stack]
        self.assertGreater(weight(hot), 40, why(samples))  # the machine may be busy
        self.assertGreaterEqual(weight(hot) / weight(samples), 0.9, why(samples))
        # compiled code only (warm): inner and middle exist as frames only through outer's
        # scopes, innermost first
        inlined = [s for s in hot if callers(s, "Inline.hotLeaf") ==
                   ("Inline.inner", "Inline.middle", "Inline.outer")]
        self.assertGreaterEqual(weight(inlined) / weight(hot), 0.9,
                                why([s for s in hot if s not in inlined]))
        # the group's root is outer's own frame, named once: main below it, no extra outer
        for s in inlined[:50]:
            frames = user_frames(s)
            self.assertEqual(frames.count("Inline.outer"), 1, frames)
            self.assertEqual(frames.count("Inline.middle"), 1, frames)
            self.assertEqual(frames.count("Inline.inner"), 1, frames)
        reaches_main = [s for s in inlined if "Inline.main" in s.stack]
        self.assertGreaterEqual(weight(reaches_main) / weight(inlined), 0.9, why(inlined))
        self.assertRegex(stderr, r"hotspot: 1 processes attached", stderr)


if __name__ == "__main__":
    harness.main()
