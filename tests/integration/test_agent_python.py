# SPDX-License-Identifier: Apache-2.0
# Python frames through `roottrace-agent run` against a real collector on 127.0.0.1 (root: real
# BPF, real cgroups, Debian's python3.11 started without flags): the service's top list and
# flame graph name the interpreter's functions, hot under caller, and /metrics counts the walk.
import os
import unittest

import harness
from agent_runtime_case import AgentRuntimeCase, find
from test_agent_metrics import P, get

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


@unittest.skipUnless(os.geteuid() == 0, "needs root (BPF, perf events, cgroups)")
@unittest.skipUnless(os.access(PYTHON, os.X_OK), PYTHON + " not installed")
class AgentPythonTest(AgentRuntimeCase):
    tmp_prefix = "rt-agent-python-"

    def test_run_ships_python_functions_to_the_collector(self):
        c, viewer, agent, port = self.ship([PYTHON], "hotmod.py", HOT, SERVICE)

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
