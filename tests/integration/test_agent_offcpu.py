# SPDX-License-Identifier: Apache-2.0
# `roottrace-agent run` with off-CPU time against a real collector on 127.0.0.1 (root: real BPF,
# real cgroups): a service with offcpu_enabled uploads its blocked time as `offcpu`, one with it
# off contributes nothing; cpu and offcpu of the same service stay apart in every query and the
# cost route answers null for offcpu; an environment without off-CPU loads no scheduler hook;
# a kernel that refuses the hook is named in /healthz while CPU profiles still arrive.
import json
import os
import subprocess
import time
import unittest

import harness

import test_agent_daemon
from cleanup_case import CleanupTestCase
from collector_fixture import Collector, build_dir
from test_agent_metrics import free_port, health

WAITS = os.path.join(build_dir(), "tests", "helpers", "offcpu_waits")
POLL_S = test_agent_daemon.POLL_S
wait_for = test_agent_daemon.wait_for
Agent = test_agent_daemon.Agent
CgroupDirs = test_agent_daemon.CgroupDirs


def prog_names(pid):
    """Names of the BPF programs the process holds."""
    names = set()
    for prog_id in test_agent_daemon.prog_ids_of(pid):
        out = subprocess.run(["bpftool", "-j", "prog", "show", "id", str(prog_id)],
                             capture_output=True, text=True, timeout=20).stdout
        if out:
            names.add(json.loads(out).get("name", ""))
    return names


@unittest.skipUnless(os.geteuid() == 0, "needs root (BPF, perf events, cgroups)")
class AgentOffCpu(CleanupTestCase):
    tmp_prefix = "rt-agent-offcpu-"

    def start_collector(self):
        c = Collector()
        self.cleanups.append(c.close)
        return c

    def start_agent(self, c, token, **kw):
        agent = Agent(self.tmp, c.url(""), token, **kw)
        self.cleanups.append(agent.stop)
        return agent

    def start_waits(self, cgroup_dir):
        """The split workload, running until killed, inside cgroup_dir."""
        p = subprocess.Popen([WAITS, "split", "2", "600"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        self.cleanups.append(lambda: (p.kill(), p.wait(), p.stdin.close(), p.stdout.close()))
        self.assertEqual(p.stdout.readline().strip(), "ready")
        CgroupDirs.move(p.pid, cgroup_dir)
        p.stdin.write("go\n")
        p.stdin.flush()
        return p

    def put(self, c, eng, **doc):
        body = {"environment": "production", "service": None}
        body.update(doc)
        status, resp = c.put_json("/api/apm/config", eng, body)
        self.assertEqual(status, 200, resp)

    def test_enabled_service_uploads_offcpu_disabled_one_nothing(self):
        cg = CgroupDirs()
        self.cleanups.append(cg.cleanup)
        on_dir = cg.make("system.slice/rt-test-waits-on.service")
        off_dir = cg.make("system.slice/rt-test-waits-off.service")
        self.start_waits(on_dir)
        self.start_waits(off_dir)
        c = self.start_collector()
        tok = c.create_token("collector")
        eng = c.create_token("user", role="engineer")
        viewer = c.create_token("user", role="viewer")
        self.put(c, eng, enabled=True, offcpu_enabled=True, poll_interval_s=POLL_S,
                 upload_interval_s=10)
        self.put(c, eng, service="rt-test-waits-off", offcpu_enabled=False)
        port = free_port()
        agent = self.start_agent(c, tok, extra_args=["--listen", "127.0.0.1:%d" % port])
        ok = wait_for(lambda: c.stored_total("rt-test-waits-on", "offcpu") > 2e9, 60, step=1)
        self.assertTrue(ok, agent.log())
        # its CPU arrived too, under its own type; the other service sent CPU but no offcpu
        self.assertTrue(wait_for(lambda: c.stored_total("rt-test-waits-off", "cpu") > 0, 30,
                                 step=1), agent.log())
        self.assertEqual(c.stored_total("rt-test-waits-off", "offcpu"), 0)
        self.assertIn("offcpu_switch", prog_names(agent.pid))
        status, doc = health(port)
        self.assertEqual(doc.get("offcpu"), "on", doc)

        q = {"service": "rt-test-waits-on", "time_range": "1h"}
        status, off = c.get_json("/api/apm/profiles/top", viewer, params=dict(q, profile_type="offcpu"))
        self.assertEqual(status, 200, off)
        status, cpu = c.get_json("/api/apm/profiles/top", viewer, params=dict(q, profile_type="cpu"))
        self.assertEqual(status, 200, cpu)
        self.assertEqual(off["measurement"], "offcpu")
        self.assertEqual(cpu["measurement"], "cpu")
        # ~4 s blocked per 2 threads per second vs a few ms of CPU: never summed together
        self.assertGreater(off["total"], 50 * max(cpu["total"], 1), (off["total"], cpu["total"]))
        names = json.dumps(off)
        self.assertIn("wait_in_sleep", names)
        self.assertIn("wait_in_read", names)
        status, cost = c.get_json("/api/apm/profiles/cost", viewer,
                                  params=dict(q, profile_type="offcpu"))
        self.assertEqual(status, 200, cost)
        self.assertIn("cost", cost)
        self.assertIsNone(cost["cost"], cost)
        self.assertIn("no vCPU cost", json.dumps(cost))
        self.assertEqual(agent.stop(), 0)

    def test_environment_without_offcpu_loads_no_scheduler_hook(self):
        c = self.start_collector()
        tok = c.create_token("collector")
        eng = c.create_token("user", role="engineer")
        self.put(c, eng, enabled=True, poll_interval_s=POLL_S, upload_interval_s=10)
        agent = self.start_agent(c, tok)
        self.assertTrue(wait_for(lambda: "do_sample" in prog_names(agent.pid), 30), agent.log())
        self.assertNotIn("offcpu_switch", prog_names(agent.pid))
        self.assertNotIn("offcpu_wakeup", prog_names(agent.pid))
        # turned on: the object is loaded again with the hooks, within a poll or two
        self.put(c, eng, offcpu_enabled=True)
        self.assertTrue(wait_for(lambda: "offcpu_switch" in prog_names(agent.pid), 30),
                        agent.log())
        self.put(c, eng, offcpu_enabled=False)
        self.assertTrue(wait_for(lambda: "off-CPU time off" in agent.log(), 30), agent.log())
        self.assertEqual(agent.stop(), 0)

    def test_refused_hook_is_named_in_healthz_and_cpu_goes_on(self):
        c = self.start_collector()
        tok = c.create_token("collector")
        eng = c.create_token("user", role="engineer")
        self.put(c, eng, enabled=True, offcpu_enabled=True, poll_interval_s=POLL_S,
                 upload_interval_s=10)
        port = free_port()
        os.environ["ROOTTRACE_OFFCPU_TRACEPOINT"] = "no_such_tracepoint"
        try:
            agent = self.start_agent(c, tok, extra_args=["--listen", "127.0.0.1:%d" % port])
        finally:
            del os.environ["ROOTTRACE_OFFCPU_TRACEPOINT"]
        ok = wait_for(lambda: health(port)[1].get("offcpu") == "unavailable", 30)
        self.assertTrue(ok, agent.log())
        status, doc = health(port)
        self.assertEqual(status, 200, doc)
        self.assertEqual(doc["state"], "sampling", doc)
        self.assertIn("off-CPU time unavailable", doc["reason"])
        self.assertIn("scheduler hooks", doc["reason"])
        self.assertTrue(wait_for(lambda: c.stored_total(None, "cpu") > 0, 40, step=1),
                        agent.log())
        self.assertEqual(agent.stop(), 0)


if __name__ == "__main__":
    harness.main()
