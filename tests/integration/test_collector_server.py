# SPDX-License-Identifier: Apache-2.0
# Collector server behaviour: durability across kill -9, graceful SIGTERM that answers an
# in-flight upload, retention of old profile data (settings kept), health, metrics and TLS.
import json
import os
import socket
import ssl
import subprocess
import time
import unittest
import urllib.request

import harness
import pprof_py
from collector_fixture import Collector


def wall(value, when_ns=None):
    return pprof_py.build([(["main", "serve"], value)], sample_types=[("wall", "nanoseconds")],
                          time_nanos=when_ns or time.time_ns())


class Durability(unittest.TestCase):
    def check_kill9(self, sync):
        with Collector(serve_args=["--sync", sync]) as c:
            tok = c.create_token("collector")
            status, doc = c.upload(tok, wall(12345), "durable", "wall")
            self.assertEqual(status, 200, doc)
            c.kill()  # right after the acknowledgement: no shutdown, no checkpoint
            c.start()
            self.assertEqual(c.stored_total("durable", "wall"), 12345)
            status, doc = c.upload(tok, wall(5), "durable", "wall")
            self.assertEqual(status, 200, doc)
            self.assertEqual(c.stored_total("durable", "wall"), 12350)

    def test_acknowledged_upload_survives_kill9_sync_full(self):
        self.check_kill9("full")

    def test_acknowledged_upload_survives_kill9_sync_normal(self):
        self.check_kill9("normal")


class Shutdown(unittest.TestCase):
    def test_sigterm_finishes_the_in_flight_upload(self):
        with Collector() as c:
            tok = c.create_token("collector")
            body = wall(777)
            s = socket.create_connection(("127.0.0.1", c.port))
            s.sendall(("POST /api/apm/profiles?service=inflight&profile_type=wall HTTP/1.1\r\n"
                       "Host: x\r\nAuthorization: Collector %s\r\n"
                       "Content-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n"
                       % (tok, len(body))).encode() + body[:5])
            time.sleep(0.3)  # the collector has the headers and part of the body
            c.proc.send_signal(15)
            time.sleep(0.3)
            # no new connections once it stopped accepting
            with self.assertRaises(OSError):
                socket.create_connection(("127.0.0.1", c.port), timeout=2).recv(1)
            s.sendall(body[5:])
            reply = b""
            while b"\r\n\r\n" not in reply:
                chunk = s.recv(4096)
                if not chunk:
                    break
                reply += chunk
            s.close()
            self.assertTrue(reply.startswith(b"HTTP/1.1 200"), reply[:200])
            self.assertEqual(c.stop(), 0)
            self.assertIn("stopped", c.log())
            self.assertEqual(c.stored_total("inflight", "wall"), 777)


class Retention(unittest.TestCase):
    def test_old_rollups_deleted_settings_kept(self):
        with Collector() as c:
            tok = c.create_token("collector")
            eng = c.create_token("user", role="engineer")
            old = time.time_ns() - 40 * 86400 * 10**9
            self.assertEqual(c.upload(tok, wall(1, old), "ret", "wall")[0], 200)
            self.assertEqual(c.upload(tok, wall(2), "ret", "wall")[0], 200)
            self.assertEqual(c.put_json("/api/apm/config", eng, {"enabled": True})[0], 200)
            self.assertEqual(c.stored_total("ret"), 3)
            c.restart(["--retention-days", "30"])  # the job runs at start
            deadline = time.time() + 10
            while c.stored_total("ret") != 2 and time.time() < deadline:
                time.sleep(0.1)
            self.assertEqual(c.stored_total("ret"), 2)
            self.assertIs(c.get_json("/api/apm/config", tok)[1]["enabled"], True)
            self.assertEqual(c.count("audit"), 1)


class HealthAndMetrics(unittest.TestCase):
    def test_healthz_and_metrics(self):
        with Collector() as c:
            tok = c.create_token("collector")
            status, doc = c.get_json("/healthz")
            self.assertEqual((status, doc["status"]), (200, "ok"))
            self.assertEqual(doc["stores"], {"control": "ok", "profiles": "ok"})
            fleet = c.backend == "fleet"
            self.assertEqual(doc["backends"], {"control": "postgresql", "profiles": "clickhouse"}
                             if fleet else {"control": "sqlite", "profiles": "sqlite"})
            data = wall(9)
            c.upload(tok, data, "m", "wall")
            c.upload(tok, data, "m", "cpu")  # 422
            c.get_json("/api/apm/config", "rtc_nope")  # 401
            m = c.metrics()
            self.assertEqual(m["roottrace_uploads_accepted_total"], 1)
            self.assertEqual(m["roottrace_upload_bytes_accepted_total"], len(data))
            self.assertEqual(m['roottrace_rejects_total{reason="no_fitting_sample_type"}'], 1)
            self.assertEqual(m['roottrace_rejects_total{reason="unauthorized"}'], 1)
            self.assertEqual(m["roottrace_ingest_latency_seconds_count"], 1)
            self.assertEqual(m['roottrace_ingest_latency_seconds_bucket{le="+Inf"}'], 1)
            self.assertGreater(m["roottrace_store_size_bytes"], 0)
            # one upload, one commit of one upload; the 422 never reached the store
            b = "clickhouse" if fleet else "sqlite"
            self.assertEqual(m['roottrace_ingest_batch_uploads_count{backend="%s"}' % b], 1)
            self.assertEqual(m['roottrace_ingest_batch_uploads_sum{backend="%s"}' % b], 1)
            self.assertEqual(m['roottrace_ingest_batch_uploads_bucket{backend="%s",le="1"}' % b],
                             1)
            self.assertEqual(m['roottrace_ingest_commit_failures_total{backend="%s"}' % b], 0)
            # a lone upload is not held for the linger (ClickHouse's 10 ms) in case others come
            self.assertEqual(m['roottrace_ingest_linger_expired_total{backend="%s"}' % b], 0)
            # server errors are counted in fleet mode only (SQLite has no server to fail)
            errors = sorted(k for k in m if k.startswith("roottrace_backend_errors_total"))
            self.assertEqual(errors, ['roottrace_backend_errors_total{backend="clickhouse"}',
                                      'roottrace_backend_errors_total{backend="postgresql"}']
                             if fleet else [])

    def test_version_and_help(self):
        from collector_fixture import collector_binary
        out = subprocess.run([collector_binary(), "--version"], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0)
        self.assertIn("roottrace-collector", out.stdout)
        out = subprocess.run([collector_binary(), "serve", "--help"], capture_output=True,
                             text=True)
        self.assertIn("example", out.stdout)
        out = subprocess.run([collector_binary(), "serve", "--data", "/nonexistent/x"],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 1)
        self.assertIn("init", out.stderr)


class Tls(unittest.TestCase):
    def test_serves_https_with_cert_and_key(self):
        with Collector(start=False) as c:
            cert, key = os.path.join(c.tmp, "cert.pem"), os.path.join(c.tmp, "key.pem")
            r = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                                "-keyout", key, "-out", cert, "-days", "1", "-subj",
                                "/CN=127.0.0.1"], capture_output=True)
            if r.returncode != 0:
                self.skipTest("openssl cannot make a certificate")
            c.start(["--tls-cert", cert, "--tls-key", key])
            ctx = ssl.create_default_context(cafile=cert)
            ctx.check_hostname = False
            with urllib.request.urlopen("https://127.0.0.1:%d/healthz" % c.port,
                                        context=ctx, timeout=10) as resp:
                self.assertEqual(json.loads(resp.read())["status"], "ok")


if __name__ == "__main__":
    harness.main()
