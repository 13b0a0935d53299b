# SPDX-License-Identifier: Apache-2.0
# Python frames through `roottrace-agent run` against a real collector on 127.0.0.1 (root: real
# BPF, real cgroups, Debian's python3.11 started without flags): the service's top list and
# flame graph name the interpreter's functions, hot under caller, and /metrics counts the walk.
import os
import subprocess
import time
import unittest

import harness
from cleanup_case import CleanupTestCase
from collector_fixture import Collector
from test_agent_daemon import POLL_S, Agent, CgroupDirs, wait_for
from test_agent_metrics import P, free_port, get

PYTHON = "/usr/bin/python3.11"
SERVICE = "rt-test-pyhot"
HOT = """
def hot(n):
    s = 0
    for i in range(n):
        s += i * i
    return s

def caller():
    while True:
        hot(20000)

caller()
"""


def find(node, name):
    """The first node of the call tree named name (depth first), or None."""
    if node.get("name") == name:
        return node
    for child in node.get("children") or []:
        found = find(child, name)
        if found:
            return found
    return None


@unittest.skipUnless(os.geteuid() == 0, "needs root (BPF, perf events, cgroups)")
@unittest.skipUnless(os.access(PYTHON, os.X_OK), PYTHON + " not installed")
class AgentPythonTest(CleanupTestCase):
    tmp_prefix = "rt-agent-python-"

    def test_run_ships_python_functions_to_the_collector(self):
        cg = CgroupDirs()
        self.cleanups.append(cg.cleanup)
        unit_dir = cg.make("system.slice/%s.service" % SERVICE)
        src = os.path.join(self.tmp, "hotmod.py")
        with open(src, "w") as f:
            f.write(HOT)
        py = subprocess.Popen([PYTHON, src])
        self.cleanups.append(lambda: (py.kill(), py.wait()))
        cg.move(py.pid, unit_dir)

        c = Collector()
        self.cleanups.append(c.close)
        tok = c.create_token("collector")
        eng = c.create_token("user", role="engineer")
        viewer = c.create_token("user", role="viewer")
        status, resp = c.put_json("/api/apm/config", eng, {
            "environment": "production", "service": None, "enabled": True,
            "poll_interval_s": POLL_S, "upload_interval_s": 10})
        self.assertEqual(status, 200, resp)
        port = free_port()
        agent = Agent(self.tmp, c.url(""), tok, extra_args=["--listen", "127.0.0.1:%d" % port])
        self.cleanups.append(agent.stop)
        # two uploads: the first window may hold samples from before the tables were loaded
        ok = wait_for(lambda: len({r[4] for r in c.stored_rows(SERVICE, "cpu")}) >= 1
                      and c.stored_total(SERVICE, "cpu") > 3e9, 60, step=1)
        self.assertTrue(ok, agent.log())

        params = {"service": SERVICE, "profile_type": "cpu", "time_range": "1h"}
        status, top = c.get_json("/api/apm/profiles/top", viewer, params=params)
        self.assertEqual(status, 200, top)
        totals = {f["name"]: f["total_share"] for f in top["functions"]}
        self.assertGreaterEqual(totals.get("hotmod.hot", 0), 80, top)
        self.assertGreaterEqual(totals.get("hotmod.caller", 0), 80, top)
        # the eval loop's own frame is left only in samples taken before the process's unwind
        # tables were loaded (the kernel's frame-pointer walk, which reads no Python frames)
        self.assertLess(totals.get("_PyEval_EvalFrameDefault", 0), 20, top)

        status, flame = c.get_json("/api/apm/profiles/flamegraph", viewer, params=params)
        self.assertEqual(status, 200, flame)
        caller = find(flame["root"], "hotmod.caller")
        self.assertIsNotNone(caller, flame)
        hot = [ch for ch in caller.get("children") or [] if ch["name"] == "hotmod.hot"]
        self.assertTrue(hot, caller)
        self.assertGreaterEqual(hot[0]["total"], 0.9 * caller["total"])

        status, _, body = get(port, "/metrics")
        self.assertEqual(status, 200)
        frames = [l for l in body.splitlines() if l.startswith(P + "python_frames_total ")]
        self.assertTrue(frames and float(frames[0].split()[1]) > 0, body)
        self.assertIn(P + 'python_processes_total{outcome="attached"}', body)
        self.assertEqual(agent.stop(), 0)


if __name__ == "__main__":
    harness.main()
