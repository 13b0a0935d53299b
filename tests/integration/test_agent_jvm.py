# SPDX-License-Identifier: Apache-2.0
# Java frames through `roottrace-agent run` against a real collector on 127.0.0.1 (root: real
# BPF, real cgroups, a JVM started without any profiling flag): the service's top list and
# flame graph name the Java methods from HotSpot's own structures, hot under caller, and
# /metrics counts the walk.
import os
import shutil
import subprocess
import unittest

import harness
from cleanup_case import CleanupTestCase
from collector_fixture import Collector
from jvm_classes import JAVAC, hot_classes
from test_agent_daemon import POLL_S, Agent, CgroupDirs, wait_for
from test_agent_metrics import P, free_port, get
from test_agent_python import find

JAVA = shutil.which("java") or "/usr/bin/java"
SERVICE = "rt-test-jvmhot"


@unittest.skipUnless(os.geteuid() == 0, "needs root (BPF, perf events, cgroups)")
@unittest.skipUnless(os.access(JAVAC, os.X_OK), JAVAC + " not installed")
class AgentJvmTest(CleanupTestCase):
    tmp_prefix = "rt-agent-jvm-"

    def test_run_ships_java_methods_to_the_collector(self):
        cg = CgroupDirs()
        self.cleanups.append(cg.cleanup)
        unit_dir = cg.make("system.slice/%s.service" % SERVICE)
        java = subprocess.Popen([JAVA, "-cp", hot_classes(), "Hot", "hot", "600"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.cleanups.append(lambda: (java.kill(), java.wait()))
        self.assertTrue(java.stdout.readline().startswith("ready"))
        cg.move(java.pid, unit_dir)  # its threads follow (cgroup v2 moves the process)
        java.stdin.write("go\n")  # hotLoop under callerOfHot from now on
        java.stdin.flush()

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
        self.assertGreaterEqual(totals.get("Hot.hotLoop", 0), 80, top)
        self.assertGreaterEqual(totals.get("Hot.callerOfHot", 0), 80, top)

        status, flame = c.get_json("/api/apm/profiles/flamegraph", viewer, params=params)
        self.assertEqual(status, 200, flame)
        caller = find(flame["root"], "Hot.callerOfHot")
        self.assertIsNotNone(caller, flame)
        hot = [ch for ch in caller.get("children") or [] if ch["name"] == "Hot.hotLoop"]
        self.assertTrue(hot, caller)
        self.assertGreaterEqual(hot[0]["total"], 0.9 * caller["total"])

        status, _, body = get(port, "/metrics")
        self.assertEqual(status, 200)
        frames = [l for l in body.splitlines()
                  if l.startswith(P + 'hotspot_frames_total{kind="compiled"} ')]
        self.assertTrue(frames and float(frames[0].split()[1]) > 0, body)
        attached = [l for l in body.splitlines()
                    if l.startswith(P + 'hotspot_processes_total{outcome="attached"} ')]
        self.assertTrue(attached and float(attached[0].split()[1]) >= 1, body)
        self.assertIn(P + 'hotspot_names_total{result="read"}', body)
        # the nmethods' PcDesc tables, checked against reuse at each window's end
        for result in ("read", "stale", "evicted"):
            self.assertIn(P + 'hotspot_compiled_code_total{result="%s"}' % result, body)
        self.assertEqual(agent.stop(), 0)


if __name__ == "__main__":
    harness.main()
