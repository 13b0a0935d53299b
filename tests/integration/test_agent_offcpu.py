# SPDX-License-Identifier: Apache-2.0
# `roottrace-agent run` with off-CPU time against a real collector on 127.0.0.1 (root: real BPF,
# real cgroups): a service with offcpu_enabled uploads its blocked time as `offcpu`, one with it
# off contributes nothing; cpu and offcpu of the same service stay apart in every query and the
# cost route answers null for offcpu; an environment without off-CPU loads no scheduler hook;
# a kernel that refuses the hook is named in /healthz while CPU profiles still arrive; a
# process whose announcement the full ring buffer lost is announced again and recorded; a block
# pending across a detach and re-attach of the hook is dropped, not charged with the time off.
import json
import os
import re
import signal
import subprocess
import sys
import time
import unittest

import harness

import test_agent_daemon
from cleanup_case import CleanupTestCase
from collector_fixture import Collector, build_dir
from test_agent_metrics import free_port, health

WAITS = os.path.join(build_dir(), "tests", "helpers", "offcpu_waits")
# every block kept and no per-CPU cap: the filter sees (and announces) each new process's first
# block, and the recorded process's every block is charged
KEEP_ALL = {"offcpu_sample_every": 1, "offcpu_max_kept_per_cpu_s": 0}
# short-lived processes that each block once (a 1 ms sleep): one announcement each, more than
# the ring buffer holds (256 KiB of 56-byte records: ~4,700) while the agent is stopped
FLOOD = os.path.join(build_dir(), "tests", "helpers", "announce_flood")
# on CPU a fifth of the time: a CPU profile in every upload window
TICK = ("import time\n"
        "while True:\n"
        "    t = time.monotonic()\n"
        "    while time.monotonic() - t < 0.02:\n"
        "        pass\n"
        "    time.sleep(0.08)\n")
# A child forked after the move into the cgroup (its every block is there: the off-CPU filter
# decides a process once, by the cgroup it is in when its first block is announced, and the
# move itself may block) prints its pid, blocks in short nanosleeps until SIGUSR1, says
# "napped", then blocks in one read of stdin until a line comes.
LONG_READ = ("import os, signal, sys, time\n"
             "napping = [True]\n"
             "signal.signal(signal.SIGUSR1, lambda *_: napping.clear())\n"
             "pid = os.fork()\n"
             "if pid:\n"
             "    sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n"
             "print(os.getpid(), flush=True)\n"
             "while napping:\n"
             "    time.sleep(0.05)\n"
             "print('napped', flush=True)\n"
             "sys.stdin.readline()\n")
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
        kw.setdefault("window_s", test_agent_daemon.WINDOW_S)
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

    def spawn_in(self, cgroup_dir, args, **kw):
        """args started inside cgroup_dir (moved between fork and exec: its first block is
        already there)."""
        p = subprocess.Popen(args, preexec_fn=lambda: CgroupDirs.move(os.getpid(), cgroup_dir),
                             **kw)
        self.cleanups.append(lambda: (p.kill(), p.wait()))
        return p

    @staticmethod
    def queued_windows(agent, service):
        """Upload windows the agent has queued so far, counted by the CPU profiles of a service
        that runs on CPU in every window."""
        return len(re.findall(r"queued profile \S+: service=%s type=cpu " % service,
                              agent.log()))

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

    def test_lost_announcement_is_made_again_and_the_process_recorded(self):
        """A process's first kept block announces it (the daemon decides by its service); until
        then it is pending and its blocks are not recorded. An announcement the full ring
        buffer lost used to leave it pending for its lifetime."""
        cg = CgroupDirs()
        self.cleanups.append(cg.cleanup)
        lost_dir = cg.make("system.slice/rt-test-lost.service")
        c = self.start_collector()
        tok = c.create_token("collector")
        eng = c.create_token("user", role="engineer")
        self.put(c, eng, enabled=True, poll_interval_s=POLL_S, upload_interval_s=10)
        self.put(c, eng, service="rt-test-lost", offcpu_enabled=True)
        agent = self.start_agent(c, tok, config=KEEP_ALL)
        self.assertTrue(wait_for(lambda: "off-CPU time on" in agent.log(), 30), agent.log())
        # the agent reads no announcement while stopped: the flood fills the ring buffer, and
        # the split workload's first block (waiting for "go") is announced into a full ring
        os.kill(agent.pid, signal.SIGSTOP)
        try:
            subprocess.run([FLOOD, "8000"], check=True, timeout=300, stdout=subprocess.DEVNULL)
            waits = self.spawn_in(lost_dir, [WAITS, "split", "2", "600"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            self.assertEqual(waits.stdout.readline().strip(), "ready")
            time.sleep(0.5)  # blocked in its read of stdin
            waits.stdin.write("go\n")
            waits.stdin.flush()
            time.sleep(0.5)
        finally:
            os.kill(agent.pid, signal.SIGCONT)
        ok = wait_for(lambda: c.stored_total("rt-test-lost", "offcpu") > 1e9, 60, step=1)
        self.assertTrue(ok, "the process stayed undecided: %s" % agent.log()[-3000:])
        self.assertRegex(agent.log(), r"off-CPU: [1-9]\d* announcements of new processes lost")
        self.assertEqual(agent.stop(), 0)

    def test_block_pending_across_detach_is_not_charged_at_reattach(self):
        """A block kept before the hook is detached has its record left in the kernel; after a
        re-attach its thread's switch-in used to charge it from the old start: the time off
        too. Such records are dropped at attach."""
        cg = CgroupDirs()
        self.cleanups.append(cg.cleanup)
        svc_dir = cg.make("system.slice/rt-test-stale.service")
        tick_dir = cg.make("system.slice/rt-test-tick.service")
        self.spawn_in(tick_dir, [sys.executable, "-c", TICK])
        c = self.start_collector()
        tok = c.create_token("collector")
        eng = c.create_token("user", role="engineer")
        self.put(c, eng, enabled=True, poll_interval_s=POLL_S, upload_interval_s=10)
        self.put(c, eng, service="rt-test-stale", offcpu_enabled=True)
        agent = self.start_agent(c, tok, config=KEEP_ALL)
        self.assertTrue(wait_for(lambda: "off-CPU time on" in agent.log(), 30), agent.log())
        p = self.spawn_in(svc_dir, [sys.executable, "-c", LONG_READ],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        napper = int(p.stdout.readline())
        # its naps arrive: it is decided (allowed), so its read's block will be kept
        self.assertTrue(wait_for(lambda: c.stored_total("rt-test-stale", "offcpu") > 0, 60,
                                 step=1), agent.log())
        os.kill(napper, signal.SIGUSR1)
        self.assertEqual(p.stdout.readline().strip(), "napped")  # now blocked in read
        blocked_at = time.monotonic()
        self.put(c, eng, service="rt-test-stale", offcpu_enabled=False)
        self.assertTrue(wait_for(lambda: "off-CPU time off" in agent.log(), 20), agent.log())

        def windows_pass(count):
            """count more upload windows queued: what was charged before is uploaded."""
            n = self.queued_windows(agent, "rt-test-tick")
            self.assertTrue(wait_for(lambda: self.queued_windows(agent, "rt-test-tick") >=
                                     n + count, 20 * count, step=1), agent.log())

        # off for two windows; every nap is charged and uploaded by then
        windows_pass(2)
        naps_s = c.stored_total("rt-test-stale", "offcpu") / 1e9
        ons = agent.log().count("off-CPU time on")
        self.put(c, eng, service="rt-test-stale", offcpu_enabled=True)
        self.assertTrue(wait_for(lambda: agent.log().count("off-CPU time on") > ons, 20),
                        agent.log())
        p.stdin.write("wake\n")
        p.stdin.flush()
        self.assertEqual(p.wait(timeout=30), 0)
        long_block_s = time.monotonic() - blocked_at
        # the switch-in's charge, had there been one, is uploaded two windows later
        windows_pass(2)
        after_s = c.stored_total("rt-test-stale", "offcpu") / 1e9 - naps_s
        # it blocked across the two windows off: had it been charged, after_s would be that
        self.assertGreater(long_block_s, test_agent_daemon.WINDOW_S)
        self.assertLess(after_s, 0.5, "the read's block (%.1f s) was charged across the detach"
                        % long_block_s)
        self.assertRegex(agent.log(), r"off-CPU: [1-9]\d* blocks pending since before the "
                                      r"hook was detached dropped")
        self.assertEqual(agent.stop(), 0)


if __name__ == "__main__":
    harness.main()
