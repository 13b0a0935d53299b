#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Issue 32, "which line", end to end with real BPF: the agent records a C program built with -g
# and stripped of its debug info (tests/fixtures/lines, mk/lines.mk); its pprof carries the leaf's
# build-id and file offset, which eu-addr2line on the debug file and the collector's resolver
# (build/bench/lines-resolve) turn into the hot loop's line, from a debug directory and from a
# real debuginfod on loopback; with no debug file the answer says so, never guessed.
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request
from collections import Counter

import harness
import pprof_py

BUILD = os.environ.get("ROOTTRACE_BUILD", os.path.abspath("build"))
SRC = os.environ.get("ROOTTRACE_SRC", os.getcwd())
AGENT = os.path.join(BUILD, "roottrace-agent")
RESOLVE = os.path.join(BUILD, "bench", "lines-resolve")
FIXTURES = os.path.join(BUILD, "fixtures", "lines")
SOURCE = os.path.join(SRC, "tests", "fixtures", "lines", "lines_hot.c")
HOT = "lines_hot_loop"


def run(argv, **kw):
    return subprocess.run(argv, check=True, capture_output=True, timeout=120, text=True, **kw)


def build_id_of(path):
    return re.search(r"Build ID: ([0-9a-f]+)", run(["eu-readelf", "-n", path]).stdout).group(1)


def source_lines():
    """The function's first line and the loop body's (the hot line)."""
    with open(SOURCE) as f:
        text = f.read().splitlines()
    fn = next(i + 1 for i, l in enumerate(text) if "void %s(" % HOT in l)
    hot = next(i + 1 for i, l in enumerate(text) if "/* the hot line */" in l)
    return fn, hot


def loads(path):
    """PT_LOAD segments (offset, vaddr, filesz) of an ELF, from readelf."""
    out = run(["readelf", "-lW", path]).stdout
    return [(int(m[0], 16), int(m[1], 16), int(m[2], 16))
            for m in re.findall(r"LOAD\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+0x[0-9a-f]+\s+"
                                r"(0x[0-9a-f]+)", out)]


def offset_to_vaddr(segments, offset):
    for off, vaddr, size in segments:
        if off <= offset < off + size:
            return offset - off + vaddr
    raise AssertionError("offset 0x%x in no segment" % offset)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def line_of(answer):
    """"FILE:LINE" -> (FILE, LINE)."""
    path, _, line = answer.rpartition(":")
    return path, int(line)


class LinesFromTheAgent(unittest.TestCase):
    """One recording of the stripped program; its leaf offsets resolved three ways."""

    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root for BPF")
        cls.tmp = tempfile.mkdtemp(prefix="rt-lines-")
        cls.exe = os.path.join(cls.tmp, "lines-hot")
        shutil.copy(os.path.join(FIXTURES, "lines-hot.stripped"), cls.exe)
        cls.build_id = build_id_of(cls.exe)
        cls.fn_line, cls.hot_line = source_lines()
        proc = subprocess.Popen([cls.exe, "20"], stdin=subprocess.DEVNULL)
        try:
            out = os.path.join(cls.tmp, "p.pb.gz")
            r = subprocess.run([AGENT, "record", "--duration", "4s", "--pid", str(proc.pid),
                                "--output", out], capture_output=True, text=True, timeout=120)
            if r.returncode:
                raise AssertionError("record failed: " + r.stderr)
            cls.profile = pprof_py.parse_file(out)
        finally:
            proc.kill()
            proc.wait()
        # samples per leaf file offset of the hot function
        cls.offsets = Counter()
        for s in cls.profile.samples:
            if s.stack and s.stack[0] == HOT:
                cls.offsets[(s.build_ids[0], s.addresses[0])] += s.values[0]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def resolve(self, *args, env=None):
        """Samples per line, from lines-resolve over the recorded offsets."""
        offsets = [off for (_, off) in self.offsets]
        r = run([RESOLVE] + list(args) + [self.build_id],
                input="".join("0x%x\n" % o for o in offsets), env=env)
        per_line, answers = Counter(), {}
        for text in r.stdout.splitlines():
            off, answer = text.split(" ", 1)
            answers[int(off, 16)] = answer
        for (_, off), n in self.offsets.items():
            if answers[off].startswith("error"):
                per_line[answers[off]] += n
            else:
                path, line = line_of(answers[off])
                self.assertTrue(path.endswith("tests/fixtures/lines/lines_hot.c"), path)
                per_line[line] += n
        return per_line

    def assert_hot_line_on_top(self, per_line):
        self.assertTrue(per_line, "no lines")
        top, _ = per_line.most_common(1)[0]
        self.assertEqual(top, self.hot_line, per_line)

    def test_leaf_carries_build_id_and_file_offset(self):
        self.assertTrue(self.offsets, "no sample has %s as its leaf" % HOT)
        self.assertEqual({b for (b, _) in self.offsets}, {self.build_id})
        segments = loads(self.exe)
        for (_, off) in self.offsets:
            self.assertNotEqual(off, 0)
            offset_to_vaddr(segments, off)  # inside the binary's file
        # callers stay keyed by name: no address but the user leaf's (below the kernel's)
        for s in self.profile.samples:
            user_leaf = next((i for i, m in enumerate(s.modules) if m != "[kernel]"), 0)
            self.assertTrue(all(a == 0 for i, a in enumerate(s.addresses) if i != user_leaf), s)

    def test_eu_addr2line_on_the_debug_file_gives_the_hot_line(self):
        segments = loads(self.exe)
        per_line = Counter()
        for (_, off), n in self.offsets.items():
            out = run(["eu-addr2line", "-e", os.path.join(FIXTURES, "lines-hot.debug"),
                       "0x%x" % offset_to_vaddr(segments, off)]).stdout.strip()
            per_line[int(out.split(":")[1])] += n
        self.assert_hot_line_on_top(per_line)

    def debug_dir(self, name, with_executable):
        root = os.path.join(self.tmp, name)
        d = os.path.join(root, ".build-id", self.build_id[:2])
        os.makedirs(d, exist_ok=True)
        debug = "lines-hot.debug" if with_executable else "lines-hot.eu.debug"
        shutil.copy(os.path.join(FIXTURES, debug), os.path.join(d, self.build_id[2:] + ".debug"))
        if with_executable:  # as /usr/lib/debug/.build-id/xx/yyyy links the binary
            os.symlink(self.exe, os.path.join(d, self.build_id[2:]))
        return root

    def test_resolver_from_the_debug_directory_puts_the_hot_line_on_top(self):
        self.assert_hot_line_on_top(self.resolve("--debug-dir", self.debug_dir("dir1", True)))
        self.assert_hot_line_on_top(self.resolve("--debug-dir", self.debug_dir("dir2", False)))

    def test_resolver_from_debuginfod_puts_the_hot_line_on_top(self):
        if not shutil.which("debuginfod"):
            self.fail("debuginfod (Debian's debuginfod package) not installed")
        served = os.path.join(self.tmp, "served")
        os.makedirs(served)
        shutil.copy(self.exe, os.path.join(served, "lines-hot"))
        shutil.copy(os.path.join(FIXTURES, "lines-hot.debug"),
                    os.path.join(served, "lines-hot.debug"))
        port = free_port()
        server = subprocess.Popen(
            ["debuginfod", "-F", served, "-p", str(port), "-d",
             os.path.join(self.tmp, "db.sqlite"), "-t", "0", "-g", "0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = "http://127.0.0.1:%d" % port
        try:
            deadline = time.monotonic() + 60
            while True:  # ready once its first scan has indexed both files
                try:
                    with urllib.request.urlopen("%s/buildid/%s/executable" % (url, self.build_id),
                                                timeout=5) as r:
                        if r.status == 200:
                            break
                except (urllib.error.URLError, ConnectionError, OSError):
                    pass
                if time.monotonic() > deadline or server.poll() is not None:
                    raise AssertionError("debuginfod did not serve the files")
                time.sleep(0.5)
            env = dict(os.environ, DEBUGINFOD_CACHE_PATH=os.path.join(self.tmp, "cache"))
            empty = os.path.join(self.tmp, "empty")
            os.makedirs(empty, exist_ok=True)
            self.assert_hot_line_on_top(
                self.resolve("--debug-dir", empty, "--debuginfod-urls", url, env=env))
        finally:
            server.terminate()
            server.wait()

    def test_without_a_debug_file_the_answer_says_no_debug_info(self):
        empty = os.path.join(self.tmp, "nothing")
        os.makedirs(empty, exist_ok=True)
        per_line = self.resolve("--debug-dir", empty)
        self.assertEqual(set(per_line),
                         {"error no debug info for build-id %s" % self.build_id})


if __name__ == "__main__":
    harness.main()
