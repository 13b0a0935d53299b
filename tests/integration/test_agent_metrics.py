# SPDX-License-Identifier: Apache-2.0
# The agent's status listener (`run --listen`, or "listen" in the config file) with real BPF
# against a stub or a real collector on 127.0.0.1 (root): off by default; /healthz says the
# state and fails closed without a config or with failing uploads; /metrics is valid
# Prometheus text whose values move while a CPU-bound process runs; malformed requests 400.
import json
import os
import re
import shutil
import socket
import subprocess
import time
import unittest
import urllib.error
import urllib.request

import harness
import prom_exposition
from cleanup_case import CleanupTestCase
from collector_fixture import Collector
import test_agent_daemon
from test_agent_daemon import AGENT, Agent, enabled_config, sampling, wait_for

P = "roottrace_agent_"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def get(port, path, timeout=10):
    """(status, content type, body text) of GET http://127.0.0.1:port/path."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=timeout) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()
    except OSError:
        return None, None, ""


def health(port, probe=None):
    status, _, body = get(port, "/healthz" + ("?probe=" + probe if probe else ""))
    return status, (json.loads(body) if body else {})


def raw(port, request):
    """Sends raw bytes, returns the answer's status code (None when closed unanswered)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        data = b""
        try:
            while b"\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
    m = re.match(rb"HTTP/1\.[01] (\d{3}) ", data)
    return int(m.group(1)) if m else None


def listening_inodes():
    """Inodes of the TCP sockets in LISTEN state (/proc/net/tcp, tcp6)."""
    inodes = set()
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == "0A":
                        inodes.add(fields[9])
        except OSError:
            pass
    return inodes


def listening_sockets_of(pid):
    listen = listening_inodes()
    found = []
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        m = re.fullmatch(r"socket:\[(\d+)\]", target)
        if m and m.group(1) in listen:
            found.append(target)
    return found


@unittest.skipUnless(os.geteuid() == 0, "needs root (BPF, perf events)")
class AgentMetricsTest(CleanupTestCase):
    tmp_prefix = "rt-agent-metrics-"

    def start_agent(self, url, token="rtc_stub", listen=True, **kw):
        port = free_port()
        if listen:
            kw["extra_args"] = ["--listen", "127.0.0.1:%d" % port]
        kw.setdefault("window_s", test_agent_daemon.WINDOW_S)
        agent = Agent(self.tmp, url, token, **kw)
        self.cleanups.append(agent.stop)
        agent.port = port
        return agent

    # the module, not the class: a TestCase imported by name would run here too
    start_stub = test_agent_daemon.AgentDaemonTest.start_stub
    start_busy = test_agent_daemon.AgentDaemonTest.start_busy

    def scrape(self, agent):
        status, ctype, body = get(agent.port, "/metrics")
        self.assertEqual(status, 200, body)
        self.assertEqual(ctype, "text/plain; version=0.0.4")
        return prom_exposition.parse(body)

    # --------------------------------------------------------------------------------
    def test_listener_is_off_by_default(self):
        stub = self.start_stub(config=enabled_config())
        agent = self.start_agent(stub.url(), listen=False)
        self.assertTrue(wait_for(lambda: sampling(agent.pid), 15), agent.log())
        self.assertEqual(listening_sockets_of(agent.pid), [])
        self.assertNotIn("status listener", agent.log())
        self.assertEqual(agent.stop(), 0)

    def test_healthz_and_metrics_move_while_a_process_burns_cpu(self):
        stub = self.start_stub(config=enabled_config())
        self.start_busy()
        agent = self.start_agent(stub.url())
        ok = wait_for(lambda: health(agent.port)[1].get("state") == "sampling", 20)
        self.assertTrue(ok, "%s\n%s" % (health(agent.port), agent.log()))
        self.assertEqual(health(agent.port)[0], 200)
        self.assertEqual(len(listening_sockets_of(agent.pid)), 1)
        self.assertTrue(wait_for(lambda: prom_exposition.value(
            self.scrape(agent), P + "profiles_uploaded_total"), 25), agent.log())
        first = self.scrape(agent)
        windows = prom_exposition.value(first, P + "windows_total")
        self.assertTrue(wait_for(lambda: prom_exposition.value(
            self.scrape(agent), P + "windows_total") > windows, 15), agent.log())
        self.assertTrue(wait_for(lambda: prom_exposition.value(
            self.scrape(agent), P + "profiles_uploaded_total")
            > prom_exposition.value(first, P + "profiles_uploaded_total"), 10), agent.log())
        second = self.scrape(agent)
        # windows full of samples: still healthy (not "attached but recording nothing")
        self.assertEqual(health(agent.port), (200, health(agent.port)[1]))
        self.assertEqual(health(agent.port)[1]["state"], "sampling")

        def moved(name, **labels):
            a = prom_exposition.value(first, name, **labels)
            b = prom_exposition.value(second, name, **labels)
            self.assertIsNotNone(a, name)
            self.assertGreater(b, a, name)

        for name in ("samples_total", "profiles_uploaded_total", "uploaded_bytes_total",
                     "cpu_seconds_total", "last_upload_timestamp_seconds",
                     "last_config_poll_timestamp_seconds", "config_polls_total"):
            if name == "config_polls_total":
                moved(P + name, result="ok")
            else:
                moved(P + name)
        # a busy shell loop runs on a table-walked or frame-pointer stack every sample
        walks = sum(v for (n, _), v in second.items() if n == P + "stack_walks_total")
        self.assertGreater(walks, 0)
        self.assertEqual(prom_exposition.value(second, P + "sampling"), 1)
        self.assertEqual(prom_exposition.value(second, P + "sample_rate_hz"), 99)
        self.assertGreater(prom_exposition.value(second, P + "processes_tracked"), 0)
        self.assertGreater(prom_exposition.value(second, P + "processes"), 0)
        self.assertGreater(prom_exposition.value(second, P + "resident_memory_bytes"), 1 << 20)
        # BPF time: a number when the kernel's run-time statistics were on, else absent
        # with its reason -- never a made-up 0
        bpf = prom_exposition.value(second, P + "bpf_seconds_total")
        unmeasured = prom_exposition.value(second, P + "unmeasured",
                                           metric=P + "bpf_seconds_total",
                                           reason="bpf_stats_disabled")
        self.assertTrue((bpf is not None and bpf > 0) != (unmeasured == 1), (bpf, unmeasured))
        self.assertEqual(agent.stop(), 0)

    def test_health_fails_closed_while_the_collector_is_unreachable(self):
        port = free_port()  # nothing listens there
        listen = free_port()
        agent = Agent(self.tmp, "http://127.0.0.1:%d" % port, "rtc_stub",
                      config={"listen": "127.0.0.1:%d" % listen})  # the config-file key
        self.cleanups.append(agent.stop)
        agent.port = listen
        self.assertTrue(wait_for(lambda: health(listen)[1].get("state") == "failing_closed",
                                 15), agent.log())
        status, doc = health(listen, "ready")
        self.assertEqual(status, 503, doc)
        self.assertEqual(doc["status"], "failing")
        self.assertIn("Couldn't connect", doc["reason"])
        # the control loop itself is alive: plain /healthz (liveness) is 200 and says why it
        # is not sampling, so a collector outage causes no restart loop
        status, doc = health(listen)
        self.assertEqual(status, 200, doc)
        self.assertEqual(doc["state"], "failing_closed")
        self.assertIn("Couldn't connect", doc["reason"])
        samples = self.scrape(agent)
        self.assertEqual(prom_exposition.value(samples, P + "config_held"), 0)
        self.assertGreater(prom_exposition.value(samples, P + "config_polls_total",
                                                 result="failed"), 0)
        self.assertIsNone(prom_exposition.value(samples, P + "last_config_poll_timestamp_seconds"))
        self.assertEqual(prom_exposition.value(samples, P + "unmeasured",
                                               metric=P + "last_config_poll_timestamp_seconds",
                                               reason="never"), 1)
        self.assertEqual(agent.stop(), 0)

    def test_health_fails_when_uploads_keep_failing(self):
        stub = self.start_stub(config=enabled_config())
        stub.upstream = free_port()  # profile POSTs are forwarded there: 502
        self.start_busy()
        agent = self.start_agent(stub.url(), config={"upload_backoff_max_s": 2})
        self.assertTrue(wait_for(lambda: health(agent.port)[1].get("state") == "sampling", 20))
        # three upload intervals, and at least 30 s (HEALTH_UPLOAD_FAIL_MIN_MS), after the
        # first failure
        ok = wait_for(lambda: health(agent.port)[1].get("state") == "uploads_failing", 60,
                      step=1)
        self.assertTrue(ok, "%s\n%s" % (health(agent.port), agent.log()[-3000:]))
        status, doc = health(agent.port, "ready")
        self.assertEqual(status, 503, doc)
        self.assertIn("HTTP 502", doc["reason"])
        samples = self.scrape(agent)
        self.assertGreater(prom_exposition.value(samples, P + "upload_failures_total",
                                                 reason="server_error"), 0)
        self.assertGreater(prom_exposition.value(samples, P + "upload_queue_profiles"), 0)
        self.assertEqual(prom_exposition.value(samples, P + "profiles_uploaded_total"), 0)
        self.assertEqual(health(agent.port)[0], 200)
        self.assertEqual(agent.stop(timeout=60), 0)

    def test_malformed_or_other_requests_are_refused(self):
        stub = self.start_stub(config=enabled_config(enabled=False))
        agent = self.start_agent(stub.url())
        self.assertTrue(wait_for(lambda: health(agent.port)[0] == 200, 15), agent.log())
        self.assertEqual(health(agent.port)[1]["state"], "off")
        port = agent.port
        bad = [b"GET /metrics HTTP/1.1\r\n\r\n",  # HTTP/1.1 without Host
               b"GET /metrics HTTP/1.1\r\nHost : x\r\n\r\n",  # space before the colon
               b"GET /metrics\r\n\r\n",  # no protocol version
               b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
               b"GET /metrics?format=json HTTP/1.1\r\nHost: x\r\n\r\n",
               b"GET /healthz?probe=sometimes HTTP/1.1\r\nHost: x\r\n\r\n",
               b"GET /healthz?" + b"&".join(b"a%d=1" % i for i in range(20))
               + b" HTTP/1.1\r\nHost: x\r\n\r\n"]
        for request in bad:
            self.assertEqual(raw(port, request), 400, request)
        # a request line libmicrohttpd cannot split into method and target: it closes the
        # connection without an answer (libmicrohttpd 0.9.75)
        self.assertIn(raw(port, b"GARBAGE\r\n\r\n"), (400, None))
        self.assertEqual(raw(port, b"POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n"), 405)
        self.assertEqual(raw(port, b"GET /api/apm/config HTTP/1.1\r\nHost: x\r\n\r\n"), 404)
        # request size is bounded: a 64 KiB header is refused, not buffered
        huge = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 65536 + b"\r\n\r\n"
        self.assertEqual(raw(port, huge), 431)
        # and the listener still answers afterwards
        self.assertEqual(raw(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"), 200)
        self.assertEqual(agent.stop(), 0)

    def test_connections_are_bounded(self):
        stub = self.start_stub(config=enabled_config(enabled=False))
        agent = self.start_agent(stub.url())
        self.assertTrue(wait_for(lambda: health(agent.port)[0] == 200, 15), agent.log())
        held = [socket.create_connection(("127.0.0.1", agent.port), timeout=10)
                for _ in range(16)]  # STATUS_MAX_CONNECTIONS, all idle
        time.sleep(0.5)
        # the 17th waits in the listen backlog, unanswered, while the 16 are held...
        waiting = socket.create_connection(("127.0.0.1", agent.port), timeout=2)
        self.cleanups.append(waiting.close)
        waiting.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        with self.assertRaises(socket.timeout):
            waiting.recv(64)
        # ...and is answered once they are gone
        for s in held:
            s.close()
        waiting.settimeout(10)
        self.assertTrue(waiting.recv(64).startswith(b"HTTP/1.1 200 "))
        self.assertEqual(agent.stop(), 0)

    def test_bad_listen_address_is_refused_at_start(self):
        token = os.path.join(self.tmp, "tok")
        with open(token, "w") as f:
            f.write("rtc_stub\n")
        r = subprocess.run([AGENT, "run", "--collector", "http://127.0.0.1:1", "--token-file",
                            token, "--listen", "localhost:http"], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--listen localhost:http", r.stderr)


class ExpositionFormatTest(CleanupTestCase):
    """Both /metrics endpoints (they share lib/prom_text.c) parse as Prometheus text."""
    tmp_prefix = "rt-exposition-"

    @unittest.skipUnless(os.geteuid() == 0, "needs root (the agent's BPF check at start)")
    def test_agent_exposition_parses(self):
        listen = free_port()
        agent = Agent(self.tmp, "http://127.0.0.1:%d" % free_port(), "rtc_stub",
                      extra_args=["--listen", "127.0.0.1:%d" % listen])
        self.cleanups.append(agent.stop)
        self.assertTrue(wait_for(lambda: get(listen, "/metrics")[0] == 200, 15), agent.log())
        text = get(listen, "/metrics")[2]
        samples = prom_exposition.parse(text)
        self.assertGreater(len(samples), 40)
        self.check_promtool(text)

    def test_collector_exposition_parses(self):
        c = Collector()
        self.cleanups.append(c.close)
        status, _, body = c.request("GET", "/metrics")
        self.assertEqual(status, 200)
        text = body.decode()
        samples = prom_exposition.parse(text)
        self.assertIsNotNone(prom_exposition.value(samples, "roottrace_http_requests_total"))
        self.check_promtool(text)

    def test_parser_rejects_what_prometheus_rejects(self):
        for bad in ("x 1\n", "# HELP a h\n# TYPE a gauge\na 1\na 1\n", "# TYPE a gauge\na 1\n",
                    '# HELP a h\n# TYPE a gauge\na{b="1} 1\n', "# HELP a h\n# TYPE a gauge\na 1",
                    "# HELP a h\n# TYPE a gauge\na one\n", "# HELP a h\n# TYPE a gage\na 1\n"):
            with self.assertRaises(prom_exposition.ExpositionError, msg=bad):
                prom_exposition.parse(bad)

    def check_promtool(self, text):
        """Debian's promtool comes with the prometheus server package: used when present."""
        promtool = shutil.which("promtool")
        if not promtool:
            return
        r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    harness.main()
