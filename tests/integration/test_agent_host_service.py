# SPDX-License-Identifier: Apache-2.0
# Processes outside any service cgroup (a shell, sleep, grep, a CPU spinner, kernel threads,
# the agent itself) with a real agent (real BPF, cgroup v1 directories made here) and a real
# collector: one "host" service per node, one upload of it per interval, the process name as
# the root frame of its stacks, kernel threads under one "[kernel threads]" root; rules by
# process name, executable and cgroup path move a process into its named service; a unit's
# own service is unchanged; bad rules are refused at start with the field named.
import ctypes
import glob
import os
import shutil
import subprocess
import sys
import time
import unittest

import harness
import pprof_py
import test_agent_daemon as daemon
from cleanup_case import CleanupTestCase
from collector_fixture import Collector

STRAYS = ("sh", "sleep", "grep", "rt-spinner")
KERNEL_ROOT = "[kernel threads]"


def named_spinner(name):
    """A CPU-bound Python process whose comm is `name` (prctl PR_SET_NAME)."""
    code = ("import ctypes; ctypes.CDLL(None).prctl(15, %r, 0, 0, 0)\n"
            "while True: pass" % name.encode())
    return subprocess.Popen([sys.executable, "-c", code])


def unit_names_on_this_machine():
    """systemd-unit-like cgroups anywhere in the v1 hierarchies (other suites may run units)."""
    names = set()
    for path in glob.glob("/sys/fs/cgroup/*/**/*.service", recursive=True):
        names.add(os.path.basename(path)[:-len(".service")])
    return names


def root_children(flame):
    return {c["name"]: c for c in flame["root"]["children"]}


@unittest.skipUnless(os.geteuid() == 0, "needs root (BPF, perf events, cgroups)")
class HostServiceTest(CleanupTestCase):
    tmp_prefix = "rt-host-service-"

    def spawn(self, popen):
        self.cleanups.append(lambda: (popen.kill(), popen.wait()))
        return popen

    def collector_behind_proxy(self):
        c = Collector()
        self.cleanups.append(c.close)
        tok = c.create_token("collector")
        eng = c.create_token("user", role="engineer")
        viewer = c.create_token("user", role="viewer")
        status, body = c.put_json("/api/apm/config", eng, {
            "environment": "production", "service": None, "enabled": True,
            "sample_rate_hz": 99, "upload_interval_s": 10, "poll_interval_s": daemon.POLL_S})
        self.assertEqual(status, 200, body)
        proxy = daemon.Stub()  # counts the uploads the collector accepts
        self.cleanups.append(proxy.close)
        proxy.upstream = c.port
        return c, proxy, tok, viewer

    def start_agent(self, url, token, config=None):
        agent = daemon.Agent(self.tmp, url, token, config=config, window_s=daemon.WINDOW_S)
        self.cleanups.append(agent.stop)
        return agent

    def flame(self, c, viewer, service):
        status, doc = c.get_json("/api/apm/profiles/flamegraph", viewer,
                                 params={"service": service, "profile_type": "cpu",
                                         "time_range": "15m"})
        self.assertEqual(status, 200, doc)
        return doc

    def kernel_work(self):
        """Writeback and page-cache work for kernel threads (kworker, jbd2, ksoftirqd...)."""
        path = os.path.join(self.tmp, "writeback")
        with open(path, "wb") as f:
            f.write(os.urandom(2 << 20))
        subprocess.run(["sync"], check=False)
        os.unlink(path)

    # --------------------------------------------------------------------------------
    def test_stray_processes_are_one_host_service_rooted_by_process_name(self):
        cg = daemon.CgroupDirs()
        self.cleanups.append(cg.cleanup)
        unit = "rt-test-host-unit"
        unit_dir = cg.make("system.slice/%s.service" % unit)
        worker = self.spawn(daemon.busy_process())
        cg.move(worker.pid, unit_dir)
        # strays: a busy sh, a shell loop starting sleep and grep, a named CPU spinner
        self.spawn(daemon.busy_process())
        self.spawn(subprocess.Popen(["sh", "-c", "while :; do sleep 0.01; "
                                     "echo x | grep x >/dev/null; done"]))
        self.spawn(named_spinner("rt-spinner"))

        c, proxy, tok, viewer = self.collector_behind_proxy()
        agent = self.start_agent(proxy.url(), tok)

        units_seen = set()

        def ready():
            units_seen.update(unit_names_on_this_machine())
            self.kernel_work()
            if c.stored_total(unit, "cpu") <= 0 or c.stored_total("host", "cpu") <= 0:
                return False
            roots = root_children(self.flame(c, viewer, "host"))
            return {"sh", "rt-spinner", KERNEL_ROOT} <= set(roots)
        self.assertTrue(daemon.wait_for(ready, 90, step=2), agent.log()[-3000:])

        # the services list: the unit's and the host service; none named after a process
        status, doc = c.get_json("/api/apm/services", viewer, params={"time_range": "1h"})
        self.assertEqual(status, 200, doc)
        services = doc["services"]
        services = list(services.values()) if isinstance(services, dict) else services
        names = {s["name"] for s in services}
        self.assertLessEqual({unit, "host"}, names)
        units_seen.update(unit_names_on_this_machine())
        self.assertLessEqual(names - {"host"}, units_seen,
                             "a service that is no unit on this machine")
        uploaded = {q["service"] for q, _ in proxy.accepted()}
        for stray in STRAYS + ("python3", "roottrace-agent", "kworker", "sync"):
            self.assertNotIn(stray, uploaded)
        self.assertFalse([s for s in uploaded if s.startswith(("kworker", "ksoftirqd"))])
        # coverage counts the host service once
        self.assertEqual(len([s for s in services if s["name"] == "host"]), 1)

        # the host service's flame graph splits by process; kernel threads under one root
        roots = root_children(self.flame(c, viewer, "host"))
        self.assertFalse({n for n in roots if n.startswith(("kworker/", "ksoftirqd/"))},
                         sorted(roots))
        kernel = roots[KERNEL_ROOT]
        self.assertTrue(kernel["children"], kernel)
        self.assertNotIn(unit, roots)
        # the unit's own service is unchanged: its stacks are not rooted at a process name
        unit_roots = root_children(self.flame(c, viewer, unit))
        self.assertNotIn("sh", unit_roots)

        # one host upload per interval, each with the comm label and its process as root
        host = [(q, b) for q, b in proxy.accepted() if q["service"] == "host"]
        windows = [q["window_start"] for q, _ in host]
        self.assertEqual(len(windows), len(set(windows)), "more than one host upload per window")
        for q, body in host:
            self.assertEqual(q["node"], "rt-test-node")
            for smp in pprof_py.parse(body).samples:
                root = smp.stack[::-1]
                comm = smp.labels.get("comm")
                if root[0] == KERNEL_ROOT:
                    self.assertEqual(root[1], comm, smp)
                else:
                    self.assertEqual(root[0], comm, smp)
        self.assertEqual(agent.stop(), 0)

    def test_rules_by_executable_name_and_cgroup_move_processes_into_their_services(self):
        cg = daemon.CgroupDirs()
        self.cleanups.append(cg.cleanup)
        unit = "rt-test-ruled-unit"
        unit_dir = cg.make("system.slice/%s.service" % unit)
        batch_dir = cg.make("rt-test-batch/job-1")
        exe = os.path.join(self.tmp, "rt-exe-spin")
        shutil.copy("/bin/sh", exe)
        by_exe = self.spawn(subprocess.Popen([exe, "-c", "while :; do :; done"]))
        self.spawn(named_spinner("rt-comm-spin"))
        in_batch = self.spawn(daemon.busy_process())
        cg.move(in_batch.pid, batch_dir)
        in_unit = self.spawn(daemon.busy_process())
        cg.move(in_unit.pid, unit_dir)
        self.spawn(daemon.busy_process())  # a stray that no rule names

        rules = [{"match": {"exe": exe}, "service": "rt-test-by-exe"},
                 {"match": {"comm": "rt-comm-*"}, "service": "rt-test-by-comm"},
                 {"match": {"cgroup": "/rt-test-batch/*"}, "service": "rt-test-batch"}]
        c, proxy, tok, viewer = self.collector_behind_proxy()
        agent = self.start_agent(proxy.url(), tok, config={"rules": rules})
        wanted = ("rt-test-by-exe", "rt-test-by-comm", "rt-test-batch", unit, "host")
        self.assertTrue(daemon.wait_for(lambda: all(c.stored_total(s, "cpu") > 0 for s in wanted),
                                        90, step=1),
                        ({s: c.stored_total(s, "cpu") for s in wanted}, agent.log()[-3000:]))
        comms = {}
        for q, body in proxy.accepted():
            for smp in pprof_py.parse(body).samples:
                comms.setdefault(q["service"], set()).add(smp.labels.get("comm"))
        self.assertEqual(comms["rt-test-by-exe"], {"rt-exe-spin"})
        self.assertEqual(comms["rt-test-by-comm"], {"rt-comm-spin"})
        self.assertEqual(comms["rt-test-batch"], {"sh"})
        self.assertEqual(comms[unit], {"sh"})
        self.assertNotIn("rt-exe-spin", comms["host"])
        self.assertNotIn("rt-comm-spin", comms["host"])
        self.assertIn("sh", comms["host"])
        self.assertIsNone(by_exe.poll())
        self.assertEqual(agent.stop(), 0)

    def test_bad_rules_are_refused_at_start_naming_the_field(self):
        cfg = os.path.join(self.tmp, "bad.json")
        token = os.path.join(self.tmp, "token")
        with open(token, "w") as f:
            f.write("rtc_unused\n")
        for doc, field in (
                ('{"rules": [{"match": {"exe": "nginx"}, "service": "edge"}]}',
                 "rules[0].match.exe"),
                ('{"rules": [{"match": {"comm": "a"}, "service": "a"}, '
                 '{"match": {"pid": 1}, "service": "b"}]}', "rules[1].match.pid"),
                ('{"rules": [{"match": {"comm": "nginx"}}]}', "rules[0].service")):
            with open(cfg, "w") as f:
                f.write(doc)
            r = subprocess.run([daemon.AGENT, "run", "--collector", "http://127.0.0.1:1",
                                "--token-file", token, "--config", cfg],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn(field, r.stderr)


if __name__ == "__main__":
    harness.main()
