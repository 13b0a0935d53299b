# SPDX-License-Identifier: Apache-2.0
# JIT frames under real BPF: node --perf-basic-prof runs one hot function from two release
# directories; it keeps one name across tiers and deploys, and its stacks reach node's start.
import os
import shutil
import subprocess
import tempfile
import unittest

import harness
import pprof_py
from stacks import ordered, show, weight

BUILD = os.environ.get("ROOTTRACE_BUILD", "build")
AGENT = os.path.join(BUILD, "roottrace-agent")
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "jit",
                      "hot.js")
NODE = "/usr/bin/node"
FUNCTION = "computeInvoiceTotals"
SPIN_SECONDS = 8
OPTIMISE_AT = 2  # seconds after start: the recording (from ~0.5 s to ~3.5 s) sees both tiers
RECORD = "3s"
# node's main() tail-calls node::Start, so node::Start stands where main would.
NODE_ROOT = ["node::Start(int, char**)", "__libc_start_call_main", "__libc_start_main"]


def release(tmp, name, blank_lines):
    """The script as deployed in tmp/name, moved down by blank_lines lines."""
    os.makedirs(os.path.join(tmp, name))
    path = os.path.join(tmp, name, "hot.js")
    with open(SCRIPT) as src, open(path, "w") as dst:
        dst.write("\n" * blank_lines + src.read())
    return path


class JitUnderBpf(unittest.TestCase):
    """One whole-machine recording of two releases of the same script, told apart by pid."""

    setup_error = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="rt-jit-")
        cls.procs, cls.scripts = {}, {}
        if os.geteuid() != 0 or not os.path.exists(NODE):
            return
        try:
            # Two deploys: release 42 has a blank line added at the top of the file.
            cls._spawn("41", release(cls.tmp, "releases/41", 0))
            cls._spawn("42", release(cls.tmp, "releases/42", 1))
            cls._record()
        except Exception as e:  # noqa: BLE001
            cls.setup_error = "%s: %s" % (type(e).__name__, e)

    @classmethod
    def tearDownClass(cls):
        for p in cls.procs.values():
            p.kill()
            p.wait()
            try:
                os.unlink("/tmp/perf-%d.map" % p.pid)
            except OSError:
                pass
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def _spawn(cls, key, script):
        # The script picks its tiers (natives syntax, V8's own tier-up held off by the budget);
        # --no-turbo-inlining: V8 would inline the function into its caller once optimised,
        # and the frame under test would be the caller's.
        p = subprocess.Popen([NODE, "--perf-basic-prof", "--allow-natives-syntax",
                              "--interrupt-budget=1000000000", "--no-turbo-inlining", script,
                              str(SPIN_SECONDS), str(OPTIMISE_AT)], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True,
                             cwd=cls.tmp)  # --perf-basic-prof also writes isolate-*-v8.log
        cls.procs[key], cls.scripts[key] = p, script
        if not p.stdout.readline().startswith("ready"):
            raise AssertionError("node did not start %s" % script)

    @classmethod
    def _record(cls):
        out = os.path.join(cls.tmp, "p.pb.gz")
        res = subprocess.run([AGENT, "record", "--duration", RECORD, "--frequency", "199",
                              "--output", out], capture_output=True, text=True, timeout=120)
        cls.stderr = res.stderr
        if res.returncode != 0:
            raise AssertionError("record exited %d: %s" % (res.returncode, res.stderr))
        cls.profile = pprof_py.parse_file(out)

    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root for BPF")
        if not os.path.exists(NODE):
            self.fail("%s not installed" % NODE)
        if self.setup_error:
            self.fail("setup failed: " + self.setup_error)

    def samples_of(self, key):
        pid = self.procs[key].pid
        return [s for s in self.profile.samples if s.labels.get("pid") == pid]

    def hot_samples(self, key):
        """Samples of the release's process with the hot function on the stack."""
        hot = [s for s in self.samples_of(key) if FUNCTION in s.stack]
        self.assertGreater(weight(hot), 40, "%s\n%s" % (show(self.samples_of(key)),
                                                        self.stderr))
        return hot

    def perf_map_tiers(self, key):
        """V8's tier markers for the function in the release's perf map."""
        tiers = set()
        with open("/tmp/perf-%d.map" % self.procs[key].pid) as f:
            for line in f:
                name = line.rstrip("\n").split(" ", 2)[2]
                if name.startswith("JS:") and name[4:].startswith(FUNCTION + " "):
                    tiers.add(name[3])
        return tiers

    def test_hot_function_has_one_bare_name_and_its_script_as_filename(self):
        hot = self.hot_samples("41")
        mentions = {f for s in self.samples_of("41") for f in s.stack if FUNCTION in f}
        self.assertEqual(mentions, {FUNCTION}, "no tier marker, position or path in the name")
        ids = {fid for s in hot for f, fid in zip(s.stack, s.function_ids) if f == FUNCTION}
        self.assertEqual({self.profile.function_files[i] for i in ids}, {self.scripts["41"]})
        modules = {m for s in hot for f, m in zip(s.stack, s.modules) if f == FUNCTION}
        self.assertEqual(modules, {"[jit:v8]"})

    def test_two_tiers_of_the_function_are_one_function(self):
        # The profile has no addresses, so which tier a sample hit is not in it: the script
        # runs the baseline tier ("^") until OPTIMISE_AT and the optimised one ("*") after,
        # the perf map shows both were compiled, and the recording spans the switch. (With
        # perf-map names kept as written, one recording here had 20-40 "^" and 270-350 "*"
        # samples of it.)
        self.hot_samples("41")
        self.assertTrue({"^", "*"} <= self.perf_map_tiers("41"), self.perf_map_tiers("41"))
        same = [i for i, name in self.profile.functions.items()
                if name == FUNCTION and self.profile.function_files[i] == self.scripts["41"]]
        self.assertEqual(len(same), 1, same)

    def test_jit_frames_continue_into_node_down_to_its_start(self):
        # Mixed mode: V8's frames are walked by frame pointers, node's own by its .eh_frame
        # tables. Until node's tables are loaded (~0.3 s into the recording: the binary is
        # 95 MB) the kernel's frame-pointer walk stands in; it also reaches node::Start but
        # stops at __libc_start_call_main, whose caller keeps no frame pointer. On this
        # machine every stack reaches node::Start and ~91% __libc_start_main.
        hot = self.hot_samples("41")
        to_start = [s for s in hot if ordered(s.stack, [FUNCTION, "tick"] + NODE_ROOT[:2])
                    and any(m == NODE for m in s.modules)]
        to_libc = [s for s in to_start if ordered(s.stack, NODE_ROOT)]
        self.assertGreaterEqual(weight(to_start) / weight(hot), 0.99,
                                show([s for s in hot if s not in to_start]) + "\n" + self.stderr)
        self.assertGreaterEqual(weight(to_libc) / weight(hot), 0.8,
                                show([s for s in hot if s not in to_libc]) + "\n" + self.stderr)

    def test_function_keeps_its_name_after_a_deploy(self):
        names = []
        for key in ("41", "42"):
            hot = self.hot_samples(key)
            leaf_jit = {f for s in hot for f, m in zip(s.stack, s.modules)
                        if m == "[jit:v8]" and f == FUNCTION}
            names.append(leaf_jit)
        self.assertEqual(names[0], names[1])
        files = {self.profile.function_files[i] for i, name in self.profile.functions.items()
                 if name == FUNCTION}
        self.assertEqual(files, {self.scripts["41"], self.scripts["42"]},
                         "one Function per release, told apart by filename only")


if __name__ == "__main__":
    harness.main()
