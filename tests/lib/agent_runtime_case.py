# SPDX-License-Identifier: Apache-2.0
# The interpreter `run` suites' shared parts (tests/integration/test_agent_python.py,
# test_agent_ruby.py, test_agent_php.py): a hot script started in its own service's cgroup, an
# agent shipping to a fresh collector until the service's CPU is stored, and the call-tree search.
import os
import subprocess

from cleanup_case import CleanupTestCase
from collector_fixture import Collector
from test_agent_daemon import POLL_S, Agent, CgroupDirs, wait_for  # tests/integration/
from test_agent_metrics import free_port


def find(node, name):
    """The first node of the call tree named name (depth first), or None."""
    if node.get("name") == name:
        return node
    for child in node.get("children") or []:
        found = find(child, name)
        if found:
            return found
    return None


class AgentRuntimeCase(CleanupTestCase):
    def ship(self, argv, script_name, script, service):
        """Starts argv + [script, written to script_name] in service's systemd unit cgroup and
        an agent (with --listen) against a fresh collector whose config turns profiling on;
        waits until more than 3 s of the service's CPU is stored. Returns (collector, a
        viewer's token, agent, the agent's /metrics port)."""
        cg = CgroupDirs()
        self.cleanups.append(cg.cleanup)
        unit_dir = cg.make("system.slice/%s.service" % service)
        src = os.path.join(self.tmp, script_name)
        with open(src, "w") as f:
            f.write(script)
        proc = subprocess.Popen(argv + [src])
        self.cleanups.append(lambda: (proc.kill(), proc.wait()))
        cg.move(proc.pid, unit_dir)

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
        ok = wait_for(lambda: len({r[4] for r in c.stored_rows(service, "cpu")}) >= 1
                      and c.stored_total(service, "cpu") > 3e9, 60, step=1)
        self.assertTrue(ok, agent.log())
        return c, viewer, agent, port
