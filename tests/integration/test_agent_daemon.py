# SPDX-License-Identifier: Apache-2.0
# `roottrace-agent run` against a real collector on 127.0.0.1 (root: real BPF, real cgroups):
# off until enabled, on within one poll, off detaches everything; the agent's own clamp; fail
# closed when the config is unreachable or invalid; services from cgroups and a kubelet
# /pods fixture; an outage queues profiles that arrive once; self-report at the collector.
import http.server
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request
import uuid

import harness
import pprof_py
from cleanup_case import CleanupTestCase
from collector_fixture import Collector, build_dir

SRC = os.environ.get("ROOTTRACE_SRC", os.getcwd())
AGENT = os.path.join(build_dir(), "roottrace-agent")
CGROUP_ROOT = "/sys/fs/cgroup/cpu"
POLL_S = 2  # served poll interval in these tests
# Upload windows of the agents in these tests (--test-upload-interval-s, a test-only knob:
# docs/agent.md): the served interval stays 10 s, the agent ships every WINDOW_S seconds.
WINDOW_S = 3
RSS_CAP_KB = 40 * 1024


def wait_for(cond, timeout, step=0.2):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(step)
    return cond()


def fd_kinds(pid):
    """Counts of the agent's perf-event and BPF file descriptors."""
    kinds = {"perf_event": 0, "bpf": 0}
    try:
        names = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return kinds
    for fd in names:
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if target == "anon_inode:[perf_event]":
            kinds["perf_event"] += 1
        elif target.startswith("anon_inode:bpf"):
            kinds["bpf"] += 1
    return kinds


def prog_ids_of(pid):
    """Ids of the BPF programs the agent holds (fdinfo of its bpf-prog fds)."""
    ids = set()
    try:
        names = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return ids
    for fd in names:
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)) != "anon_inode:bpf-prog":
                continue
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                m = re.search(r"prog_id:\s+(\d+)", f.read())
        except OSError:
            continue
        if m:
            ids.add(int(m.group(1)))
    return ids


def loaded_prog_ids():
    """Every BPF program loaded in the kernel (bpftool prog show)."""
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                         timeout=20).stdout
    return {p["id"] for p in json.loads(out or "[]")}


def sampling(pid):
    return fd_kinds(pid)["perf_event"] > 0


def fully_off(pid):
    k = fd_kinds(pid)
    return k["perf_event"] == 0 and k["bpf"] == 0


class Stub:
    """A small HTTP server on 127.0.0.1: serves a config (dict or raw bytes) and kubelet /pods,
    records profile POSTs, or forwards everything to an upstream collector (counting POSTs)."""

    def __init__(self, port=0, config=None, pods_file=None):
        self.config = config
        self.pods_file = pods_file
        self.upstream = None  # port of a real collector to forward to
        self.posts = []       # (query dict, body bytes, status)
        self.config_gets = 0  # config answers served
        self.lock = threading.Lock()
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def reply(self, status, body=b"", headers=None):
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def forward(self, body):
                if stub.upstream is None:
                    return 503, b'{"error": "collector down"}'
                req = urllib.request.Request(
                    "http://127.0.0.1:%d%s" % (stub.upstream, self.path), data=body,
                    method=self.command,
                    headers={k: v for k, v in self.headers.items()
                             if k.lower() in ("authorization", "content-type")})
                try:
                    with urllib.request.urlopen(req, timeout=20) as r:
                        return r.status, r.read()
                except urllib.error.HTTPError as e:
                    return e.code, e.read()
                except OSError:
                    return 502, b'{"error": "bad gateway"}'

            def do_GET(self):
                path = self.path.split("?")[0]
                if path == "/pods" and stub.pods_file:
                    with open(stub.pods_file, "rb") as f:
                        return self.reply(200, f.read())
                if stub.config is None:  # proxy mode: 503 while the collector is down
                    return self.reply(*self.forward(None))
                if path == "/api/apm/config":
                    with stub.lock:
                        stub.config_gets += 1
                    cfg = stub.config
                    body = cfg if isinstance(cfg, bytes) else json.dumps(cfg).encode()
                    return self.reply(200, body, {"Content-Type": "application/json"})
                self.reply(404)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query))
                if stub.config is not None and stub.upstream is None:
                    status, out = 200, b"{}"
                else:
                    status, out = self.forward(body)
                with stub.lock:
                    stub.posts.append((query, body, status))
                self.reply(status, out)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def accepted(self):
        with self.lock:
            return [(q, b) for q, b, s in self.posts if 200 <= s < 300]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Agent:
    def __init__(self, tmp, collector_url, token, config=None, spool=False, level="debug",
                 node="rt-test-node", extra_args=(), window_s=None):
        self.tmp = tmp
        self.log_path = os.path.join(tmp, "agent-%d.log" % time.monotonic_ns())
        token_file = os.path.join(tmp, "token")
        with open(token_file, "w") as f:
            f.write(token + "\n")
        args = [AGENT, "run", "--collector", collector_url, "--token-file", token_file,
                "--node-name", node, "--log-level", level]
        if config is not None:
            cfg_path = os.path.join(tmp, "agent.json")
            with open(cfg_path, "w") as f:
                json.dump(config, f)
            args += ["--config", cfg_path]
        if spool:
            args += ["--spool-dir", os.path.join(tmp, "spool")]
        if window_s:  # shorter windows than the served interval (tests only)
            args += ["--test-upload-interval-s", str(window_s)]
        args += list(extra_args)
        self.log_file = open(self.log_path, "w")
        self.proc = subprocess.Popen(args, stdout=self.log_file, stderr=subprocess.STDOUT)
        self.pid = self.proc.pid

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def stop(self, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.log_file.close()
        return rc

    def rss_peak_kb(self):
        with open("/proc/%d/status" % self.pid) as f:
            m = re.search(r"VmHWM:\s+(\d+) kB", f.read())
        return int(m.group(1))


def busy_process():
    """A CPU-bound shell loop (comm "sh")."""
    return subprocess.Popen(["sh", "-c", "while :; do :; done"])


class CgroupDirs:
    """cgroup v1 directories under /sys/fs/cgroup/cpu created by the test, removed after."""

    def __init__(self):
        self.created = []

    def make(self, rel):
        path = CGROUP_ROOT
        for part in rel.strip("/").split("/"):
            path = os.path.join(path, part)
            if not os.path.isdir(path):
                os.mkdir(path)
                self.created.append(path)
        return path

    @staticmethod
    def move(pid, path):
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def cleanup(self):
        for path in reversed(self.created):
            try:
                os.rmdir(path)
            except OSError:
                pass


def enabled_config(**kw):
    cfg = {"environment": "production", "enabled": True, "sample_rate_hz": 99,
           "upload_interval_s": 10, "poll_interval_s": POLL_S, "services": {}}
    cfg.update(kw)
    return cfg


@unittest.skipUnless(os.geteuid() == 0, "needs root (BPF, perf events, cgroups)")
class AgentDaemonTest(CleanupTestCase):
    tmp_prefix = "rt-agent-daemon-"

    def start_agent(self, url, token, **kw):
        kw.setdefault("window_s", WINDOW_S)
        agent = Agent(self.tmp, url, token, **kw)
        self.cleanups.append(agent.stop)
        return agent

    def start_collector(self):
        c = Collector()
        self.cleanups.append(c.close)
        return c

    def start_stub(self, **kw):
        s = Stub(**kw)
        self.cleanups.append(s.close)
        return s

    def start_busy(self):
        p = busy_process()
        self.cleanups.append(lambda: (p.kill(), p.wait()))
        return p

    def put_config(self, c, engineer, **doc):
        body = {"environment": "production", "service": None}
        body.update(doc)
        status, resp = c.put_json("/api/apm/config", engineer, body)
        self.assertEqual(status, 200, resp)

    # --------------------------------------------------------------------------------
    def test_off_until_enabled_on_within_one_poll_off_detaches(self):
        c = self.start_collector()
        tok = c.create_token("collector")
        eng = c.create_token("user", role="engineer")
        self.put_config(c, eng, enabled=False, poll_interval_s=POLL_S, upload_interval_s=10)
        agent = self.start_agent(c.url(""), tok)
        self.assertTrue(wait_for(lambda: "profiling is off" in agent.log(), 10), agent.log())
        self.assertTrue(fully_off(agent.pid), fd_kinds(agent.pid))

        self.put_config(c, eng, enabled=True, sample_rate_hz=99)
        # within one poll (plus the time to load BPF)
        self.assertTrue(wait_for(lambda: sampling(agent.pid), POLL_S + 5), agent.log())
        self.assertEqual(fd_kinds(agent.pid)["perf_event"], os.cpu_count())
        progs = prog_ids_of(agent.pid)
        self.assertTrue(progs, "the agent holds no BPF program while sampling")
        self.assertTrue(progs <= loaded_prog_ids())
        # the test knob: windows of WINDOW_S, not the served 10 s, and said so at start
        self.assertIn("uploading every %d s" % WINDOW_S, agent.log())
        self.assertIn("test knob --test-upload-interval-s %d" % WINDOW_S, agent.log())

        # a rate change applies within one poll, in the same process, still sampling
        self.put_config(c, eng, sample_rate_hz=50)
        self.assertTrue(wait_for(lambda: "sample rate changed: 99 -> 50 Hz" in agent.log(),
                                 POLL_S + 5), agent.log())
        self.assertIsNone(agent.proc.poll())
        self.assertTrue(sampling(agent.pid))
        progs = prog_ids_of(agent.pid)

        self.put_config(c, eng, enabled=False)
        self.assertTrue(wait_for(lambda: fully_off(agent.pid), POLL_S + 5), fd_kinds(agent.pid))
        # unloaded, not merely detached: bpftool no longer lists the agent's programs
        self.assertTrue(wait_for(lambda: not progs & loaded_prog_ids(), 5))
        self.assertIn("profiling disabled", agent.log())
        self.assertEqual(agent.stop(), 0)

    def test_per_service_rate_it_cannot_apply_is_logged_once_per_value(self):
        """The node agent samples every CPU at the environment's rate: a service's own rate or
        upload interval is not applied, and it says so once per service and value, not per
        poll (the collector's answers say the same, test_contract_gaps)."""
        services = {"checkout": {"enabled": True, "sample_rate_hz": 20, "upload_interval_s": 10},
                    "cart": {"enabled": True, "sample_rate_hz": 99, "upload_interval_s": 10}}
        stub = self.start_stub(config=enabled_config(services=services))
        agent = self.start_agent(stub.url(), "rtc_stub")
        polls = lambda n: lambda: stub.config_gets >= n  # noqa: E731
        self.assertTrue(wait_for(polls(4), 30), agent.log())
        log = agent.log()
        self.assertEqual(log.count("service checkout: sample_rate_hz=20 is not applied"), 1,
                         log)
        self.assertNotIn("service cart:", log)  # the environment's values: nothing to say
        self.assertNotIn("upload_interval_s=10 is not applied", log)
        services["checkout"]["sample_rate_hz"] = 30
        stub.config = enabled_config(services=services)
        self.assertTrue(wait_for(polls(stub.config_gets + 3), 30), agent.log())
        log = agent.log()
        self.assertEqual(log.count("service checkout: sample_rate_hz=30 is not applied"), 1,
                         log)
        self.assertEqual(agent.stop(), 0)

    def test_served_10000_hz_is_sampled_at_200(self):
        stub = self.start_stub(config=enabled_config(sample_rate_hz=10000))
        self.start_busy()
        # one service per process name (the earlier default), so "sh" is a service of its own
        agent = self.start_agent(stub.url(), "rtc_stub", config={"fallback": "process"})
        got = wait_for(lambda: [q for q, _ in stub.accepted() if q.get("service") == "sh"], 25)
        self.assertTrue(got, agent.log())
        self.assertEqual(got[0]["sample_rate_hz"], "200")
        body = [b for q, b in stub.accepted() if q.get("service") == "sh"][0]
        prof = pprof_py.parse(body)
        self.assertEqual(prof.period, 1000000000 // 200)
        # A CPU-bound process: CPU nanoseconds per sample ~ 1/200 s (it would be ~10 ms at
        # 99 Hz, ~0.1 ms at 10,000 Hz).
        count = prof.total("samples")
        per_sample_ms = prof.total("cpu") / count / 1e6
        # one WINDOW_S window: ~600 samples on a free core (was > 100 of ~2,000 at 10 s)
        self.assertGreater(count, 10 * WINDOW_S)
        self.assertTrue(3.5 < per_sample_ms < 7.5, per_sample_ms)
        # the clamp is logged once, although the 10,000 Hz was served at every poll
        time.sleep(POLL_S * 2)
        self.assertEqual(agent.log().count("sample_rate_hz=10000"), 1, agent.log())
        self.assertIn("sampling at 200 Hz", agent.log())

    def test_unreachable_or_invalid_config_means_no_sampling_until_valid(self):
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # a free port: nothing listens there yet
        probe.close()
        agent = self.start_agent("http://127.0.0.1:%d" % port, "rtc_stub")
        self.assertTrue(wait_for(lambda: "config unreachable" in agent.log(), 10), agent.log())
        time.sleep(3)
        self.assertTrue(fully_off(agent.pid), fd_kinds(agent.pid))

        bad = enabled_config()
        bad["sample_rate_hz"] = "99"
        stub = self.start_stub(port=port, config=bad)
        self.assertTrue(wait_for(lambda: "sample_rate_hz" in agent.log(), 15), agent.log())
        time.sleep(1)
        self.assertTrue(fully_off(agent.pid), fd_kinds(agent.pid))

        stub.config = enabled_config()
        self.assertTrue(wait_for(lambda: sampling(agent.pid), 15), agent.log())

        # unreachable later: sampling stops after the grace period (2 polls here)
        stub.close()
        self.cleanups.remove(stub.close)
        self.assertTrue(wait_for(lambda: fully_off(agent.pid), 2 * POLL_S + 10), agent.log())
        self.assertIn("fail closed", agent.log())
        self.assertEqual(agent.stop(), 0)

    def test_cgroups_land_under_their_services(self):
        cg = CgroupDirs()
        self.cleanups.append(cg.cleanup)
        pod_uid = str(uuid.uuid4())
        container_id = uuid.uuid4().hex + uuid.uuid4().hex
        pods = {"kind": "PodList", "items": [{
            "metadata": {"name": "rt-test-cart-0", "namespace": "shop", "uid": pod_uid,
                         "labels": {"app.kubernetes.io/name": "rt-test-cart",
                                    "app.kubernetes.io/version": "v9.9"}},
            "status": {"containerStatuses": [
                {"name": "cart", "containerID": "containerd://" + container_id}]}}]}
        pods_file = os.path.join(self.tmp, "pods.json")
        with open(pods_file, "w") as f:
            json.dump(pods, f)
        kubelet = self.start_stub(pods_file=pods_file)

        unit_dir = cg.make("system.slice/rt-test-checkout.service")
        off_dir = cg.make("system.slice/rt-test-disabled.service")
        pod_dir = cg.make("kubepods/burstable/pod%s/%s" % (pod_uid, container_id))
        # processes die before their cgroups are removed (cleanups run in reverse)
        w1, w2, w3 = self.start_busy(), self.start_busy(), self.start_busy()
        cg.move(w1.pid, unit_dir)
        cg.move(w2.pid, pod_dir)
        cg.move(w3.pid, off_dir)

        c = self.start_collector()
        tok = c.create_token("collector")
        eng = c.create_token("user", role="engineer")
        viewer = c.create_token("user", role="viewer")
        self.put_config(c, eng, enabled=True, poll_interval_s=POLL_S, upload_interval_s=10)
        self.put_config(c, eng, service="rt-test-disabled", enabled=False)
        agent = self.start_agent(c.url(""), tok,
                                 config={"kubelet_url": kubelet.url() + "/pods"})
        ok = wait_for(lambda: c.stored_total("rt-test-checkout", "cpu") > 0
                      and c.stored_total("rt-test-cart", "cpu") > 0, 30, step=1)
        self.assertTrue(ok, agent.log())
        deployments = {r[2] for r in c.stored_rows("rt-test-cart", "cpu")}
        self.assertEqual(deployments, {"v9.9"})
        # a service switched off in the config is not shipped
        self.assertEqual(c.stored_total("rt-test-disabled", "cpu"), 0)

        # the self-report of the upload is visible through the services endpoint
        status, doc = c.get_json("/api/apm/services", viewer, params={"time_range": "1h"})
        self.assertEqual(status, 200, doc)
        services = doc["services"]
        if isinstance(services, dict):
            services = list(services.values())
        cart = [s for s in services if s["name"] == "rt-test-cart"][0]
        self.assertTrue(cart["agents"], cart)
        report = cart["agents"][0]
        self.assertEqual(report["node"], "rt-test-node")
        self.assertGreater(report["window_s"], 0)
        self.assertGreater(report["processes"], 0)
        self.assertIn("cpu_s", report)
        self.assertIn("bpf_s", report)
        # the unwinder's figures arrive from a real agent: every one sent, none null
        self.assertIsNone(report["unwind_reason"], report)
        self.assertIsInstance(report["unwind_tables"], int, report)
        self.assertIsInstance(report["unwind_build_ms"], float, report)
        self.assertEqual(agent.stop(), 0)

    def test_short_lived_process_lands_under_its_cgroups_service(self):
        """~100 ms processes in a systemd-unit-like cgroup that exit long before the upload:
        their cgroup was captured at first sight, so they land under the unit's service,
        not under their process name."""
        cg = CgroupDirs()
        self.cleanups.append(cg.cleanup)
        unit_dir = cg.make("system.slice/rt-test-brief.service")
        stub = self.start_stub(config=enabled_config())
        agent = self.start_agent(stub.url(), "rtc_stub")
        self.assertTrue(wait_for(lambda: sampling(agent.pid), 15), agent.log())
        time.sleep(1)
        helper = os.path.join(build_dir(), "tests", "helpers", "short_lived")
        for _ in range(5):  # ~50 samples in all, each process gone within ~100 ms
            subprocess.run(["sh", "-c", 'echo $$ > "$1/cgroup.procs" && exec "$2" 100', "sh",
                            unit_dir, helper], check=True, timeout=30)
        got = wait_for(lambda: [b for q, b in stub.accepted()
                                if q.get("service") == "rt-test-brief"], 25)
        self.assertTrue(got, [q.get("service") for q, _ in stub.accepted()])
        samples = [smp for b in got for smp in pprof_py.parse(b).samples]
        self.assertTrue(any("short_lived_hot" in smp.stack for smp in samples), samples[:3])
        # (the sh that moved itself into the cgroup may be sampled there before its exec)
        comms = {smp.labels.get("comm") for smp in samples}
        self.assertIn("short_lived", comms)
        self.assertLessEqual(comms, {"short_lived", "sh"})
        self.assertFalse([q for q, _ in stub.accepted() if q.get("service") == "short_lived"],
                         "a short-lived process was tagged with its process name")
        self.assertEqual(agent.stop(), 0)

    def test_process_sampled_before_it_moves_and_execs_is_retagged_at_exec(self):
        """What a runtime does (and Python's preexec_fn): the child runs a while in its
        parent's cgroup, where it is first sampled and its cgroup read, then moves into its
        unit and execs. From the exec on, its samples are the unit's service and are named
        from the new image: the exec hook re-reads both (it needs no tracefs)."""
        cg = CgroupDirs()
        self.cleanups.append(cg.cleanup)
        unit_dir = cg.make("system.slice/rt-test-execd.service")
        stub = self.start_stub(config=enabled_config())
        agent = self.start_agent(stub.url(), "rtc_stub")
        self.assertTrue(wait_for(lambda: sampling(agent.pid), 15), agent.log())
        self.assertNotIn("exec hook did not attach", agent.log())
        time.sleep(1)
        helper = os.path.join(build_dir(), "tests", "helpers", "short_lived")
        # ~0.4 s of shell loop in our cgroup first: dozens of samples before the move
        script = ('i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; '
                  'echo $$ > "$1/cgroup.procs" && exec "$2" 700')
        subprocess.run(["sh", "-c", script, "sh", unit_dir, helper], check=True, timeout=30)
        uploads = lambda: [b for q, b in stub.accepted()  # noqa: E731
                           if q.get("service") == "rt-test-execd"]
        got = wait_for(uploads, 25)
        self.assertTrue(got, [q.get("service") for q, _ in stub.accepted()])
        # the 0.7 s may straddle a window end: its samples arrive in one upload or two
        hot_total = lambda: sum(smp.values[0] for b in uploads()  # noqa: E731
                                for smp in pprof_py.parse(b).samples
                                if "short_lived_hot" in smp.stack)
        wait_for(lambda: hot_total() > 20, 2 * WINDOW_S + 5)
        got = uploads()
        samples = [smp for b in got for smp in pprof_py.parse(b).samples]
        hot = sum(smp.values[0] for smp in samples if "short_lived_hot" in smp.stack)
        self.assertGreater(hot, 20, [smp.stack for smp in samples][:3])
        self.assertEqual({smp.labels.get("comm") for smp in samples
                          if "short_lived_hot" in smp.stack}, {"short_lived"})
        # nothing of the exec'd image stayed under the shell's fallback service
        elsewhere = [q.get("service") for q, b in stub.accepted()
                     if q.get("service") != "rt-test-execd"
                     and any("short_lived_hot" in smp.stack for smp in pprof_py.parse(b).samples)]
        self.assertEqual(elsewhere, [])
        self.assertEqual(agent.stop(), 0)

    def test_reused_pid_is_a_new_process_not_the_dead_one(self):
        """Pids wrap within minutes on a busy host. A process is sampled, stays alive (asleep)
        past a window's end so its pid is kept, and exits; a forked (not exec'd) process then
        gets the same pid in another unit. BPF tells them apart by start time, so the new one
        lands under its own unit, not under the dead one's."""
        cg = CgroupDirs()
        self.cleanups.append(cg.cleanup)
        first_dir = cg.make("system.slice/rt-test-pid-first.service")
        second_dir = cg.make("system.slice/rt-test-pid-second.service")
        stub = self.start_stub(config=enabled_config())
        agent = self.start_agent(stub.url(), "rtc_stub")
        self.assertTrue(wait_for(lambda: sampling(agent.pid), 15), agent.log())
        helper = os.path.join(build_dir(), "tests", "helpers", "fork_at_pid")
        # 1 s on CPU, then asleep across at least one window end, then gone
        first = subprocess.run([helper, "0", first_dir, "1000", str((WINDOW_S + 1) * 1000)],
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(first.returncode, 0, first.stderr)
        pid = int(first.stdout)
        self.assertTrue(wait_for(lambda: [q for q, _ in stub.accepted()
                                          if q.get("service") == "rt-test-pid-first"], 15),
                        "services %s\n%s" % (sorted({q.get("service") for q, _ in
                                                      stub.accepted()}), agent.log()[-4000:]))
        for _ in range(5):  # another process may take the pid first: try again
            second = subprocess.run([helper, str(pid), second_dir, "1500", "0"],
                                    capture_output=True, text=True, timeout=60)
            self.assertEqual(second.returncode, 0, second.stderr)
            if int(second.stdout) == pid:
                break
        else:
            self.skipTest("could not get pid %d again" % pid)
        seconds = lambda: [b for q, b in stub.accepted()  # noqa: E731
                           if q.get("service") == "rt-test-pid-second"]
        got = wait_for(seconds, 25)
        self.assertTrue(got, [q.get("service") for q, _ in stub.accepted()])
        # its 1.5 s may straddle a window end: its samples arrive in one upload or two
        hot_total = lambda: sum(smp.values[0] for b in seconds()  # noqa: E731
                                for smp in pprof_py.parse(b).samples
                                if "reused_pid_hot" in smp.stack)
        wait_for(lambda: hot_total() > 50, 2 * WINDOW_S + 5)
        hot = hot_total()
        self.assertGreater(hot, 50)
        firsts = [b for q, b in stub.accepted() if q.get("service") == "rt-test-pid-first"]
        first_hot = sum(smp.values[0] for b in firsts for smp in pprof_py.parse(b).samples
                        if "reused_pid_hot" in smp.stack)
        self.assertLess(first_hot, 150, "the second process was counted under the first's "
                        "unit (1 s of CPU is ~99 samples)")
        self.assertEqual(agent.stop(), 0)

    def test_outage_queues_profiles_that_arrive_once(self):
        c = self.start_collector()
        tok = c.create_token("collector")
        eng = c.create_token("user", role="engineer")
        self.put_config(c, eng, enabled=True, poll_interval_s=POLL_S, upload_interval_s=10)
        proxy = self.start_stub()
        proxy.upstream = c.port
        self.start_busy()
        # grace 120 s: keep sampling through the outage; short backoff to keep the test short
        agent = self.start_agent(proxy.url(), tok, spool=True,
                                 config={"grace_s": 120, "upload_backoff_max_s": 4})
        self.assertTrue(wait_for(lambda: proxy.accepted(), 25), agent.log())

        proxy.upstream = None  # the collector goes away...
        c.stop()
        time.sleep(4 * WINDOW_S + 2)  # four windows queued (was 35 s: three 10 s windows)
        self.assertTrue(sampling(agent.pid), "sampling stopped during the grace period")
        self.assertIn("unreachable for uploads", agent.log())
        c.start()  # ...and comes back on another port behind the same address
        proxy.upstream = c.port
        self.assertTrue(wait_for(lambda: "uploads recovered" in agent.log(), 20), agent.log())
        rss = agent.rss_peak_kb()
        self.assertEqual(agent.stop(), 0)  # SIGTERM: final upload, then exit 0

        queued = re.findall(r"queued profile (\S+):", agent.log())
        delivered = [q["upload_id"] for q, _ in proxy.accepted()]
        self.assertGreater(len(queued), 3)
        self.assertEqual(sorted(delivered), sorted(queued), "each profile exactly once")
        self.assertEqual(len(set(delivered)), len(delivered))
        self.assertLess(rss, RSS_CAP_KB)
        self.assertEqual(os.listdir(os.path.join(self.tmp, "spool")), [])

    def test_test_interval_knob_is_bounded(self):
        """--test-upload-interval-s only shortens windows, to 1-10 s: anything else is refused
        at start, naming the option."""
        token = os.path.join(self.tmp, "tok")
        with open(token, "w") as f:
            f.write("rtc_stub\n")
        for value in ("0", "11", "3600", "-1", "3s", ""):
            r = subprocess.run([AGENT, "run", "--collector", "http://127.0.0.1:1",
                                "--token-file", token, "--test-upload-interval-s", value],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 2, (value, r.stderr))
            self.assertIn("--test-upload-interval-s %s: expected 1 to 10" % value, r.stderr)
        # not advertised to operators
        r = subprocess.run([AGENT, "run", "--help"], capture_output=True, text=True, timeout=30)
        self.assertNotIn("test-upload-interval", r.stdout + r.stderr)

    def test_missing_or_empty_token_file_exits_non_zero(self):
        for content in (None, "", "\n"):
            path = os.path.join(self.tmp, "tok")
            if os.path.exists(path):
                os.unlink(path)
            if content is not None:
                with open(path, "w") as f:
                    f.write(content)
            r = subprocess.run([AGENT, "run", "--collector", "http://127.0.0.1:1",
                                "--token-file", path], capture_output=True, text=True,
                               timeout=30)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("token file", r.stderr)


if __name__ == "__main__":
    harness.main()
