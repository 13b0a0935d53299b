# SPDX-License-Identifier: Apache-2.0
# Inlined Java methods under real BPF: a JVM started without any flag runs main -> outer ->
# middle -> inner -> hotLeaf (tests/fixtures/jvm/Inline.java), where C1 and C2 inline middle and
# inner into outer (checked once with -XX:+UnlockDiagnosticVMOptions -XX:+PrintInlining:
# "Inline::middle (11 bytes)   inline (hot)", "Inline::inner (9 bytes)   inline (hot)" under it).
# Once compiled, neither has a frame of its own: the agent names them from outer's scope data
# at the call's pc, each its own frame, between hotLeaf and outer. A JVM that unloads its
# compiled code round after round (Churn.java) is named without a wrong frame.
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
WARMUP = 3  # seconds the JVM spins before "ready": C2 has compiled outer by then


def classes():
    out = os.path.join(os.path.realpath(BUILD), "tests", "jvm-inline")
    os.makedirs(out, exist_ok=True)
    subprocess.run([JAVAC, "-d", out, os.path.join(FIXTURES, "Inline.java")], check=True)
    return out


def churn_classes():
    """Churn on the class path, Worker alone in a directory of its own (loaded by Churn)."""
    out = os.path.join(os.path.realpath(BUILD), "tests", "jvm-churn")
    worker = os.path.join(out, "worker")
    os.makedirs(worker, exist_ok=True)
    subprocess.run([JAVAC, "-d", out, os.path.join(FIXTURES, "Churn.java")], check=True)
    subprocess.run([JAVAC, "-d", worker, os.path.join(FIXTURES, "churn", "Worker.java")],
                   check=True)
    return out, worker


def record_java(tmp, argv):
    """java argv, recorded with record --pid once it printed "ready"; its samples and record's
    stderr."""
    out = os.path.join(tmp, "p.pb.gz")
    java = subprocess.Popen([JAVA] + argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
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


def record_inline(tmp):
    """Inline spinning, recorded once warm."""
    return record_java(tmp, ["-cp", classes(), "Inline", str(SECONDS + 30), str(WARMUP)])


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

    def test_code_unloaded_while_sampled_leaves_no_wrong_frame(self):
        # Worker's class unloads every 300 ms: most of its nmethods are freed before the
        # recording names them; a chain is then left out (counted), never read from what
        # the memory holds now
        cp, worker = churn_classes()
        samples, stderr = record_java(self.tmp, ["-cp", cp, "Churn", worker + "/",
                                                 str(SECONDS + 30), "300"])
        why = lambda s: show(s) + "\n" + stderr
        hot = [s for s in samples if "Worker.leaf" in s.stack]
        self.assertGreater(weight(hot), 20, why(samples))
        # the Java frames between Worker.leaf and Churn.round: Worker's methods, reflection,
        # stubs, in their order (libjvm's own native frames of the reflective call between)
        allowed = re.compile(r"^(Worker\.(inner|middle|spin)|jdk\.internal\.reflect\..*|"
                             r"java\.lang\.reflect\.Method\.invoke|\[.*\])$")
        order = ["Worker.leaf", "Worker.inner", "Worker.middle", "Worker.spin"]
        for s in hot:
            java = [f for f, m in zip(s.stack, s.modules) if m == "[jit:jvm]"]
            top = java[java.index("Worker.leaf"):]
            top = top[:top.index("Churn.round")] if "Churn.round" in top else top
            self.assertTrue(all(allowed.match(f) for f in top[1:]), why([s]))
            seen = [f for f in top if f in order]
            self.assertEqual(seen, sorted(seen, key=order.index), why([s]))
            self.assertEqual(len(seen), len(set(seen)), why([s]))
        named = [s for s in hot if "Worker.middle" in s.stack]
        self.assertGreater(weight(named) / weight(hot), 0.5, why(hot))
        # the per-CPU pc -> blob cache served frames while the code came and went, each hit
        # checked against the blob's header read then (bpf/hotspot_walk.h): the frames above
        # are what it gave
        cache = re.search(r"^hotspot blob cache: (\d+) code-cache pcs found from the per-CPU "
                          r"cache, (\d+) cached blobs whose header changed", stderr, re.M)
        self.assertIsNotNone(cache, stderr)
        self.assertGreater(int(cache.group(1)), 0, stderr)


if __name__ == "__main__":
    harness.main()
