# SPDX-License-Identifier: Apache-2.0
# PHP frames through `roottrace-agent run` against a real collector on 127.0.0.1 (root: real
# BPF, real cgroups, Debian's php8.2-cli started without flags): the service's top list and
# flame graph name the PHP functions, hot under caller, and /metrics counts the process.
import os
import unittest

import harness
from agent_runtime_case import AgentRuntimeCase, find
from test_agent_metrics import P, get

PHP = "/usr/bin/php8.2"
SERVICE = "rt-test-phphot"
HOT = """<?php
function hot_fn($n) { $s = 0; for ($i = 0; $i < $n; $i++) { $s += $i % 13; } return $s; }
function caller_fn() { while (true) { hot_fn(200000); } }
caller_fn();
"""


@unittest.skipUnless(os.geteuid() == 0, "needs root (BPF, perf events, cgroups)")
@unittest.skipUnless(os.access(PHP, os.X_OK), PHP + " not installed")
class AgentPhpTest(AgentRuntimeCase):
    tmp_prefix = "rt-agent-php-"

    def test_run_ships_php_functions_to_the_collector(self):
        c, viewer, agent, port = self.ship([PHP], "hot.php", HOT, SERVICE)

        params = {"service": SERVICE, "profile_type": "cpu", "time_range": "1h"}
        status, top = c.get_json("/api/apm/profiles/top", viewer, params=params)
        self.assertEqual(status, 200, top)
        totals = {f["name"]: f["total_share"] for f in top["functions"]}
        self.assertGreaterEqual(totals.get("hot_fn", 0), 80, top)
        self.assertGreaterEqual(totals.get("caller_fn", 0), 80, top)
        # execute_ex's own frame is left only in samples taken before the process's unwind
        # tables were loaded (the kernel's frame-pointer walk, which reads no PHP frames)
        self.assertLess(totals.get("execute_ex", 0), 20, top)

        status, flame = c.get_json("/api/apm/profiles/flamegraph", viewer, params=params)
        self.assertEqual(status, 200, flame)
        caller = find(flame["root"], "caller_fn")
        self.assertIsNotNone(caller, flame)
        hot = [ch for ch in caller.get("children") or [] if ch["name"] == "hot_fn"]
        self.assertTrue(hot, caller)
        self.assertGreaterEqual(hot[0]["total"], 0.9 * caller["total"])

        status, _, body = get(port, "/metrics")
        self.assertEqual(status, 200)
        attached = [l for l in body.splitlines()
                    if l.startswith(P + 'php_processes_total{outcome="attached"} ')]
        self.assertTrue(attached and float(attached[0].split()[1]) >= 1, body)
        read = [l for l in body.splitlines() if l.startswith(P + 'php_names_total{result="read"} ')]
        self.assertTrue(read and float(read[0].split()[1]) >= 2, body)
        self.assertEqual(agent.stop(), 0)


if __name__ == "__main__":
    harness.main()
