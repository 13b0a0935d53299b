# SPDX-License-Identifier: Apache-2.0
# Stripped Go named from .gopclntab under real BPF: tests/helpers/gohot built here stripped
# (-s -w), PIE, -trimpath, with cgo, unstripped, and with its section headers removed; each
# process recorded with `record --pid`. Also the toolchain's own (stripped) compile binary, and
# tests/helpers/gowrap: Go's wrappers left out of the agent's stacks as its own runtime/pprof does.
import os
import shutil
import struct
import subprocess
import tempfile
import time
import unittest
from collections import Counter

import harness
import pprof_py

BUILD = os.environ.get("ROOTTRACE_BUILD", os.path.abspath("build"))
SRC = os.environ.get("ROOTTRACE_SRC", os.getcwd())
AGENT = os.path.join(BUILD, "roottrace-agent")
GOHOT = os.path.join(SRC, "tests", "helpers", "gohot")
OUT = os.path.join(BUILD, "gosyms")
SPIN_SECONDS = "6"
RECORD = "3s"

# name -> (go build flags, CGO_ENABLED)
VARIANTS = {
    "stripped": (["-ldflags=-s -w"], "0"),
    "pie": (["-buildmode=pie", "-ldflags=-s -w"], "0"),
    "trimpath": (["-trimpath", "-ldflags=-s -w"], "0"),
    "cgo": (["-ldflags=-s -w"], "1"),
    # external linking merges .data.rel.ro.gopclntab away: found by its header's signature
    "cgo-pie": (["-buildmode=pie", "-ldflags=-s -w"], "1"),
    "unstripped": ([], "0"),
}


def go_env():
    return dict(os.environ, GOFLAGS="-mod=mod", GOPROXY="off", GOTOOLCHAIN="local",
                GOCACHE=os.path.join(BUILD, "gocache"))


def build_variant(name):
    flags, cgo = VARIANTS[name]
    exe = os.path.join(OUT, "gohot-" + name)
    env = dict(go_env(), CGO_ENABLED=cgo)
    subprocess.run(["go", "build"] + flags + ["-o", exe, "."], cwd=GOHOT, env=env, check=True,
                   capture_output=True, timeout=600)
    return exe


def remove_section_headers(path):
    """e_shoff, e_shnum, e_shstrndx = 0: the program runs, no section can be found by name."""
    with open(path, "r+b") as f:
        f.seek(0x28)
        f.write(struct.pack("<Q", 0))
        f.seek(0x3C)
        f.write(struct.pack("<HH", 0, 0))


def record_pid(pid, out, duration=RECORD):
    r = subprocess.run([AGENT, "record", "--pid", str(pid), "--duration", duration,
                        "--frequency", "99", "--output", out], capture_output=True, text=True,
                       timeout=180)
    return r


def peak_rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_and_record(exe, tmp, args=(SPIN_SECONDS,)):
    p = subprocess.Popen([exe] + list(args), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         stdin=subprocess.DEVNULL, text=True)
    try:
        line = p.stdout.readline()
        if not line.startswith("ready"):
            raise AssertionError("%s did not start: %r" % (exe, line))
        out = os.path.join(tmp, os.path.basename(exe) + ".pb.gz")
        r = record_pid(p.pid, out)
        if r.returncode != 0:
            raise AssertionError("record failed: " + r.stderr)
        return pprof_py.parse_file(out), r.stderr
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()
        p.stdout.close()


class StrippedGoUnderBpf(unittest.TestCase):
    setup_error = None
    profiles = {}

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="rt-gosyms-")
        if os.geteuid() != 0:
            return
        try:
            if not shutil.which("go"):
                raise AssertionError("go (golang-go) not installed")
            os.makedirs(OUT, exist_ok=True)
            exes = {name: build_variant(name) for name in VARIANTS}
            headerless = os.path.join(OUT, "gohot-headerless")
            shutil.copy(exes["stripped"], headerless)
            remove_section_headers(headerless)
            exes["headerless"] = headerless
            cls.exes = exes
            for name, exe in exes.items():
                cls.profiles[name] = run_and_record(exe, cls.tmp)
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

    def samples(self, name):
        prof, err = self.profiles[name]
        self.assertTrue(prof.samples, err)
        return prof.samples

    def binary_frames(self, name, s):
        exe = self.exes[name]
        return [(f, m) for f, m in zip(s.stack, s.modules) if m == exe]

    def assert_named(self, name):
        samples = self.samples(name)
        mine = [s for s in samples if self.binary_frames(name, s)]
        total = sum(s.values[0] for s in mine)
        named = sum(s.values[0] for s in mine
                    if all(f != "[unknown]" for f, _ in self.binary_frames(name, s)))
        self.assertGreater(total, 0)
        self.assertGreaterEqual(named / total, 0.99, self.show(name))
        # The hot function, with its caller above it (inlined leaf frames below it).
        hot = [s for s in samples if "main.settleInvoices" in s.stack]
        self.assertGreaterEqual(sum(s.values[0] for s in hot) / total, 0.9, self.show(name))
        good = [s for s in hot
                if s.stack[s.stack.index("main.settleInvoices") + 1] == "main.billingRun"]
        self.assertGreaterEqual(sum(s.values[0] for s in good) / sum(s.values[0] for s in hot),
                                0.99, self.show(name))

    def show(self, name):
        c = Counter()
        for s in self.samples(name):
            c[tuple(s.stack[:5])] += s.values[0]
        return c.most_common(6)

    def test_stripped_go_named_from_gopclntab(self):
        self.assert_named("stripped")

    def test_stripped_pie_go_named(self):
        self.assert_named("pie")

    def test_trimpath_go_named(self):
        self.assert_named("trimpath")

    def test_cgo_go_named(self):
        self.assert_named("cgo")

    def test_cgo_pie_go_named_without_its_table_section(self):
        self.assert_named("cgo-pie")

    def test_go_without_section_headers_named_through_signature_scan(self):
        self.assert_named("headerless")

    def test_inlined_leaf_is_its_own_frame_under_its_caller(self):
        for name in ("stripped", "pie", "cgo", "cgo-pie", "headerless"):
            leaf = Counter()
            for s in self.samples(name):
                if s.stack[:2] == ["main.applyRate", "main.settleInvoices"]:
                    leaf["inlined"] += s.values[0]
                leaf["all"] += s.values[0]
            # applyRate is most of the loop's work: a good share of the samples stop in it.
            self.assertGreater(leaf["inlined"] / leaf["all"], 0.2, (name, self.show(name)))

    def test_names_as_runtime_pprof_writes_them(self):
        names = {f for s in self.samples("stripped") for f in s.stack}
        self.assertIn("runtime.main", names)
        self.assertIn("main.billingRun", names)
        self.assertFalse([n for n in names if n.endswith(".abi0")], names)

    def test_stripped_and_unstripped_give_the_same_stacks(self):
        def stacks(name):
            """The binary's frames of the stacks that hold 10% or more of the hot samples."""
            c = Counter()
            for s in self.samples(name):
                if "main.settleInvoices" in s.stack:
                    c[tuple(f for f, m in zip(s.stack, s.modules) if m == self.exes[name])] += 1
            total = sum(c.values())
            return {k for k, n in c.items() if n >= 0.1 * total}

        self.assertEqual(stacks("stripped"), stacks("unstripped"))
        self.assertTrue(stacks("stripped"))


GOWRAP = os.path.join(SRC, "tests", "helpers", "gowrap")
PANIC_FUNCS = {"runtime.gopanic", "runtime.sigpanic", "runtime.panicwrap"}


def go_wrappers(path):
    """Names of the functions whose funcID is funcID_wrapper in a 1.18/1.20 .gopclntab, read
    here independently of the agent (the ID is runtime.systemstack_switch's plus one)."""
    with open(path, "rb") as f:
        data = f.read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shnum, shstrndx = struct.unpack_from("<HH", data, 0x3C)
    sh = [struct.unpack_from("<IIQQQQ", data, shoff + 64 * i) for i in range(shnum)]
    strtab = sh[shstrndx][4]
    tab = None
    for name, _, _, _, off, size in sh:
        if data[strtab + name:data.index(b"\0", strtab + name)] == b".gopclntab":
            tab = data[off:off + size]
    magic, = struct.unpack_from("<I", tab, 0)
    fid_at = {0xfffffff0: 36, 0xfffffff1: 40}[magic]
    nfunc, = struct.unpack_from("<Q", tab, 8)
    names, = struct.unpack_from("<Q", tab, 32)
    pcln, = struct.unpack_from("<Q", tab, 64)
    funcs = []
    for i in range(nfunc):
        rec = pcln + struct.unpack_from("<I", tab, pcln + 8 * i + 4)[0]
        nameoff, = struct.unpack_from("<i", tab, rec + 4)
        start = names + nameoff
        funcs.append((tab[start:tab.index(b"\0", start)].decode(), tab[rec + fid_at]))
    wrapper = dict(funcs)["runtime.systemstack_switch"] + 1
    # an ABI wrapper has the name of the function it wraps (runtime.mstart0 twice): a name
    # is a wrapper's only when no other function has it
    unwrapped = {n for n, fid in funcs if fid != wrapper}
    return {n for n, fid in funcs if fid == wrapper and n not in unwrapped}


class GoWrappersElidedAsRuntimePprof(unittest.TestCase):
    """tests/helpers/gowrap (stripped) calls through a method value (counter.Count-fm) and an
    interface holding a pointer ((*valueSpinner).Spin): its own runtime/pprof CPU profile
    leaves those wrappers out, and so must the agent's profile of the same process."""

    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root for BPF")

    def test_agent_stacks_leave_out_the_wrappers_runtime_pprof_leaves_out(self):
        os.makedirs(OUT, exist_ok=True)
        exe = os.path.join(OUT, "gowrap-stripped")
        subprocess.run(["go", "build", "-ldflags=-s -w", "-o", exe, "."], cwd=GOWRAP,
                       env=dict(go_env(), CGO_ENABLED="0"), check=True, capture_output=True,
                       timeout=600)
        # The wrappers are in the stripped binary's table and really called: without
        # elision the agent's stacks would hold them between the method and its caller.
        wrappers = go_wrappers(exe)
        self.assertIn("main.counter.Count-fm", wrappers)
        self.assertIn("main.(*valueSpinner).Spin", wrappers)
        self.assertNotIn("main.valueSpinner.Spin", wrappers)
        tmp = tempfile.mkdtemp(prefix="rt-gowrap-")
        try:
            own = os.path.join(tmp, "own.pb.gz")
            p = subprocess.Popen([exe, own, "8"], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True)
            try:
                self.assertTrue(p.stdout.readline().startswith("ready"))
                agent_out = os.path.join(tmp, "agent.pb.gz")
                r = record_pid(p.pid, agent_out, "5s")
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(p.wait(timeout=120), 0)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
                p.stdout.close()
            agent = pprof_py.parse_file(agent_out).samples
            gosdk = pprof_py.parse_file(own).samples
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

        def callers(samples, fn):
            return Counter(s.stack[s.stack.index(fn) + 1] for s in samples
                           if fn in s.stack[:-1])

        def kept_wrappers(samples):
            """Wrapper frames runtime/pprof would elide (not called into a panic)."""
            return Counter(f for s in samples for i, f in enumerate(s.stack)
                           if f in wrappers and (i == 0 or s.stack[i - 1] not in PANIC_FUNCS))

        self.assertEqual(kept_wrappers(gosdk), Counter())  # what the SDK writes
        self.assertEqual(kept_wrappers(agent), Counter())
        for fn, caller in (("main.counter.Count", "main.viaMethodValue"),
                           ("main.valueSpinner.Spin", "main.viaInterface")):
            mine = callers(agent, fn)
            self.assertTrue(mine, (fn, Counter(tuple(s.stack[:4]) for s in agent)))
            self.assertEqual(set(mine), {caller}, fn)
            self.assertLessEqual(set(callers(gosdk, fn)), {caller}, fn)


class BigStrippedGoUnderBpf(unittest.TestCase):
    """The toolchain's compile (Debian ships it stripped): named, and what it costs."""

    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root for BPF")

    def test_big_stripped_go_binary_named_with_bounded_agent_memory(self):
        gotool = subprocess.run(["go", "env", "GOTOOLDIR"], env=go_env(), capture_output=True,
                                text=True, check=True).stdout.strip()
        tmp = tempfile.mkdtemp(prefix="rt-gobig-")
        try:
            compile_exe = os.path.join(tmp, "compile")
            shutil.copy(os.path.join(gotool, "compile"), compile_exe)
            subprocess.run(["strip", "--strip-all", compile_exe], check=True)
            # A self-contained package big enough to keep compile busy for seconds.
            src = os.path.join(tmp, "big.go")
            with open(src, "w") as f:
                f.write("package big\n")
                for i in range(20000):
                    f.write("func F%d(x int) int { if x > %d { return x * %d } ; return F%d(x+1) }\n"
                            % (i, i, i + 1, (i + 1) % 20000))
            p = subprocess.Popen([compile_exe, "-p", "big", "-o", os.path.join(tmp, "big.a"),
                                  src], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.3)
            out = os.path.join(tmp, "big.pb.gz")
            started = time.monotonic()
            agent = subprocess.Popen([AGENT, "record", "--pid", str(p.pid), "--duration", "2s",
                                      "--frequency", "99", "--output", out],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            rss_kib = 0
            while agent.poll() is None:  # the agent's peak, read while it still runs
                rss_kib = max(rss_kib, peak_rss_kib(agent.pid))
                time.sleep(0.05)
            err = agent.stderr.read()
            agent.stderr.close()
            elapsed = time.monotonic() - started
            p.kill()
            p.wait()
            self.assertEqual(agent.returncode, 0, err)
            prof = pprof_py.parse_file(out)
            mine = [s for s in prof.samples if compile_exe in s.modules]
            self.assertGreater(len(mine), 10, err)
            frames = [(f, m) for s in mine for f, m in zip(s.stack, s.modules)
                      if m == compile_exe]
            named = [f for f, _ in frames if f != "[unknown]"]
            self.assertGreaterEqual(len(named) / len(frames), 0.99, Counter(frames).most_common(5))
            self.assertTrue(any(f.startswith("cmd/compile/") for f in named), named[:10])
            print("  big stripped Go (compile): %d samples, %.0f%% frames named, record %.1fs, "
                  "agent peak RSS %d KiB" % (len(mine), 100 * len(named) / len(frames), elapsed,
                                             rss_kib))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    harness.main()
