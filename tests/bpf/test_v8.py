# SPDX-License-Identifier: Apache-2.0
# JS frames under real BPF from V8's own structures: node started without any flag (and
# before the agent) is recorded with `record --pid`; its functions are named from their
# SharedFunctionInfo through every tier, with their callers, down to node's start; worker
# threads are named; code that is compiled and dropped by the thousand leaves no wrong name;
# a function TurboFan inlined into its caller is its own frame above it.
import os
import re
import subprocess
import tempfile
import threading
import unittest

import harness
import pprof_py
from stacks import show, user_frames, weight

BUILD = os.environ.get("ROOTTRACE_BUILD", "build")
AGENT = os.path.join(BUILD, "roottrace-agent")
FIXTURES = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "fixtures", "v8"))
NODE = "/usr/bin/node"
NODE_START = "node::Start(int, char**)"  # node's main() tail-calls it: it stands for main
SECONDS = 4


def above(sample, name):
    """The frame directly above (the caller of) the first frame called name, or None."""
    frames = user_frames(sample)
    for i, f in enumerate(frames[:-1]):
        if f == name:
            return frames[i + 1]
    return None


class NodeRecording:
    """node running a fixture, recorded with record --pid; started before the agent."""

    def __init__(self, script, *args, go=False, seconds=SECONDS, node_seconds=None):
        self.tmp = tempfile.mkdtemp(prefix="rt-v8-")
        self.out = os.path.join(self.tmp, "p.pb.gz")
        # node spins past the recording unless told (node_seconds): its functions can be named
        # after it, from its memory
        node_seconds = seconds + 30 if node_seconds is None else node_seconds
        self.node = subprocess.Popen([NODE, os.path.join(FIXTURES, script), str(node_seconds)]
                                     + list(args), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True)
        self.stdout = [self.node.stdout.readline()]
        if not self.stdout[0].startswith("ready"):
            raise AssertionError("node did not start %s: %r" % (script, self.stdout))
        self.agent = subprocess.Popen([AGENT, "record", "--pid", str(self.node.pid),
                                       "--duration", "%ds" % seconds, "--frequency", "199",
                                       "--output", self.out], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True)
        first = self.agent.stderr.readline()  # "record: sampling pid ..." once it samples
        if go:  # the hot code starts now, inside the recording: its tier-up is recorded
            self.node.stdin.write("go\n")
            self.node.stdin.flush()
        reader = threading.Thread(target=self._read_stdout, daemon=True)
        reader.start()
        self.stderr = first + self.agent.stderr.read()
        if self.agent.wait(timeout=120) != 0:
            raise AssertionError("record exited %d: %s" % (self.agent.returncode, self.stderr))
        self.node.kill()
        self.node.wait()
        reader.join(timeout=5)
        self.profile = pprof_py.parse_file(self.out)
        self.samples = [s for s in self.profile.samples if s.labels.get("pid") == self.node.pid]

    def _read_stdout(self):
        for line in self.node.stdout:
            self.stdout.append(line)

    def why(self, samples=None):
        return show(samples if samples is not None else self.samples) + "\n" + self.stderr


class V8UnderBpf(unittest.TestCase):
    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root for BPF")
        if not os.path.exists(NODE):
            self.fail("%s not installed" % NODE)

    def test_hot_function_named_with_its_caller_through_its_tier_up_to_node_start(self):
        rec = NodeRecording("hot.js", "hot", go=True)
        busy = [s for s in rec.samples if "callerOfHot" in s.stack]
        self.assertGreater(weight(busy), 100, rec.why())
        hot = [s for s in rec.samples if "hotLoop" in s.stack]
        self.assertGreaterEqual(weight(hot) / weight(rec.samples), 0.95, rec.why())
        with_caller = [s for s in hot if above(s, "hotLoop") == "callerOfHot"]
        self.assertGreaterEqual(weight(with_caller) / weight(hot), 0.90,
                                rec.why([s for s in hot if s not in with_caller]))
        to_start = [s for s in hot if NODE_START in s.stack]
        self.assertGreaterEqual(weight(to_start) / weight(hot), 0.95,
                                rec.why([s for s in hot if s not in to_start]))
        # one name through the tiers: V8 optimised it during the recording (--trace-opt,
        # set by the script), and no tier marker or other spelling of it was recorded
        log = "".join(rec.stdout)
        self.assertRegex(log, r"go\n(.|\n)*completed optimizing .*hotLoop", log)
        spellings = {f for s in rec.samples for f in s.stack if "hotLoop" in f}
        self.assertEqual(spellings, {"hotLoop"})
        ids = {i for i, name in rec.profile.functions.items() if name == "hotLoop"}
        self.assertEqual({rec.profile.function_files[i] for i in ids},
                         {os.path.join(FIXTURES, "hot.js")})

    def test_a_function_turbofan_inlined_is_its_own_frame_above_its_caller(self):
        # inlinedStep runs inside outerOfInlined's optimised code (TurboFan inlined it): told
        # from that code's position table and inlining positions at the sampled pc offset
        rec = NodeRecording("inline.js", go=True)
        busy = [s for s in rec.samples if "outerOfInlined" in s.stack]
        self.assertGreater(weight(busy), 100, rec.why())
        inlined = [s for s in busy if user_frames(s)[:2] == ["inlinedStep", "outerOfInlined"]]
        self.assertGreaterEqual(weight(inlined) / weight(busy), 0.9,
                                rec.why([s for s in busy if s not in inlined]))
        # the frames after an optimised frame's third word are read on: down to node's start
        to_start = [s for s in inlined if NODE_START in s.stack]
        self.assertGreaterEqual(weight(to_start) / weight(inlined), 0.95,
                                rec.why([s for s in inlined if s not in to_start]))
        # they came from the optimised code (no frame of inlinedStep's own: that would be the
        # interpreter's or its own code, before TurboFan inlined it)
        m = re.search(r"^v8 inlining: (\d+) optimised frames .* code objects: (\d+) read, "
                      r"(\d+) unreadable .*; (\d+) inlined frames told$", rec.stderr, re.M)
        self.assertIsNotNone(m, rec.stderr)
        self.assertGreaterEqual(int(m.group(1)), 0.8 * weight(inlined), rec.stderr)
        self.assertGreater(int(m.group(2)), 0, rec.stderr)
        self.assertGreater(int(m.group(4)), 0, rec.stderr)
        spellings = {f for s in rec.samples for f in s.stack if "inlinedStep" in f}
        self.assertEqual(spellings, {"inlinedStep"})

    def test_optimised_code_compiled_and_dropped_lends_no_inlined_function_to_another(self):
        # a pair per round (gen_R_step inlined into gen_R_outer), optimised, dropped, collected:
        # a frame is named from the code it ran, or its outer function alone, never from code
        # that took the address after it
        rec = NodeRecording("inline_churn.js", go=True, seconds=5)
        step, outer = re.compile(r"^gen_(\d+)_step$"), re.compile(r"^gen_(\d+)_outer$")
        inlined = 0
        for s in rec.samples:
            frames = user_frames(s)
            for i, f in enumerate(frames):
                m = step.match(f)
                if m:
                    inlined += s.values[0]
                    self.assertEqual(frames[i + 1] if i + 1 < len(frames) else None,
                                     "gen_%s_outer" % m.group(1), rec.why([s]))
                if outer.match(f):
                    self.assertEqual(frames[i + 1] if i + 1 < len(frames) else None,
                                     "inlineChurnDriver", rec.why([s]))
        self.assertGreater(inlined, 40, rec.why())
        m = re.search(r"^v8 inlining: .* code objects: (\d+) read, ", rec.stderr, re.M)
        self.assertIsNotNone(m, rec.stderr)
        self.assertGreater(int(m.group(1)), 20, rec.stderr)  # many rounds' code read

    def test_a_process_that_exits_before_its_samples_are_named_keeps_its_names(self):
        # node spins 2 s and exits; the recording drains at its end (4 s): the functions were
        # named when BPF first recorded them (announced), not from the dead process's memory
        rec = NodeRecording("hot.js", "hot", go=True, node_seconds=2)
        self.assertEqual(rec.node.returncode, 0, "node exited on its own, before the drain")
        hot = [s for s in rec.samples if "hotLoop" in s.stack]
        self.assertGreater(weight(hot), 40, rec.why())
        with_caller = [s for s in hot if above(s, "hotLoop") == "callerOfHot"]
        self.assertGreaterEqual(weight(with_caller) / weight(hot), 0.9, rec.why())

    def test_anonymous_functions_named_by_their_start_position(self):
        rec = NodeRecording("hot.js", "anon", go=True)
        with open(os.path.join(FIXTURES, "hot.js")) as f:
            src = f.read()
        # V8's start position of a function expression is its parameter list
        starts = [src.index("function (n)") + len("function "), src.index("(n) =>")]
        names = {"(anonymous@%d)" % p for p in starts}
        seen = {}
        for s in rec.samples:
            for name in names:
                if name in s.stack:
                    seen[name] = seen.get(name, 0) + s.values[0]
                    self.assertEqual(above(s, name), "anonCaller", rec.why([s]))
        self.assertEqual(set(seen), names, rec.why())
        self.assertGreater(min(seen.values()), 20, seen)

    def test_worker_threads_are_named(self):
        # Threads are not told apart in a profile (one comm, no tid label): a worker's stacks
        # are those reaching a worker thread's start, the main thread's those reaching main.
        rec = NodeRecording("workers.js", go=True)
        for hot, caller, entry in (("workerHot", "workerCaller", "node::worker::Worker::Run()"),
                                   ("mainHot", "mainCaller", NODE_START)):
            busy = [s for s in rec.samples if caller in s.stack]
            named = [s for s in busy if above(s, hot) == caller and entry in s.stack]
            self.assertGreater(weight(named), 50, rec.why())
            self.assertGreaterEqual(weight(named) / weight(busy), 0.9,
                                    rec.why([s for s in busy if s not in named]))

    def test_functions_compiled_and_dropped_leave_no_wrong_name(self):
        # A function is named when BPF first records it (announced), else when its samples
        # are drained: one collected by then is [unknown] (counted as stale or unreadable),
        # never named after what took its address.
        rec = NodeRecording("churn.js", go=True, seconds=5)
        self.assertGreater(weight(rec.samples), 200, rec.why())
        gen = re.compile(r"^gen_(\d+)_(\d+)$")
        generated = 0
        for s in rec.samples:
            frames = user_frames(s)
            for i, f in enumerate(frames):
                if gen.match(f):
                    generated += s.values[0]
                    # a generated function runs only under churnDriver, nothing runs above it
                    self.assertEqual(frames[i + 1] if i + 1 < len(frames) else None,
                                     "churnDriver", rec.why([s]))
                    self.assertFalse(any(gen.match(g) for g in frames[:i]), rec.why([s]))
        self.assertGreater(generated, 50, rec.why())
        m = re.search(r"^v8: .* (\d+) read, .* (\d+) stale, (\d+) unreadable$", rec.stderr,
                      re.M)
        self.assertIsNotNone(m, rec.stderr)
        self.assertGreater(int(m.group(1)), 50, rec.stderr)  # names of many functions read
        unknown = [s for s in rec.samples
                   if any(f == "[unknown]" and m == "[jit:v8]"
                          for f, m in zip(s.stack, s.modules))]
        self.assertLessEqual(weight(unknown) / weight(rec.samples), 0.1, rec.why(unknown))

if __name__ == "__main__":
    harness.main()
