# SPDX-License-Identifier: Apache-2.0
# Symbolisation under real BPF: one whole-machine `record` while fixtures run a hot function
# in a shared library, in a stripped binary (.dynsym only), in C++, in JIT code announced in
# /tmp/perf-PID.map, in a deleted binary and in a damaged one ([unknown] with its module).
import os
import shutil
import struct
import subprocess
import tempfile
import unittest
from collections import Counter

import harness
import pprof_py

BUILD = os.environ.get("ROOTTRACE_BUILD", os.path.abspath("build"))
AGENT = os.path.join(BUILD, "roottrace-agent")
FIXTURES = os.path.join(BUILD, "fixtures")
SPIN_SECONDS = 8
RECORD = "3s"


def fixture(name):
    return os.path.join(FIXTURES, name)


def damage_section_headers(path):
    """Points e_shoff past the end: the kernel still runs it, no symbol can be read."""
    with open(path, "r+b") as f:
        f.seek(0x28)
        f.write(struct.pack("<Q", 0x7FFFFFF0))


class SymbolsUnderBpf(unittest.TestCase):
    """One recording shared by every case; each workload is told apart by its pid label."""

    setup_error = None
    profile = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="rt-symbols-")
        cls.procs = {}
        cls.jit_map = None
        if os.geteuid() != 0:
            return
        # Failures are reported by each case (the harness prints one line per case).
        try:
            cls._start_workloads()
            cls._record()
        except Exception as e:  # noqa: BLE001
            cls.setup_error = "%s: %s" % (type(e).__name__, e)

    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root for BPF")
        if self.setup_error:
            self.fail("setup failed: " + self.setup_error)

    @classmethod
    def _spawn(cls, key, argv):
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             stdin=subprocess.DEVNULL, text=True)
        cls.procs[key] = p
        line = p.stdout.readline()
        if not line.startswith("ready"):
            raise AssertionError("%s did not start: %r" % (argv[0], line))
        return p

    @classmethod
    def _start_workloads(cls):
        spin = ["spin", str(SPIN_SECONDS)]
        cls._spawn("lib", [fixture("fixture-uses-lib")] + spin)
        cls._spawn("stripped", [fixture("fixture-stripped")] + spin)
        cls._spawn("cpp", [fixture("fixture-cpp")] + spin)
        jit = cls._spawn("jit", [fixture("fixture-jit"), str(SPIN_SECONDS), "/tmp"])
        cls.jit_map = "/tmp/perf-%d.map" % jit.pid
        cls.deleted_path = os.path.join(cls.tmp, "deleted-app")
        shutil.copy(fixture("fixture-nopie"), cls.deleted_path)
        cls._spawn("deleted", [cls.deleted_path] + spin)
        os.unlink(cls.deleted_path)
        cls.damaged_path = os.path.join(cls.tmp, "damaged-app")
        shutil.copy(fixture("fixture-pie"), cls.damaged_path)
        damage_section_headers(cls.damaged_path)
        cls._spawn("damaged", [cls.damaged_path] + spin)

    @classmethod
    def _record(cls):
        out = os.path.join(cls.tmp, "profile.pb.gz")
        r = subprocess.run([AGENT, "record", "--duration", RECORD, "--frequency", "99",
                            "--output", out], capture_output=True, text=True, timeout=120)
        cls.record_rc, cls.record_stderr = r.returncode, r.stderr
        cls.profile = pprof_py.parse_file(out) if os.path.exists(out) else None

    @classmethod
    def tearDownClass(cls):
        for p in cls.procs.values():
            if p.poll() is None:
                p.kill()
            p.wait()
            p.stdout.close()
        if cls.jit_map and os.path.exists(cls.jit_map):
            os.unlink(cls.jit_map)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def samples_of(self, key):
        pid = self.procs[key].pid
        self.assertIsNotNone(self.profile, "no profile written:\n" + self.record_stderr)
        found = [s for s in self.profile.samples if s.labels.get("pid") == pid]
        self.assertTrue(found, "no samples for %s (pid %d)" % (key, pid))
        return found

    def leaf_counts(self, key):
        """(leaf function, leaf module) -> samples, for one workload."""
        counts = Counter()
        for s in self.samples_of(key):
            counts[(s.stack[0], s.modules[0])] += s.values[0]
        return counts

    def assert_mostly(self, key, function, module_suffix):
        counts = self.leaf_counts(key)
        total = sum(counts.values())
        hits = sum(n for (f, m), n in counts.items()
                   if f == function and m.endswith(module_suffix))
        self.assertGreaterEqual(hits / total, 0.8, "%s leaves: %s" % (key, counts.most_common(5)))

    def test_recording_succeeds_despite_unreadable_binary(self):
        self.assertEqual(self.record_rc, 0, self.record_stderr)
        self.assertRegex(self.record_stderr, r"unknown frames: [1-9]")

    def test_shared_library_function_named_with_caller(self):
        self.assert_mostly("lib", "fixture_lib_spin", "/libfixture.so")
        stacks = Counter(tuple(s.stack[:2]) for s in self.samples_of("lib"))
        self.assertIn(("fixture_lib_spin", "main"), stacks, stacks.most_common(3))

    def test_stripped_binary_named_from_dynsym(self):
        self.assert_mostly("stripped", "fixture_alpha", "/fixture-stripped")

    def test_cpp_function_demangled(self):
        self.assert_mostly("cpp", "fixture::Widget::churn(long)", "/fixture-cpp")

    def test_jit_frame_named_from_perf_map(self):
        self.assert_mostly("jit", "jit_spin_loop", "[jit]")

    def test_deleted_binary_still_named_with_its_path(self):
        # As root the agent reads a deleted file through /proc/PID/map_files while it lives.
        self.assert_mostly("deleted", "fixture_alpha", self.deleted_path)

    def test_damaged_binary_frames_unknown_with_module(self):
        counts = self.leaf_counts("damaged")
        total = sum(counts.values())
        unknown = counts[("[unknown]", self.damaged_path)]
        self.assertGreaterEqual(unknown / total, 0.8, counts.most_common(5))
        named = [f for (f, m) in counts if m == self.damaged_path and f != "[unknown]"]
        self.assertEqual(named, [], "a damaged binary's frames were guessed")


if __name__ == "__main__":
    harness.main()
