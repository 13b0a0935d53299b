# SPDX-License-Identifier: Apache-2.0
# Ruby frames through `roottrace-agent run` against a real collector on 127.0.0.1 (root: real
# BPF, real cgroups, Debian's ruby3.1 started without flags): the service's top list and flame
# graph name the Ruby methods (Class#method, Class.method), hot under caller, and /metrics
# counts the process and its frames.
import os
import unittest

import harness
from agent_runtime_case import AgentRuntimeCase, find
from test_agent_metrics import P, get

RUBY = "/usr/bin/ruby3.1"
SERVICE = "rt-test-rubyhot"
HOT = """
class Ledger
  def hot_fn(n)
    s = 0
    i = 0
    while i < n
      s += i % 13
      i += 1
    end
    s
  end

  def self.caller_fn
    book = new
    loop { book.hot_fn(200_000) }
  end
end

Ledger.caller_fn
"""
HOT_FN = "Ledger#hot_fn"
CALLER_FN = "Ledger.caller_fn"


@unittest.skipUnless(os.geteuid() == 0, "needs root (BPF, perf events, cgroups)")
@unittest.skipUnless(os.access(RUBY, os.X_OK), RUBY + " not installed")
class AgentRubyTest(AgentRuntimeCase):
    tmp_prefix = "rt-agent-ruby-"

    def test_run_ships_ruby_methods_to_the_collector(self):
        c, viewer, agent, port = self.ship([RUBY], "hot.rb", HOT, SERVICE)

        params = {"service": SERVICE, "profile_type": "cpu", "time_range": "1h"}
        status, top = c.get_json("/api/apm/profiles/top", viewer, params=params)
        self.assertEqual(status, 200, top)
        totals = {f["name"]: f["total_share"] for f in top["functions"]}
        self.assertGreaterEqual(totals.get(HOT_FN, 0), 80, top)
        # the caller sits above Kernel#loop's C frames (rb_rescue2): once, on a machine at
        # load 20-27, a quarter of the stacks ended below them (no _start either; likely
        # taken before libruby's unwind table was loaded); the flame graph checks the order
        self.assertGreaterEqual(totals.get(CALLER_FN, 0), 50, top)
        self.assertGreaterEqual(totals.get("block in " + CALLER_FN, 0), 80, top)
        # vm_exec_core's own frame is left only in samples taken before the process's unwind
        # tables were loaded (the kernel's frame-pointer walk, which reads no Ruby frames)
        self.assertLess(totals.get("rb_vm_exec", 0), 20, top)

        status, flame = c.get_json("/api/apm/profiles/flamegraph", viewer, params=params)
        self.assertEqual(status, 200, flame)
        caller = find(flame["root"], CALLER_FN)
        self.assertIsNotNone(caller, flame)
        # the block loop yields to sits between them
        block = find(caller, "block in " + CALLER_FN)
        self.assertIsNotNone(block, caller)
        hot = [ch for ch in block.get("children") or [] if ch["name"] == HOT_FN]
        self.assertTrue(hot, block)
        self.assertGreaterEqual(hot[0]["total"], 0.9 * block["total"])

        status, _, body = get(port, "/metrics")
        self.assertEqual(status, 200)
        attached = [l for l in body.splitlines()
                    if l.startswith(P + 'ruby_processes_total{outcome="attached"} ')]
        self.assertTrue(attached and float(attached[0].split()[1]) >= 1, body)
        read = [l for l in body.splitlines()
                if l.startswith(P + 'ruby_names_total{result="read"} ')]
        self.assertTrue(read and float(read[0].split()[1]) >= 3, body)
        frames = [l for l in body.splitlines() if l.startswith(P + "ruby_frames_total ")]
        self.assertTrue(frames and float(frames[0].split()[1]) > 0, body)
        self.assertEqual(agent.stop(), 0)


if __name__ == "__main__":
    harness.main()
