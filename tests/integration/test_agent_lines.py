#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Issue 32 through the route: `roottrace-agent run` (real BPF) ships a C program built with -g
# and stripped of its debug info to a real collector; GET /api/apm/profiles/lines resolves the
# agent's leaf offsets of its hot function on demand, from the config file's debug_dir and from
# a real debuginfod on loopback (--debuginfod-urls): the hot loop's line is the top line in both;
# with neither, the function's self time has no line and the answer says "no debug info for
# build-id X". One recording, the collector restarted with each source (a fresh resolver).
import os
import re
import shutil
import subprocess
import unittest
import urllib.error
import urllib.request

import harness
from cleanup_case import CleanupTestCase
from collector_fixture import Collector, build_dir
from test_agent_daemon import POLL_S, Agent, wait_for
from test_agent_metrics import free_port

SRC = os.environ.get("ROOTTRACE_SRC", os.getcwd())
FIXTURES = os.path.join(build_dir(), "fixtures", "lines")  # mk/lines.mk
SOURCE = os.path.join(SRC, "tests", "fixtures", "lines", "lines_hot.c")
HOT = "lines_hot_loop"
# The program's own service (an agent rule on its executable): the machine is shared, and other
# runs of this fixture (other build directories, other build-ids) would land in "host" too.
SERVICE = "rt-test-lines-%d" % os.getpid()


def build_id_of(path):
    out = subprocess.run(["eu-readelf", "-n", path], check=True, capture_output=True,
                         text=True).stdout
    return re.search(r"Build ID: ([0-9a-f]+)", out).group(1)


def hot_line():
    """The loop body's line in the fixture's source."""
    with open(SOURCE) as f:
        return next(i + 1 for i, l in enumerate(f) if "/* the hot line */" in l)


@unittest.skipUnless(os.geteuid() == 0, "needs root (BPF, perf events)")
class AgentLinesThroughTheRoute(CleanupTestCase):
    tmp_prefix = "rt-agent-lines-"

    def lines(self, c, viewer):
        params = {"service": SERVICE, "profile_type": "cpu", "time_range": "1h",
                  "function": HOT}
        return c.get_json("/api/apm/profiles/lines", viewer, params=params)

    def record_into(self, c, tok, eng, viewer):
        """The agent ships the stripped program until the collector has 2 s of its self time."""
        status, resp = c.put_json("/api/apm/config", eng, {
            "environment": "production", "service": None, "enabled": True,
            "poll_interval_s": POLL_S, "upload_interval_s": 10})
        self.assertEqual(status, 200, resp)
        hot = subprocess.Popen([self.exe, "120"], stdin=subprocess.DEVNULL)
        self.cleanups.append(lambda: (hot.kill(), hot.wait()))
        agent = Agent(self.tmp, c.url(""), tok,
                      config={"rules": [{"match": {"exe": self.exe}, "service": SERVICE}]})
        self.cleanups.append(agent.stop)

        def enough():
            status, body = self.lines(c, viewer)
            return status == 200 and body["self"] >= 2e9
        self.assertTrue(wait_for(enough, 90, step=2), agent.log())
        agent.stop()
        hot.kill()
        hot.wait()

    def debug_dir(self):
        root = os.path.join(self.tmp, "debug")
        d = os.path.join(root, ".build-id", self.build_id[:2])
        os.makedirs(d)
        shutil.copy(os.path.join(FIXTURES, "lines-hot.debug"),
                    os.path.join(d, self.build_id[2:] + ".debug"))
        os.symlink(self.exe, os.path.join(d, self.build_id[2:]))  # maps the offsets
        return root

    def start_debuginfod(self):
        served = os.path.join(self.tmp, "served")
        os.makedirs(served)
        shutil.copy(self.exe, os.path.join(served, "lines-hot"))
        shutil.copy(os.path.join(FIXTURES, "lines-hot.debug"), served)
        port = free_port()
        server = subprocess.Popen(
            ["debuginfod", "-F", served, "-p", str(port), "-d",
             os.path.join(self.tmp, "db.sqlite"), "-t", "0", "-g", "0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.cleanups.append(lambda: (server.terminate(), server.wait()))
        url = "http://127.0.0.1:%d" % port

        def serving():
            try:
                with urllib.request.urlopen("%s/buildid/%s/executable" % (url, self.build_id),
                                            timeout=5) as r:
                    return r.status == 200
            except (urllib.error.URLError, ConnectionError, OSError):
                return False
        self.assertTrue(wait_for(serving, 60, step=0.5), "debuginfod did not serve the files")
        return url

    def assert_hot_line_on_top(self, body):
        self.assertTrue(body["lines"], body)
        top = body["lines"][0]
        self.assertTrue(top["file"].endswith("tests/fixtures/lines/lines_hot.c"), top)
        self.assertEqual(top["line"], self.hot_line, body)

    def test_the_hot_loop_line_is_on_top_from_a_debug_dir_and_from_debuginfod(self):
        if not shutil.which("debuginfod"):
            self.fail("debuginfod (Debian's debuginfod package) not installed")
        self.exe = os.path.join(self.tmp, "lines-hot")
        shutil.copy(os.path.join(FIXTURES, "lines-hot.stripped"), self.exe)
        self.build_id = build_id_of(self.exe)
        self.hot_line = hot_line()
        c = Collector()
        self.cleanups.append(c.close)
        tok = c.create_token("collector")
        eng = c.create_token("user", role="engineer")
        viewer = c.create_token("user", role="viewer")
        self.record_into(c, tok, eng, viewer)

        # no debug file anywhere: the self time has no line, and why
        status, body = self.lines(c, viewer)
        self.assertEqual(status, 200, body)
        why = "no debug info for build-id %s" % self.build_id
        self.assertEqual(body["lines"], [], body)
        # the module the offsets are in, then why: "lines-hot: no debug info for build-id X"
        self.assertIn("lines-hot: " + why, [r["reason"] for r in body["no_line"]["reasons"]], body)
        self.assertGreaterEqual(body["no_line"]["share"], 99.0, body)
        self.assertTrue(all(u["build_id"] == self.build_id for u in body["unresolved"]), body)

        # the config file's debug_dir
        config = os.path.join(self.tmp, "collector.conf")
        with open(config, "w") as f:
            f.write("debug_dir = %s\n" % self.debug_dir())
        c.restart(["--config", config])
        status, body = self.lines(c, viewer)
        self.assertEqual(status, 200, body)
        self.assert_hot_line_on_top(body)
        self.assertLess(body["no_line"]["share"], 1.0, body)

        # a real debuginfod on loopback, and nothing in a debug directory
        url = self.start_debuginfod()
        os.environ["DEBUGINFOD_CACHE_PATH"] = os.path.join(self.tmp, "cache")
        self.cleanups.append(lambda: os.environ.pop("DEBUGINFOD_CACHE_PATH", None))
        # a loaded machine (load 25 on 2 cores) once ran past the resolver's 30 s default
        os.environ["DEBUGINFOD_TIMEOUT"] = "120"
        self.cleanups.append(lambda: os.environ.pop("DEBUGINFOD_TIMEOUT", None))
        c.restart(["--debuginfod-urls", url])
        status, body = self.lines(c, viewer)
        self.assertEqual(status, 200, body)
        self.assert_hot_line_on_top(body)


if __name__ == "__main__":
    harness.main()
