# SPDX-License-Identifier: Apache-2.0
# The .eh_frame unwinder against real BPF: a -fomit-frame-pointer chain across a shared
# library reaches main and libc's start frames; a frameless leaf's caller is kept (and lost
# with --unwind=fp); threads, read(), deep recursion, qsort, a signal handler, python3, a
# deleted binary, a process whose loader was still mapping its libraries when first sampled.
import os
import shutil
import subprocess
import tempfile
import time
import unittest

import harness
import pprof_py
from stacks import base_name, ordered, share, user_frames, weight
from test_record import Recorder

BUILD = os.path.abspath(os.environ.get("ROOTTRACE_BUILD", "build"))  # go build runs elsewhere
AGENT = os.path.join(BUILD, "roottrace-agent")
UNWIND = os.path.join(BUILD, "unwind")
FREQ = 199
START_FRAMES = ["__libc_start_call_main", "__libc_start_main", "_start"]
# How long a fixture spins (it is killed after its record): record's window starts once the
# program is verified, which took up to 10 s on a loaded 2-core machine, and a fixture that
# spun only a few seconds more than the window had exited by then (no samples)
LIFE = "60"


def require_root():
    if os.geteuid() != 0:
        raise unittest.SkipTest("needs root for BPF")
    if not os.path.exists(AGENT):
        raise AssertionError("%s not built" % AGENT)


def record(argv, seconds, unwind="auto", warmup=0.3, exe=None):
    """Runs argv, records only its pid for `seconds`, returns (profile, stderr)."""
    tmp = tempfile.mkdtemp(prefix="rt-unwind-")
    out = os.path.join(tmp, "p.pb.gz")
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    try:
        time.sleep(warmup)
        res = subprocess.run([AGENT, "record", "--pid", str(proc.pid), "--unwind", unwind,
                              "--duration", "%gs" % seconds, "--frequency", str(FREQ),
                              "--output", out], capture_output=True, text=True, timeout=120)
        if res.returncode != 0:
            raise AssertionError("record exited %d: %s" % (res.returncode, res.stderr))
        return pprof_py.parse_file(out), res.stderr
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def show(samples, n=5):
    return "\n".join(" <- ".join(s.stack) for s in samples[:n])


class ChainWithoutFramePointers(unittest.TestCase):
    def setUp(self):
        require_root()

    def test_leaf_samples_carry_the_chain_to_main_and_libc_start(self):
        prof, err = record([os.path.join(UNWIND, "chain-nofp"), LIFE], 5)
        leaf = [s for s in prof.samples if user_frames(s)[:1] == ["chain_leaf"]]
        self.assertGreater(weight(leaf), 200, err)
        want = ["chain_leaf", "chain_c", "chain_b", "chain_a", "main"] + START_FRAMES
        good = [s for s in leaf if [base_name(f) for f in user_frames(s)] == want]
        bad = [s for s in leaf if s not in good]
        self.assertGreaterEqual(share(good, leaf), 0.99, show(bad) + "\n" + err)
        self.assertIn("ended at a stop frame", err)


class FramelessLeaf(unittest.TestCase):
    """GCC -O2 -fno-omit-frame-pointer leaves chain_leaf frameless: a frame-pointer walk skips
    its caller chain_c; the table walk keeps it."""

    def setUp(self):
        require_root()

    def caller_share(self, unwind):
        prof, err = record([os.path.join(UNWIND, "chain-fp"), LIFE], 3, unwind=unwind)
        leaf = [s for s in prof.samples if user_frames(s)[:1] == ["chain_leaf"]]
        self.assertGreater(weight(leaf), 100, err)
        good = [s for s in leaf if user_frames(s)[1:3] == ["chain_c", "chain_b"]]
        return share(good, leaf), [s for s in leaf if s not in good]

    def test_auto_keeps_the_frameless_leafs_caller_and_fp_loses_it(self):
        auto, bad = self.caller_share("auto")
        fp, _ = self.caller_share("fp")
        self.assertGreaterEqual(auto, 0.99, show(bad))
        self.assertLess(fp, 0.5, "the frame-pointer walk was expected to skip chain_c")


class EdgeCases(unittest.TestCase):
    def setUp(self):
        require_root()

    def edge(self, mode, seconds=3):
        return record([os.path.join(UNWIND, "edge-nofp"), mode, LIFE], seconds)

    def test_thread_stacks_end_at_the_thread_start_frames(self):
        prof, err = self.edge("threads")
        work = [s for s in prof.samples if "worker_spin" in user_frames(s)]
        self.assertGreater(weight(work), 100, err)
        good = [s for s in work if ordered(user_frames(s), ["worker_spin", "worker_main",
                                                             "start_thread"])
                and base_name(user_frames(s)[-1]).endswith("clone3")]  # __GI___clone3 in .symtab
        self.assertGreaterEqual(share(good, work), 0.99, show([s for s in work if s not in good]))

    def test_samples_inside_read_keep_kernel_frames_and_the_user_stack(self):
        prof, err = self.edge("read")
        inside = [s for s in prof.samples if s.modules[:1] == ["[kernel]"]
                  and user_frames(s)]
        self.assertGreater(weight(inside), 100, err)
        good = [s for s in inside if ordered(user_frames(s), ["read_loop", "main"] +
                                             START_FRAMES)]
        self.assertGreaterEqual(share(good, inside), 0.99,
                                show([s for s in inside if s not in good]))

    def test_recursion_deeper_than_the_cap_ends_in_a_truncated_marker(self):
        prof, err = self.edge("recurse")
        deep = [s for s in prof.samples if "recurse_leaf" in user_frames(s)]
        self.assertGreater(weight(deep), 200, err)
        good = [s for s in deep if user_frames(s)[-1] == "[truncated]"
                and len(user_frames(s)) == 128]
        self.assertGreaterEqual(share(good, deep), 0.99, show([s for s in deep if s not in good]))
        self.assertRegex(err, r"[1-9]\d* truncated")

    def test_deep_native_stack_is_exact_frame_for_frame(self):
        # 100 recursions: every frame comes from a table row found through the table's bucket
        # index (edge-nofp's table and libc's both have one), so a wrong bucket shows as a
        # missing, doubled or wrong frame anywhere in the 107
        depth = 100
        prof, err = record([os.path.join(UNWIND, "edge-nofp"), "deep", "60", str(depth)], 3)
        leaf = [s for s in prof.samples if user_frames(s)[:2] in (["burn", "recurse_leaf"],
                                                                  ["recurse_leaf", "recurse"])]
        self.assertGreater(weight(leaf), 20, err)
        want = ["recurse_leaf"] + ["recurse"] * (depth + 1) + ["recurse_loop", "main"]

        def exact(frames):
            i = frames.index("recurse_leaf")
            return frames[i:i + len(want)] == want and \
                ordered(frames[i + len(want) - 1:], ["main"] + START_FRAMES)
        good = [s for s in leaf if exact(user_frames(s))]
        self.assertGreaterEqual(share(good, leaf), 0.99, show([s for s in leaf if s not in good]))

    def test_qsort_comparator_reaches_main_through_libc(self):
        prof, err = self.edge("qsort")
        cmp_ = [s for s in prof.samples if "slow_compare" in user_frames(s)]
        self.assertGreater(weight(cmp_), 200, err)
        good = []
        for s in cmp_:
            frames, mods = user_frames(s), [m for m in s.modules if m != "[kernel]"]
            i, j = frames.index("slow_compare"), frames.index("qsort_run") \
                if "qsort_run" in frames else -1
            if j > i + 1 and any("libc" in m for m in mods[i + 1:j]) and \
                    ordered(frames[j:], ["qsort_run", "main"] + START_FRAMES):
                good.append(s)
        self.assertGreaterEqual(share(good, cmp_), 0.99, show([s for s in cmp_ if s not in good]))

    def test_signal_handler_reaches_the_interrupted_function_and_main(self):
        prof, err = self.edge("signal")
        handler = [s for s in prof.samples if "on_sigprof" in user_frames(s)]
        self.assertGreater(weight(handler), 40, err)
        good = []
        for s in handler:
            frames, mods = user_frames(s), [m for m in s.modules if m != "[kernel]"]
            i = frames.index("on_sigprof")
            # on_sigprof <- the trampoline (libc's __restore_rt) <- interrupted <- ... main
            if i + 1 < len(frames) and "libc" in mods[i + 1] and \
                    ordered(frames[i + 2:], ["signal_victim", "main"] + START_FRAMES):
                good.append(s)
        self.assertGreaterEqual(share(good, handler), 0.99,
                                show([s for s in handler if s not in good]))


class RealBinaries(unittest.TestCase):
    def setUp(self):
        require_root()

    def test_python3_busy_loop_reaches_main(self):
        # Debian's interpreter (no frame pointers), not a pyenv build first on PATH. Its main
        # tail-calls Py_BytesMain, which therefore stands where main would. The eval loop's
        # frame is replaced by the Python frame it runs (agent/runtimes/python/).
        python = "/usr/bin/python3"
        if not os.path.exists(python):
            self.fail("Debian's python3 not installed")
        prof, err = record([python, "-c", "while True: pass"], 3, warmup=0.5)
        samples = [s for s in prof.samples if user_frames(s)]
        self.assertGreater(weight(samples), 100, err)
        good = [s for s in samples if ordered(user_frames(s), ["<string>.<module>",
                                                               "Py_RunMain", "Py_BytesMain"]
                                              + START_FRAMES)]
        self.assertGreaterEqual(share(good, samples), 0.99, show([s for s in samples
                                                                  if s not in good]))

    def go_nodwarf(self):
        go = shutil.which("go")
        if not go:
            self.fail("go (golang-go) not installed")
        src = os.path.join(os.environ.get("ROOTTRACE_SRC", os.getcwd()), "tests", "helpers",
                           "gocpuprofile")
        exe = os.path.join(BUILD, "unwind", "gocpuprofile-nodwarf")
        env = dict(os.environ, GOFLAGS="-mod=mod", GOPROXY="off", GOTOOLCHAIN="local",
                   GOCACHE=os.path.join(BUILD, "gocache"), CGO_ENABLED="0")
        subprocess.run([go, "build", "-ldflags=-w", "-o", exe, "."], cwd=src, env=env,
                       check=True, capture_output=True, timeout=300)
        return exe

    def record_go_half(self, warmup):
        """gocpuprofile runs sha256 for its first 4.5 s, fib for the next 4.5."""
        tmp = tempfile.mkdtemp(prefix="rt-unwind-go-")
        try:
            return record([self.go_nodwarf(), os.path.join(tmp, "cpu.pprof"), "9"], 3,
                          warmup=warmup)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_go_binary_without_cfi_unwinds_from_its_pcsp_tables(self):
        # -ldflags=-w: no DWARF, so no .debug_frame, and Go writes no .eh_frame: the rows come
        # from .gopclntab's pcsp tables (agent/unwind/go_rows.c), table steps through Go code.
        prof, err = self.record_go_half(4.8)
        work = [s for s in prof.samples if "main.fib" in user_frames(s)]
        self.assertGreater(weight(work), 100, err)
        good = [s for s in work if ordered(user_frames(s), ["main.fibLoop", "main.main",
                                                            "runtime.main"])
                and user_frames(s)[-1].startswith("runtime.goexit")]
        self.assertGreaterEqual(share(good, work), 0.99, show([s for s in work
                                                              if s not in good]))
        self.assertRegex(err, r"[1-9]\d* samples by tables")

    def test_go_assembly_using_rbp_unwinds_from_its_pcsp_tables(self):
        # crypto/sha256's assembly uses rbp as a general register: no frame-pointer walk (the
        # kernel's or ours) gets through it; its pcsp table does.
        prof, err = self.record_go_half(0.8)
        work = [s for s in prof.samples if user_frames(s)[:1] == ["crypto/sha256.block"]]
        self.assertGreater(weight(work), 20, err)  # about a third of the samples
        good = [s for s in work if ordered(user_frames(s), ["main.hashLoop", "main.main",
                                                            "runtime.main"])
                and user_frames(s)[-1].startswith("runtime.goexit")]
        self.assertGreaterEqual(share(good, work), 0.95, show([s for s in work
                                                              if s not in good]))

    def test_binary_deleted_while_mapped_still_unwinds(self):
        tmp = tempfile.mkdtemp(prefix="rt-unwind-del-")
        try:
            for name in ("chain-nofp", "libchain-nofp.so"):
                shutil.copy(os.path.join(UNWIND, name), tmp)
            exe = os.path.join(tmp, "chain-nofp")
            proc = subprocess.Popen([exe, LIFE])
            time.sleep(0.3)
            os.unlink(exe)
            os.unlink(os.path.join(tmp, "libchain-nofp.so"))
            out = os.path.join(tmp, "p.pb.gz")
            res = subprocess.run([AGENT, "record", "--pid", str(proc.pid), "--unwind", "auto",
                                  "--duration", "3s", "--frequency", str(FREQ), "--output",
                                  out], capture_output=True, text=True, timeout=60)
            proc.kill()
            proc.wait()
            self.assertEqual(res.returncode, 0, res.stderr)
            prof = pprof_py.parse_file(out)
            leaf = [s for s in prof.samples if "chain_leaf" in user_frames(s)]
            good = [s for s in leaf if ordered(user_frames(s), ["chain_leaf", "chain_c",
                                                                 "chain_b", "chain_a", "main"])]
            self.assertGreater(weight(leaf), 100, res.stderr)
            self.assertGreaterEqual(share(good, leaf), 0.99, show(leaf))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

class StartedWhileItsLoaderMaps(unittest.TestCase):
    """A process first sampled while its dynamic loader is still mapping its libraries has its
    maps read then, without libc: its stacks end there ("no_mapping") until they are read
    again. That must be within its first seconds, not at the next drain (5 s for record)."""

    def setUp(self):
        require_root()

    def test_stacks_are_whole_within_its_first_seconds(self):
        tmp = tempfile.mkdtemp(prefix="rt-unwind-early-")
        # Each library is searched in every LD_LIBRARY_PATH folder first (libchain's RUNPATH
        # comes after it): with thousands of empty ones (a missing one is skipped after its
        # first search) the loader runs for a few hundred ms before it maps libc, so the
        # process is first sampled and captured before that.
        empty = ["d/%d" % i for i in range(5000)]  # relative: the variable's 128 KiB hold them
        for d in empty:
            os.makedirs(os.path.join(tmp, d))
        env = dict(os.environ, LD_LIBRARY_PATH=":".join(empty))
        out = os.path.join(tmp, "p.pb.gz")
        # 4.5 s: under record's first drain (5 s), whose re-read of missed maps would hide it
        rec = Recorder(["--duration", "4500ms", "--frequency", str(FREQ)], out)
        try:
            rec.wait_started()
            # after the agent's first captures of the machine's processes: queued behind
            # them, this one's would come after its loader finished
            time.sleep(1.5)
            proc = subprocess.Popen([os.path.join(UNWIND, "chain-nofp"), LIFE], env=env,
                                    cwd=tmp)
            try:
                rec.proc.wait(120)
            finally:
                proc.kill()
                proc.wait()
            self.assertEqual(rec.stop(), 0, rec.stderr)
            prof = pprof_py.parse_file(out)
        finally:
            if rec.proc.poll() is None:
                rec.stop()
            shutil.rmtree(tmp, ignore_errors=True)
        leaf = [s for s in prof.samples
                if s.labels.get("pid") == proc.pid and user_frames(s)[:1] == ["chain_leaf"]]
        want = ["chain_leaf", "chain_c", "chain_b", "chain_a", "main"] + START_FRAMES
        whole = [s for s in leaf if [base_name(f) for f in user_frames(s)] == want]
        self.assertGreater(weight(leaf), 100, rec.stderr)
        # its first half second or so (the loader, then until its maps are read again) may
        # miss; on the old code every one of its samples did (share 0.0)
        self.assertGreaterEqual(share(whole, leaf), 0.6,
                                show([s for s in leaf if s not in whole]) + "\n" + rec.stderr)


if __name__ == "__main__":
    harness.main()
