# SPDX-License-Identifier: Apache-2.0
# The unwinder on bad input under real BPF: a binary with a garbage .eh_frame is counted and
# walked with frame pointers while the rest of the machine is unwound; a 200 MB binary is
# recorded and named within the agent's memory budget.
import os
import random
import re
import shutil
import struct
import subprocess
import tempfile
import unittest

import harness
import pprof_py
from stacks import base_name, show, weight
from stacks import user_frames as named_user_frames

BUILD = os.environ.get("ROOTTRACE_BUILD", "build")
AGENT = os.path.join(BUILD, "roottrace-agent")
UNWIND = os.path.join(BUILD, "unwind")
START_FRAMES = ["__libc_start_call_main", "__libc_start_main", "_start"]
CHAIN = ["chain_leaf", "chain_c", "chain_b", "chain_a", "main"] + START_FRAMES
MAX_RSS_KB = 40 * 1024


def user_frames(sample):
    return [base_name(f) for f in named_user_frames(sample)]


def section(path, name):
    """(file offset, size) of an ELF64 section, from the section headers."""
    with open(path, "rb") as f:
        data = f.read(1 << 20)
        f.seek(struct.unpack_from("<Q", data, 0x28)[0])
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        headers = [struct.unpack_from("<IIQQQQ", f.read(shentsize)) for _ in range(shnum)]
        f.seek(headers[shstrndx][4])
        names = f.read(headers[shstrndx][5])
    for name_off, _, _, _, offset, size in headers:
        if names[name_off:names.index(b"\0", name_off)].decode() == name:
            return offset, size
    raise KeyError("%s has no %s" % (path, name))


def corrupt_eh_frame(src, dst):
    """A copy of src whose .eh_frame is random bytes (the same ones every run)."""
    shutil.copy(src, dst)
    offset, size = section(dst, ".eh_frame")
    garbage = random.Random(7)
    with open(dst, "r+b") as f:
        f.seek(offset)
        f.write(bytes(garbage.randrange(256) for _ in range(size)))


def padded_to_200mb(src, dst, tmp):
    """A copy of src with a 200 MB section nothing maps: the file is big, the process not."""
    pad = os.path.join(tmp, "pad.bin")
    with open(pad, "wb") as f:
        f.truncate(200 << 20)
    subprocess.run(["objcopy", "--add-section", ".pad=" + pad, "--set-section-flags",
                    ".pad=noload,readonly", src, dst], check=True)
    os.unlink(pad)


def record_machine(out, seconds="3s"):
    """Whole-machine record: (exit code, stderr, peak RSS of record in KiB)."""
    proc = subprocess.Popen([AGENT, "record", "--duration", seconds, "--frequency", "199",
                             "--output", out], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, err, usage.ru_maxrss


class BadBinariesUnderBpf(unittest.TestCase):
    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root for BPF")
        self.tmp = tempfile.mkdtemp(prefix="rt-badinput-")
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            p.kill()
            p.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def spawn(self, argv):
        self.procs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL))
        return self.procs[-1]

    def test_corrupt_eh_frame_is_counted_and_others_still_unwind(self):
        corrupt = os.path.join(self.tmp, "edge-corrupt")
        corrupt_eh_frame(os.path.join(UNWIND, "edge-nofp"), corrupt)
        bad = self.spawn([corrupt, "deep", "10", "40"])
        good = self.spawn([os.path.join(UNWIND, "chain-nofp"), "10"])
        out = os.path.join(self.tmp, "p.pb.gz")
        code, err, _ = record_machine(out, "5s")
        self.assertEqual(code, 0, err)
        # Its table cannot be built: counted, and its stacks fall back to frame pointers.
        self.assertRegex(err, r"failed to build \(corrupt [1-9]", err)
        prof = pprof_py.parse_file(out)
        self.assertGreater(weight([s for s in prof.samples if s.labels.get("pid") == bad.pid]),
                           0, "the corrupt binary was not sampled\n" + err)
        leaf = [s for s in prof.samples if s.labels.get("pid") == good.pid
                and user_frames(s)[:1] == ["chain_leaf"]]
        self.assertGreater(weight(leaf), 30, err)
        whole = [s for s in leaf if user_frames(s) == CHAIN]
        # Until chain-nofp's tables are loaded (up to ~1 s on a busy machine) the kernel walks
        # it with frame pointers, which this build has not: the leaf alone. Any other stack
        # would be a table walk gone wrong.
        broken = [s for s in leaf if s not in whole and user_frames(s) != ["chain_leaf"]]
        self.assertEqual(broken, [], show(broken) + "\n" + err)
        self.assertGreaterEqual(weight(whole) / weight(leaf), 0.75,
                                show([s for s in leaf if s not in whole]) + "\n" + err)

    def test_200mb_binary_is_named_within_the_memory_budget(self):
        # The agent maps binaries (libelf's mmap reads) and compiles only .eh_frame (600 bytes
        # here), so the 200 MB of padding costs it page cache, not heap: record's peak RSS on
        # this machine is ~22 MB (a copy of the file in memory would be over 200 MB), and all
        # of the machine's tables build in well under a second.
        if not shutil.which("objcopy"):
            self.fail("objcopy (binutils) not installed")
        big = os.path.join(self.tmp, "edge-big")
        padded_to_200mb(os.path.join(UNWIND, "edge-nofp"), big, self.tmp)
        self.assertGreaterEqual(os.path.getsize(big), 200 << 20)
        proc = self.spawn([big, "deep", "10", "40"])
        out = os.path.join(self.tmp, "p.pb.gz")
        code, err, peak_kb = record_machine(out, "5s")
        self.assertEqual(code, 0, err)
        prof = pprof_py.parse_file(out)
        mine = [s for s in prof.samples if s.labels.get("pid") == proc.pid]
        named = [s for s in mine if "recurse_leaf" in user_frames(s)
                 and user_frames(s)[-len(START_FRAMES) - 1:] == ["main"] + START_FRAMES]
        self.assertGreater(weight(mine), 100, err)
        # The rest: sampled before its table was loaded (see the test above).
        self.assertGreaterEqual(weight(named) / weight(mine), 0.75,
                                show([s for s in mine if s not in named]) + "\n" + err)
        self.assertLess(peak_kb, MAX_RSS_KB, "record's peak RSS %d KiB\n%s" % (peak_kb, err))
        built = [float(ms) for ms in
                 re.findall(r"unwind tables: \d+ built in ([\d.]+) ms", err)]
        self.assertTrue(built and built[0] < 10000, err)  # all tables of the machine: bounded


if __name__ == "__main__":
    harness.main()
