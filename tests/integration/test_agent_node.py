# SPDX-License-Identifier: Apache-2.0
# Node.js frames through `roottrace-agent run` against a real collector on 127.0.0.1 (root: real
# BPF, real cgroups, /usr/bin/node started without flags): the service's top list and flame
# graph name the JS functions from V8's own structures, hot under caller, and /metrics counts
# the walk.
import os
import subprocess
import unittest

import harness
from cleanup_case import CleanupTestCase
from collector_fixture import Collector
from test_agent_daemon import POLL_S, Agent, CgroupDirs, wait_for
from test_agent_metrics import P, free_port, get
from test_agent_python import find

NODE = "/usr/bin/node"
SERVICE = "rt-test-nodehot"
HOT_JS = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "fixtures", "v8",
                                       "hot.js"))


@unittest.skipUnless(os.geteuid() == 0, "needs root (BPF, perf events, cgroups)")
@unittest.skipUnless(os.access(NODE, os.X_OK), NODE + " not installed")
class AgentNodeTest(CleanupTestCase):
    tmp_prefix = "rt-agent-node-"

    def test_run_ships_js_functions_to_the_collector(self):
        cg = CgroupDirs()
        self.cleanups.append(cg.cleanup)
        unit_dir = cg.make("system.slice/%s.service" % SERVICE)
        node = subprocess.Popen([NODE, HOT_JS, "600", "hot"], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, text=True)
        self.cleanups.append(lambda: (node.kill(), node.wait()))
        cg.move(node.pid, unit_dir)
        node.stdin.write("go\n")  # hotLoop under callerOfHot from now on
        node.stdin.flush()

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
        ok = wait_for(lambda: c.stored_total(SERVICE, "cpu") > 3e9, 60, step=1)
        self.assertTrue(ok, agent.log())

        params = {"service": SERVICE, "profile_type": "cpu", "time_range": "1h"}
        status, top = c.get_json("/api/apm/profiles/top", viewer, params=params)
        self.assertEqual(status, 200, top)
        totals = {f["name"]: f["total_share"] for f in top["functions"]}
        self.assertGreaterEqual(totals.get("hotLoop", 0), 80, top)
        self.assertGreaterEqual(totals.get("callerOfHot", 0), 80, top)

        status, flame = c.get_json("/api/apm/profiles/flamegraph", viewer, params=params)
        self.assertEqual(status, 200, flame)
        caller = find(flame["root"], "callerOfHot")
        self.assertIsNotNone(caller, flame)
        hot = [ch for ch in caller.get("children") or [] if ch["name"] == "hotLoop"]
        self.assertTrue(hot, caller)
        self.assertGreaterEqual(hot[0]["total"], 0.9 * caller["total"])

        status, _, body = get(port, "/metrics")
        self.assertEqual(status, 200)
        frames = [l for l in body.splitlines() if l.startswith(P + "v8_frames_total ")]
        self.assertTrue(frames and float(frames[0].split()[1]) > 0, body)
        self.assertIn(P + 'v8_processes_total{outcome="attached"}', body)
        self.assertIn(P + 'v8_names_total{result="read"}', body)
        self.assertEqual(agent.stop(), 0)


if __name__ == "__main__":
    harness.main()
