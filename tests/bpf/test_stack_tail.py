# SPDX-License-Identifier: Apache-2.0
# The per-thread stack tail cache (bpf/stack_tail.h) against real BPF: two call chains of one
# frame layout alternate every 3 ms (tests/fixtures/unwind/tail.c), so the cached tail of one
# chain meets the other chain's walk at a frame of equal state; every sample must still name
# its own chain's outer function, in one thread and in threads that alternate out of step.
# node and a JVM (bpf/stack_tail_vm.h): the JS or Java frames and the native ones below the
# outermost of them are copied from the tail (record's "VM frames" among the frames copied), and
# the stacks are the walk's (names, callers, one native root).
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

import harness
import pprof_py
import test_jvm
import test_v8
from stacks import base_name, share, show, user_frames, weight

BUILD = os.path.abspath(os.environ.get("ROOTTRACE_BUILD", "build"))
AGENT = os.path.join(BUILD, "roottrace-agent")
UNWIND = os.path.join(BUILD, "unwind")
FREQ = 199
START_FRAMES = ["__libc_start_call_main", "__libc_start_main", "_start"]
TAILS = re.compile(r"stack tails: (\d+) walks ended with the thread's cached tail \((\d+) frames "
                   r"copied, (\d+) of them VM frames\), (\d+) walked to the end, (\d+) tails "
                   r"changed")
TAIL_COUNTERS = ("hits", "frames", "vm_frames", "misses", "fallbacks")


def require_root():
    if os.geteuid() != 0:
        raise unittest.SkipTest("needs root for BPF")
    if not os.path.exists(AGENT):
        raise AssertionError("%s not built" % AGENT)


def record(argv, seconds):
    """Runs argv, records only its pid for `seconds`; (profile, stderr, tail counters)."""
    tmp = tempfile.mkdtemp(prefix="rt-tail-")
    out = os.path.join(tmp, "p.pb.gz")
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        res = subprocess.run([AGENT, "record", "--pid", str(proc.pid), "--unwind", "auto",
                              "--duration", "%gs" % seconds, "--frequency", str(FREQ),
                              "--output", out], capture_output=True, text=True, timeout=120)
        if res.returncode != 0:
            raise AssertionError("record exited %d: %s" % (res.returncode, res.stderr))
        return pprof_py.parse_file(out), res.stderr, tail_counters(res.stderr)
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def tail_counters(stderr):
    m = TAILS.search(stderr)
    if not m:
        raise AssertionError("no stack tail counters in: " + stderr)
    return dict(zip(TAIL_COUNTERS, map(int, m.groups())))


def below_vm(sample, module):
    """The native frames below the outermost frame of the VM's module ([jit:v8], [jit:jvm])."""
    frames = [(f.split("(")[0], m) for f, m in zip(sample.stack, sample.modules)
              if m != "[kernel]"]
    vm = [i for i, (_, m) in enumerate(frames) if m == module]
    return tuple(f for f, _ in frames[vm[-1] + 1:]) if vm else ()


def chain_samples(prof, leaf):
    """Samples in leaf (leaf_a or leaf_b), their user frames from the leaf function on."""
    out = []
    for s in prof.samples:
        # glibc's internal alias: __GI___clone3 is __clone3
        frames = [base_name(f).replace("__GI___", "__") for f in user_frames(s)]
        if leaf in frames:
            out.append((s, frames[frames.index(leaf):]))
    return out


class AlternatingChains(unittest.TestCase):
    def setUp(self):
        require_root()

    def check_chains(self, argv, root):
        prof, err, tails = record(argv, 5)
        for chain in ("a", "b"):
            got = chain_samples(prof, "leaf_" + chain)
            samples = [s for s, _ in got]
            self.assertGreater(weight(samples), 40, err)
            want = ["leaf_" + chain, "mid", "outer_" + chain, "alternate"] + root
            good = [s for s, frames in got if frames == want]
            bad = [s for s in samples if s not in good]
            self.assertGreaterEqual(share(good, samples), 0.99,
                                    "chain %s:\n%s\n%s" % (chain, show(bad), err))
        # the tails were used, and a chain's walk met the other's tail and found its words
        # changed: the exactness above is the cache's, not its absence
        self.assertGreater(tails["hits"], 50, err)
        self.assertGreater(tails["fallbacks"], 10, err)

    def test_each_sample_names_its_own_chains_outer_function(self):
        self.check_chains([os.path.join(UNWIND, "tail-nofp"), "60"], ["main"] + START_FRAMES)

    def test_with_frame_pointers_too(self):
        self.check_chains([os.path.join(UNWIND, "tail-fp"), "60"], ["main"] + START_FRAMES)

    def test_threads_out_of_step_keep_their_own_tails(self):
        self.check_chains([os.path.join(UNWIND, "tail-nofp"), "60", "3", "2"],
                          ["thread_main", "start_thread", "__clone3"])


# record --pid builds and loads the process's tables (node's and libjvm's tens of MiB of text)
# before its first sample (agent/sampling/pipeline.c): every sample is table-walked, none is
# spent waiting for them. 10 s is ~2,000 samples on a free core and still ~400 with the workload
# at a fifth of one (measured on a loaded machine: 277 and 214 tail hits at 8 s, against the 20
# asked, every share met); it was 30 s when the tables were built at the first sample.
VM_SECONDS = 10


class VmTails(unittest.TestCase):
    """The tail below a VM's outermost frame: used, and the stacks stay the walk's."""

    def setUp(self):
        require_root()

    def check(self, rec, module, hot, caller, entry, root):
        tails = tail_counters(rec.stderr)
        # the native frames below JSEntry or the call stub came from the tail, most samples
        self.assertGreater(tails["hits"], 20, rec.stderr)
        self.assertGreaterEqual(tails["frames"], 5 * tails["hits"], rec.stderr)
        # and JS or Java frames among them (stack_tail_vm.h), not only the native ones below
        # the outermost VM frame: the stacks checked below are then the VM tail's too
        self.assertGreater(tails["vm_frames"], 0, rec.stderr)
        hot_samples = [s for s in rec.samples if hot in s.stack]
        self.assertGreaterEqual(share(hot_samples, rec.samples), 0.95, rec.why())
        with_caller = [s for s in hot_samples if test_v8.above(s, hot) == caller]
        self.assertGreaterEqual(share(with_caller, hot_samples), 0.90,
                                rec.why([s for s in hot_samples if s not in with_caller]))
        to_entry = [s for s in hot_samples if entry in s.stack]
        self.assertGreaterEqual(share(to_entry, hot_samples), 0.95,
                                rec.why([s for s in hot_samples if s not in to_entry]))
        # walked (before the tail, or its words changed) and copied, the frames below the VM
        # are one sequence, down to the thread's root
        natives = {}
        for s in hot_samples:
            natives.setdefault(below_vm(s, module), []).append(s)
        main = max(natives, key=lambda k: weight(natives[k]))
        self.assertGreaterEqual(share(natives[main], hot_samples), 0.99,
                                "\n".join("%d: %s" % (weight(v), " <- ".join(k))
                                          for k, v in natives.items()) + "\n" + rec.stderr)
        self.assertEqual([base_name(f).replace("__GI___", "__") for f in main[-len(root):]],
                         root, main)

    def test_node_js_frames_and_the_native_ones_below_come_from_the_tail(self):
        # spun from the main script ("now"): from a stdin callback the JS frames would be past
        # the tail's span (above uv__io_poll's frame, tests/fixtures/v8/hot.js), none copied
        rec = test_v8.NodeRecording("hot.js", "hot", "now", seconds=VM_SECONDS)
        self.check(rec, "[jit:v8]", "hotLoop", "callerOfHot", test_v8.NODE_START,
                   [test_v8.NODE_START.split("(")[0]] + START_FRAMES)

    def test_jvm_java_frames_and_the_native_ones_below_come_from_the_tail(self):
        rec = test_jvm.JvmRecording("hot", go=True, seconds=VM_SECONDS)
        self.check(rec, "[jit:jvm]", "Hot.hotLoop", "Hot.callerOfHot", "Hot.main",
                   ["start_thread", "__clone3"])


if __name__ == "__main__":
    harness.main()
