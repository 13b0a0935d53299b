# SPDX-License-Identifier: Apache-2.0
# A C program stripped with `strip --strip-all`, its symbols only in MiniDebugInfo, a build-id
# debug file, a .gnu_debuglink file (CRC checked) or a real debuginfod server on loopback;
# plus a debuginfod that never answers (sampling goes on) and a 404 that is not asked again.
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
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
FIXTURE_C = os.path.join(SRC, "tests", "fixtures", "elf", "fixture_main.c")
DEBUG_ROOT = "/usr/lib/debug/.build-id"
HOT = "fixture_alpha"


def run(argv, **kw):
    return subprocess.run(argv, check=True, capture_output=True, timeout=120, **kw)


def build(path):
    """A PIE with a build-id of its own (identical builds would share one debug file)."""
    build_id = os.urandom(20).hex()
    run(["gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer",
         "-Wl,--build-id=0x" + build_id, FIXTURE_C, "-o", path])
    return build_id


def split_debug(path):
    """path.debug with the symbols and DWARF; path stripped of everything."""
    run(["objcopy", "--only-keep-debug", path, path + ".debug"])
    run(["strip", "--strip-all", path])
    return path + ".debug"


def add_minidebuginfo(path, tmp):
    """The recipe of gdb's manual (Fedora's find-debuginfo): the functions .dynsym lacks."""
    def names(argv):
        out = run(argv, text=True).stdout
        return sorted({line.split()[0] for line in out.splitlines()
                       if len(line.split()) > 1 and line.split()[1] in ("T", "t")})
    dyn = set(names(["nm", "-D", path, "--format=posix", "--defined-only"]))
    keep = [n for n in names(["nm", path, "--format=posix", "--defined-only"]) if n not in dyn]
    keep_file = os.path.join(tmp, "keep_symbols")
    with open(keep_file, "w") as f:
        f.write("\n".join(keep) + "\n")
    mini = os.path.join(tmp, "mini_debuginfo")
    run(["objcopy", "--only-keep-debug", path, mini])
    run(["objcopy", "-S", "--remove-section", ".gdb_index", "--remove-section", ".comment",
         "--keep-symbols=" + keep_file, mini])
    run(["strip", "--strip-all", "-R", ".comment", path])
    run(["xz", "-f", mini])
    run(["objcopy", "--add-section", ".gnu_debugdata=" + mini + ".xz", path])


def build_id_path(build_id):
    return os.path.join(DEBUG_ROOT, build_id[:2], build_id[2:] + ".debug")


def spawn(path, seconds):
    p = subprocess.Popen([path, "spin", str(seconds)], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    if not line.startswith("ready"):
        p.kill()
        raise AssertionError("%s did not start: %r" % (path, line))
    return p


def stop(procs):
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()
        p.stdout.close()


def record(out, seconds, env=None):
    r = subprocess.run([AGENT, "record", "--duration", "%ds" % seconds, "--frequency", "99",
                        "--output", out], capture_output=True, text=True, timeout=120,
                       env=env)
    if r.returncode != 0:
        raise AssertionError("record failed: " + r.stderr)
    return pprof_py.parse_file(out), r.stderr


def leaves(prof, pid):
    c = Counter()
    for s in prof.samples:
        if s.labels.get("pid") == pid:
            c[s.stack[0]] += s.values[0]
    return c


def share(prof, pid, name):
    c = leaves(prof, pid)
    total = sum(c.values())
    return (c[name] / total if total else 0.0), c


def reason_count(stderr, reason):
    m = re.search(r"unknown frame lookups:.*?\b%s (\d+)" % reason, stderr)
    return int(m.group(1)) if m else -1


class DebugFilesUnderBpf(unittest.TestCase):
    """MiniDebugInfo, build-id file, debuglink (good and wrong CRC), nothing: one recording."""

    setup_error = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="rt-debugsyms-")
        cls.placed = []
        cls.procs = {}
        if os.geteuid() != 0:
            return
        try:
            cls._prepare()
            cls.profile, cls.stderr = record(os.path.join(cls.tmp, "p.pb.gz"), 3)
        except Exception as e:  # noqa: BLE001
            cls.setup_error = "%s: %s" % (type(e).__name__, e)

    @classmethod
    def _prepare(cls):
        t = cls.tmp
        apps = {k: os.path.join(t, "app-" + k) for k in
                ("mini", "buildid", "debuglink", "badcrc", "bare")}
        ids = {k: build(p) for k, p in apps.items()}
        add_minidebuginfo(apps["mini"], t)
        # build-id: the debug file under /usr/lib/debug/.build-id/xx/yyyy.debug
        dbg = split_debug(apps["buildid"])
        dest = build_id_path(ids["buildid"])
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.move(dbg, dest)
        cls.placed.append(dest)
        # debuglink: the file in .debug/ beside the binary, named by the link, CRC matching
        dbg = split_debug(apps["debuglink"])
        run(["objcopy", "--add-gnu-debuglink=" + dbg, apps["debuglink"]])
        os.makedirs(os.path.join(t, ".debug"), exist_ok=True)
        shutil.move(dbg, os.path.join(t, ".debug", os.path.basename(dbg)))
        # wrong CRC: the link names a file that holds another build's debug info
        dbg = split_debug(apps["badcrc"])
        run(["objcopy", "--add-gnu-debuglink=" + dbg, apps["badcrc"]])
        other = os.path.join(t, "other")
        build(other)
        shutil.copy(split_debug(other), dbg)
        run(["strip", "--strip-all", apps["bare"]])
        cls.apps = apps
        for k, p in apps.items():
            cls.procs[k] = spawn(p, 8)

    @classmethod
    def tearDownClass(cls):
        stop(cls.procs.values())
        for p in cls.placed:
            if os.path.exists(p):
                os.unlink(p)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root for BPF")
        if self.setup_error:
            self.fail("setup failed: " + self.setup_error)

    def assert_named(self, key):
        s, c = share(self.profile, self.procs[key].pid, HOT)
        self.assertGreaterEqual(s, 0.8, (key, c.most_common(4), self.stderr))

    def assert_unnamed(self, key):
        s, c = share(self.profile, self.procs[key].pid, HOT)
        self.assertEqual(s, 0.0, (key, c.most_common(4)))
        self.assertGreater(c["[unknown]"], 0, c)

    def test_minidebuginfo_names_stripped_binary(self):
        self.assert_named("mini")

    def test_build_id_debug_file_names_stripped_binary(self):
        self.assert_named("buildid")

    def test_debuglink_file_in_dot_debug_names_stripped_binary(self):
        self.assert_named("debuglink")

    def test_debuglink_with_wrong_crc_is_not_used(self):
        self.assert_unnamed("badcrc")

    def test_stripped_binary_without_debug_info_stays_unknown(self):
        self.assert_unnamed("bare")
        self.assertGreater(reason_count(self.stderr, "no_symbol"), 0, self.stderr)


class HangingServer:
    """Accepts connections on loopback and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class DebuginfodUnderBpf(unittest.TestCase):
    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root for BPF")
        if not shutil.which("debuginfod"):
            self.fail("debuginfod (Debian's debuginfod package) not installed")
        self.tmp = tempfile.mkdtemp(prefix="rt-debuginfod-")
        self.procs = []
        self.server = None

    def tearDown(self):
        stop(self.procs)
        if self.server and self.server.poll() is None:
            self.server.terminate()
            self.server.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def agent_env(self, urls):
        return dict(os.environ, DEBUGINFOD_URLS=urls,
                    DEBUGINFOD_CACHE_PATH=os.path.join(self.tmp, "cache"))

    def start_debuginfod(self, served_dir, build_id):
        port = free_port()
        self.server = subprocess.Popen(
            ["debuginfod", "-F", served_dir, "-p", str(port), "-d",
             os.path.join(self.tmp, "db.sqlite"), "-t", "0", "-g", "0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = "http://127.0.0.1:%d" % port
        deadline = time.monotonic() + 60
        while True:  # ready once its first scan has indexed the debug file
            try:
                with urllib.request.urlopen("%s/buildid/%s/debuginfo" % (url, build_id),
                                            timeout=5) as r:
                    if r.status == 200:
                        return url
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if time.monotonic() > deadline or self.server.poll() is not None:
                raise AssertionError("debuginfod did not serve the debug file")
            time.sleep(0.5)

    def test_debuginfod_names_stripped_binary_and_does_not_ask_again_for_404(self):
        served = os.path.join(self.tmp, "served")
        os.makedirs(served)
        app = os.path.join(self.tmp, "app-served")
        build_id = build(app)
        shutil.move(split_debug(app), os.path.join(served, "app-served.debug"))
        missing = os.path.join(self.tmp, "app-missing")
        missing_id = build(missing)
        run(["strip", "--strip-all", missing])
        url = self.start_debuginfod(served, build_id)
        # A second server that has nothing and counts what it is asked (libdebuginfod asks
        # every server in DEBUGINFOD_URLS).
        counting = CountingServer()
        self.procs = [spawn(app, 14), spawn(missing, 14)]
        try:
            # Windows of 5 s: the first is named while the fetch waits, the later ones after.
            prof, err = record(os.path.join(self.tmp, "p.pb.gz"), 12,
                               self.agent_env(url + " " + counting.url))
        finally:
            counting.close()
        s, c = share(prof, self.procs[0].pid, HOT)
        self.assertGreaterEqual(s, 0.4, (c.most_common(4), err))
        self.assertEqual(share(prof, self.procs[1].pid, HOT)[0], 0.0)
        self.assertGreater(reason_count(err, "debuginfod_failed"), 0, err)
        # Asked once for the whole recording (three windows, lookups every second): the 404
        # is remembered.
        self.assertEqual(counting.hits.get(missing_id), 1, (counting.hits, err))
        # The agent's own negative cache answered the later lookups (not only libdebuginfod's).
        m = re.search(r"(\d+) answered by the negative cache, failed: not_found (\d+)", err)
        self.assertTrue(m and int(m.group(1)) >= 1 and int(m.group(2)) >= 1, err)

    def test_server_that_never_answers_does_not_delay_sampling(self):
        app = os.path.join(self.tmp, "app")
        build(app)
        run(["strip", "--strip-all", app])
        control = os.path.join(self.tmp, "control")  # keeps .symtab: never asks debuginfod
        build(control)
        server = HangingServer()
        try:
            self.procs = [spawn(app, 30), spawn(control, 30)]
            prof, err = record(os.path.join(self.tmp, "p.pb.gz"), 6,
                               self.agent_env("http://127.0.0.1:%d" % server.port))
        finally:
            server.close()
        stripped = sum(leaves(prof, self.procs[0].pid).values())
        named = leaves(prof, self.procs[1].pid)
        # The fetch hangs past the recording (30 s timeout): the stripped process is sampled
        # like its twin all along, its frames counted as waiting.
        self.assertGreater(named[HOT], 0, (named, err))
        self.assertGreaterEqual(stripped, 0.5 * sum(named.values()), (stripped, named, err))
        self.assertGreater(reason_count(err, "debuginfod_waiting"), 0, err)
        # The recording ended while the fetch was still hanging (nothing fetched, nothing
        # failed yet): nothing waited for it.
        m = re.search(r"debuginfod: (\d+) requests, (\d+) fetched, .* failed: not_found (\d+), "
                      r"timeout (\d+), network (\d+)", err)
        self.assertTrue(m, err)
        self.assertGreater(int(m.group(1)), 0, err)
        self.assertEqual([int(g) for g in m.groups()[1:]], [0, 0, 0, 0], err)


class CountingServer:
    """Answers 404 to everything, counting requests per build-id."""

    def __init__(self):
        import http.server

        hits = self.hits = {}

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                parts = self.path.split("/")
                if len(parts) > 2 and parts[1] == "buildid":
                    hits[parts[2]] = hits.get(parts[2], 0) + 1
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


if __name__ == "__main__":
    harness.main()
