# SPDX-License-Identifier: Apache-2.0
# Go stacks unwound from .gopclntab's pcsp tables under real BPF: tests/helpers/goleaf, built
# stripped (-s -w: no symbols, no DWARF, no .eh_frame), spins in main.mixLeaf, a leaf Go gives
# no frame, called by main.ledgerPass. Walked by frame pointers (`--unwind fp`, what the agent
# did for every Go binary before), a sample in the leaf loses ledgerPass; walked by the pcsp
# rows (the default), ledgerPass is directly under the leaf and the stack reaches
# runtime.main and runtime.goexit; also in a cgo build, whose .eh_frame covers only its C code.
import os
import re
import subprocess
import tempfile
import shutil
import unittest
from collections import Counter

import harness
import pprof_py

BUILD = os.environ.get("ROOTTRACE_BUILD", os.path.abspath("build"))
SRC = os.environ.get("ROOTTRACE_SRC", os.getcwd())
AGENT = os.path.join(BUILD, "roottrace-agent")
GOLEAF = os.path.join(SRC, "tests", "helpers", "goleaf")
OUT = os.path.join(BUILD, "goleaf-bpf")
LEAF, CALLER = "main.mixLeaf", "main.ledgerPass"

# name -> (go build flags, CGO_ENABLED)
VARIANTS = {
    "unstripped": ([], "0"),
    "stripped": (["-ldflags=-s -w"], "0"),
    "pie": (["-buildmode=pie", "-ldflags=-s -w"], "0"),
    # linked externally: .eh_frame for the C code, none for the Go code
    "cgo": (["-ldflags=-s -w"], "1"),
}


def go_env(cgo="0"):
    return dict(os.environ, GOFLAGS="-mod=mod", GOPROXY="off", GOTOOLCHAIN="local",
                GOCACHE=os.path.join(BUILD, "gocache"), CGO_ENABLED=cgo)


def build_variant(name):
    flags, cgo = VARIANTS[name]
    exe = os.path.join(OUT, "goleaf-" + name)
    subprocess.run(["go", "build"] + flags + ["-o", exe, "."], cwd=GOLEAF,
                   env=go_env(cgo), check=True, capture_output=True, timeout=600)
    return exe


def section_names(exe):
    out = subprocess.run(["readelf", "-SW", exe], capture_output=True, text=True,
                         check=True).stdout
    return set(re.findall(r"\]\s+(\S+)", out))


def objdump(exe, func):
    """Instruction texts of func, from the toolchain's disassembler."""
    out = subprocess.run(["go", "tool", "objdump", "-s", "^%s$" % re.escape(func), exe],
                         env=go_env(), capture_output=True, text=True, check=True).stdout
    # "  main.go:12\t\t0x481320\t\t31c9\t\t\tXORL CX, CX\t\t\t"
    fields = ([f.strip() for f in line.split("\t") if f.strip()] for line in out.splitlines()[1:])
    return [f[3] for f in fields if len(f) >= 4]


def record(pid, out, unwind):
    r = subprocess.run([AGENT, "record", "--pid", str(pid), "--duration", "3s", "--frequency",
                        "99", "--unwind", unwind, "--output", out], capture_output=True,
                       text=True, timeout=180)
    if r.returncode != 0:
        raise AssertionError("record failed: " + r.stderr)
    return pprof_py.parse_file(out)


def run_and_record(exe, tmp, modes):
    """One process of exe, recorded once per unwind mode, in turn."""
    p = subprocess.Popen([exe, "20"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         stdin=subprocess.DEVNULL, text=True)
    try:
        line = p.stdout.readline()
        if not line.startswith("ready"):
            raise AssertionError("%s did not start: %r" % (exe, line))
        return {m: record(p.pid, os.path.join(tmp, "%s-%s.pb.gz" % (os.path.basename(exe), m)),
                          m) for m in modes}
    finally:
        p.kill()
        p.wait()
        p.stdout.close()


class GoLeafUnwoundFromPcsp(unittest.TestCase):
    setup_error = None
    profiles = {}

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="rt-goleaf-")
        if os.geteuid() != 0:
            return
        try:
            if not shutil.which("go"):
                raise AssertionError("go (golang-go) not installed")
            os.makedirs(OUT, exist_ok=True)
            cls.exes = {name: build_variant(name) for name in VARIANTS}
            cls.profiles["fp"] = run_and_record(cls.exes["stripped"], cls.tmp, ["fp"])["fp"]
            for name in ("stripped", "pie", "unstripped", "cgo"):
                cls.profiles[name] = run_and_record(cls.exes[name], cls.tmp, ["auto"])["auto"]
        except Exception as e:  # noqa: BLE001
            cls.setup_error = "%s: %s" % (type(e).__name__, e)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root for BPF")
        if self.setup_error:
            self.fail("setup failed: " + self.setup_error)

    def leaf_samples(self, name):
        samples = [s for s in self.profiles[name].samples if s.stack and s.stack[0] == LEAF]
        self.assertTrue(samples, self.show(name))
        return samples

    def show(self, name):
        c = Counter()
        for s in self.profiles[name].samples:
            c[tuple(s.stack[:6])] += s.values[0]
        return c.most_common(5)

    def share(self, samples, pred):
        total = sum(s.values[0] for s in samples)
        return sum(s.values[0] for s in samples if pred(s)) / total

    def test_the_leaf_is_frameless_and_the_binary_has_no_cfi(self):
        leaf = objdump(self.exes["unstripped"], LEAF)
        self.assertTrue(leaf)
        self.assertFalse([i for i in leaf if ", SP" in i or "BP" in i], leaf)
        self.assertTrue([i for i in objdump(self.exes["unstripped"], CALLER)
                         if i.startswith("MOVQ BP, ")])
        for name in ("stripped", "pie"):
            sections = section_names(self.exes[name])
            self.assertTrue([n for n in sections if n.endswith(".gopclntab")], sections)
            self.assertFalse(sections & {".symtab", ".eh_frame", ".debug_frame"}, sections)

    def test_frame_pointers_lose_the_leafs_caller(self):
        """The control: what the agent did before, and still does with --unwind fp."""
        samples = self.leaf_samples("fp")
        self.assertLess(self.share(samples, lambda s: s.stack[1:2] == [CALLER]), 0.1,
                        self.show("fp"))
        self.assertGreater(self.share(samples, lambda s: s.stack[1:2] == ["main.main"]), 0.9,
                           self.show("fp"))

    def assert_caller_under_leaf(self, name):
        samples = self.leaf_samples(name)
        self.assertGreaterEqual(
            self.share(samples, lambda s: s.stack[1:3] == [CALLER, "main.main"]), 0.9,
            self.show(name))
        self.assertGreaterEqual(
            self.share(samples, lambda s: "runtime.main" in s.stack and
                       s.stack[-1] == "runtime.goexit"), 0.9, self.show(name))

    def test_stripped_leaf_has_its_caller_under_it(self):
        self.assert_caller_under_leaf("stripped")

    def test_stripped_pie_leaf_has_its_caller_under_it(self):
        self.assert_caller_under_leaf("pie")

    def test_unstripped_leaf_has_its_caller_under_it(self):
        self.assert_caller_under_leaf("unstripped")

    def test_cgo_leaf_has_its_caller_under_it(self):
        """The C code's rows from its .eh_frame, the Go code's from pcsp, in one table."""
        self.assertIn(".eh_frame", section_names(self.exes["cgo"]))
        self.assert_caller_under_leaf("cgo")


if __name__ == "__main__":
    harness.main()
