# SPDX-License-Identifier: Apache-2.0
# Collector hardening (issue 7 §3, §4): an ingest flood gets 429/503 with Retry-After and loses
# nothing acknowledged, SIGKILL in a loop during ingest loses nothing acknowledged, hostile
# inputs are rejected or truncated as documented without a crash, tokens never reach the log
# or an error message, and quote/comment characters in names round-trip exactly.
import gzip
import http.client
import json
import os
import random
import socket
import threading
import time
import unittest

import harness
import pprof_py
from collector_fixture import Collector

CPU = [("cpu", "nanoseconds")]
MiB = 1 << 20


def marker_profile(marker, value):
    """A CPU profile with one stack ending in a frame named after the upload."""
    return pprof_py.build([(["main", "handle", marker], [value])], sample_types=CPU)


def vm_kib(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError("%s missing from /proc/%d/status" % (field, pid))


def stored_markers(c, service):
    """{last frame: value} of the service's stored stacks."""
    return {frames[-1]: value for *_, frames, value in c.stored_rows(service=service)}


class Uploader:
    """Keep-alive uploads over http.client; records (marker, value, status, retry_after)."""

    def __init__(self, c, token, service):
        self.c, self.token, self.service = c, token, service
        self.conn = None

    def post(self, body, query):
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.c.port, timeout=30)
        self.conn.request("POST", "/api/apm/profiles?" + query, body=body, headers={
            "Authorization": "Collector " + self.token,
            "Content-Type": "application/octet-stream"})
        r = self.conn.getresponse()
        data = r.read()
        if r.getheader("Connection", "").lower() == "close":
            self.close()
        return r.status, r.getheader("Retry-After"), data

    def upload(self, marker, value):
        return self.post(marker_profile(marker, value),
                         "service=%s&profile_type=cpu" % self.service)

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def raw_request_head(port, token, content_length, query="service=raw&profile_type=cpu"):
    """Opens a connection and sends only the request line and headers."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(("POST /api/apm/profiles?%s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
               "Authorization: Collector %s\r\nContent-Type: application/octet-stream\r\n"
               "Content-Length: %d\r\n\r\n" % (query, token, content_length)).encode())
    return s


def read_response(s):
    """(status, headers dict lower-cased, body) of one HTTP/1.1 response on a raw socket."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            raise AssertionError("connection closed before a response: %r" % buf)
        buf += chunk
    head, body = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        k, v = line.split(":", 1)
        headers[k.strip().lower()] = v.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = s.recv(65536)
        if not chunk:
            break
        body += chunk
    return int(lines[0].split()[1]), headers, body


class Flood(unittest.TestCase):
    """Many concurrent uploads beyond what the write queue takes."""

    def test_flood_gets_429_with_retry_after_and_loses_nothing_acknowledged(self):
        # 16 HTTP threads but room for only 2 uploads in (or waiting for) a commit.
        with Collector(serve_args=["--threads", "16", "--ingest-queue", "2"]) as c:
            token = c.create_token("collector")
            results, lock = [], threading.Lock()

            def client(k):
                up = Uploader(c, token, "flood")
                mine = []
                for i in range(15):
                    marker = "flood_%d_%d" % (k, i)
                    try:
                        status, retry, _ = up.upload(marker, 1000 + 97 * k + i)
                    except (OSError, http.client.HTTPException):
                        up.close()
                        status, retry = None, None
                    mine.append((marker, 1000 + 97 * k + i, status, retry))
                up.close()
                with lock:
                    results.extend(mine)

            threads = [threading.Thread(target=client, args=(k,)) for k in range(48)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            statuses = {r[2] for r in results}
            self.assertTrue(statuses <= {200, 429, 503}, "unexpected statuses %s" % statuses)
            refused = [r for r in results if r[2] in (429, 503)]
            self.assertTrue(refused, "a flood past a 2-upload queue was never refused")
            for marker, _, status, retry in refused:
                self.assertTrue(retry and int(retry) >= 1,
                                "%s: %d without Retry-After" % (marker, status))
            stored = stored_markers(c, "flood")
            for marker, value, status, _ in results:
                if status == 200:
                    self.assertEqual(stored.get(marker), value, "acknowledged %s lost" % marker)
                else:
                    self.assertNotIn(marker, stored, "refused %s was written" % marker)
            m = c.metrics()
            self.assertGreaterEqual(m.get('roottrace_rejects_total{reason="overloaded"}', 0),
                                    len(refused))
            # bounded: a flood of small uploads does not grow the collector
            self.assertLess(vm_kib(c.proc.pid, "VmHWM"), 128 * 1024)

    def test_bodies_past_max_inflight_get_503_with_retry_after(self):
        with Collector(serve_args=["--threads", "8", "--max-inflight", str(8 * MiB)]) as c:
            token = c.create_token("collector")
            body = os.urandom(2 * MiB)  # not a pprof: an accepted body ends as 400
            socks = [raw_request_head(c.port, token, len(body)) for _ in range(20)]
            time.sleep(0.5)  # let the server read every request's headers
            answers = []
            for s in socks:
                s.settimeout(0.5)
                try:
                    answers.append(read_response(s))  # refused at the headers
                except socket.timeout:
                    s.settimeout(30)
                    s.sendall(body)
                    answers.append(read_response(s))
                s.close()
            statuses = [a[0] for a in answers]
            self.assertIn(503, statuses, statuses)
            self.assertTrue(set(statuses) <= {400, 503}, statuses)
            for status, headers, _ in answers:
                if status == 503:
                    self.assertGreaterEqual(int(headers.get("retry-after", "0")), 1)
            # 20 x 2 MiB were offered, at most 8 MiB held
            self.assertLess(vm_kib(c.proc.pid, "VmHWM"), 96 * 1024)
            self.assertEqual(c.get_json("/healthz")[0], 200)


class KillLoop(unittest.TestCase):
    """SIGKILL in a loop during ingest: the store opens and every acknowledgement holds."""

    ROUNDS = 20
    KILL_AFTER_S = (0.05, 0.3)  # each round's ingest time before the kill, drawn uniformly

    def test_sigkill_during_ingest_loses_nothing_acknowledged(self):
        rng = random.Random(7)
        with Collector() as c:  # --sync full, the default
            token = c.create_token("collector")
            acked = {}
            for rnd in range(self.ROUNDS):
                stop = threading.Event()
                lock = threading.Lock()

                def client(k):
                    up = Uploader(c, token, "killed")
                    i = 0
                    while not stop.is_set():
                        marker = "r%d_c%d_%d" % (rnd, k, i)
                        value = 10 + rnd * 1000 + k * 100 + i
                        try:
                            status, _, _ = up.upload(marker, value)
                        except (OSError, http.client.HTTPException):
                            return  # killed mid-request: not acknowledged
                        if status == 200:
                            with lock:
                                acked[marker] = value
                        i += 1

                threads = [threading.Thread(target=client, args=(k,)) for k in range(3)]
                for t in threads:
                    t.start()
                time.sleep(rng.uniform(*self.KILL_AFTER_S))
                c.kill()
                stop.set()
                for t in threads:
                    t.join()
                c.start()
                self.assertEqual(c.get_json("/healthz")[0], 200)
                stored = stored_markers(c, "killed")
                lost = [m for m, v in acked.items() if stored.get(m) != v]
                self.assertFalse(lost, "round %d: acknowledged uploads lost: %s" % (rnd, lost[:5]))
            self.assertGreater(len(acked), self.ROUNDS, "too few uploads were acknowledged")
            if c.backend == "sqlite":
                with c.db() as db:
                    self.assertEqual(db.execute("PRAGMA integrity_check").fetchone()[0], "ok")


class HostileInput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Collector()
        cls.addClassCleanup(cls.c.close)
        cls.token = cls.c.create_token("collector")

    def tearDown(self):
        self.assertIsNone(self.c.proc.poll(), "the collector died")
        self.assertEqual(self.c.get_json("/healthz")[0], 200)

    def upload(self, data, service="hostile"):
        return self.c.upload(self.token, data, service, "cpu")

    def test_100mb_body_with_content_length_is_413_before_the_body(self):
        s = raw_request_head(self.c.port, self.token, 100 * MiB)
        status, _, body = read_response(s)
        s.close()
        self.assertEqual(status, 413)
        self.assertEqual(json.loads(body)["error"], "body_too_large")

    def test_100mb_chunked_body_is_413(self):
        s = socket.create_connection(("127.0.0.1", self.c.port), timeout=60)
        s.sendall(("POST /api/apm/profiles?service=hostile&profile_type=cpu HTTP/1.1\r\n"
                   "Host: 127.0.0.1\r\nAuthorization: Collector %s\r\n"
                   "Content-Type: application/octet-stream\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n" % self.token).encode())
        chunk = b"%x\r\n" % MiB + b"\0" * MiB + b"\r\n"
        try:
            for _ in range(100):
                s.sendall(chunk)
            s.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the server may answer and close before the last chunk
        status, _, _ = read_response(s)
        s.close()
        self.assertEqual(status, 413)
        self.assertLess(vm_kib(self.c.proc.pid, "VmHWM"), 200 * 1024)

    def test_10000_deep_stack_is_400(self):
        frames = ["f%d" % i for i in range(10000)]
        status, body = self.upload(pprof_py.build([(frames, [5])], sample_types=CPU), "deep")
        self.assertEqual(status, 400, body)
        self.assertIn("frames", body["detail"])
        self.assertEqual(self.c.stored_rows(service="deep"), [])

    def _labelled(self, samples, labels_per_sample):
        """pprof with `samples` samples of one stack, each with that many labels."""
        strings = [b"", b"cpu", b"nanoseconds", b"main", b"k", b"v"]
        f = pprof_py.field_bytes
        v = pprof_py.field_varint
        label = f(3, v(1, 4) + v(2, 5))
        sample = f(2, pprof_py.field_packed(1, [1]) + pprof_py.field_packed(2, [7]) +
                   label * labels_per_sample)
        out = f(1, v(1, 1) + v(2, 2)) + sample * samples
        out += f(4, v(1, 1) + f(4, v(1, 1))) + f(5, v(1, 1) + v(2, 3))
        return out + b"".join(f(6, s) for s in strings)

    def test_a_million_labels_on_one_sample_is_400(self):
        status, body = self.upload(gzip.compress(self._labelled(1, 1000000)), "labels1")
        self.assertEqual(status, 400, body)
        self.assertIn("label", body["detail"])
        self.assertEqual(self.c.stored_rows(service="labels1"), [])

    def test_a_million_labels_over_many_samples_are_accepted_and_ignored(self):
        status, body = self.upload(gzip.compress(self._labelled(1000, 1000)), "labels2")
        self.assertEqual(status, 200, body)
        self.assertEqual(self.c.stored_rows(service="labels2")[0][5:], (("main",), 7000))
        self.assertLess(vm_kib(self.c.proc.pid, "VmHWM"), 400 * 1024)

    def test_1mb_function_name_is_400(self):
        data = pprof_py.build([(["main", "x" * MiB], [5])], sample_types=CPU)
        status, body = self.upload(data, "longname")
        self.assertEqual(status, 400, body)
        self.assertEqual(self.c.stored_rows(service="longname"), [])

    def test_nul_ends_a_name_and_invalid_utf8_becomes_question_marks(self):
        data = pprof_py.build([([b"main", b"before\x00after", b"caf\xe9\xff"], [5]),
                               ([b"main", b"tab\there"], [3])], sample_types=CPU)
        status, body = self.upload(data, "bytes")
        self.assertEqual(status, 200, body)
        rows = {r[5]: r[6] for r in self.c.stored_rows(service="bytes")}
        self.assertEqual(rows, {("main", "before", "caf??"): 5, ("main", "tab?here"): 3})

    def test_garbage_bodies_never_crash(self):
        rng = random.Random(3)
        good = pprof_py.build([(["main", "a", "b"], [5])], sample_types=CPU)
        for i in range(200):
            data = bytearray(good)
            for _ in range(rng.randint(1, 8)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            status, _ = self.upload(bytes(data[:rng.randint(1, len(data))]), "fuzzed")
            self.assertIn(status, (200, 400, 422), "input %d" % i)


class Security(unittest.TestCase):
    NASTY = ["o'brien", 'say "hi"', "x'; DROP TABLE rollups; --", "a -- comment",
             "b /* c */ d", "e' OR '1'='1", "semi;colon", "back\\slash", "%27%22", "`tick`"]

    def test_quote_and_comment_characters_round_trip_exactly(self):
        with Collector() as c:
            token = c.create_token("collector")
            viewer = c.create_token("user", role="viewer")
            for i, name in enumerate(self.NASTY):
                status, body = c.upload(token, marker_profile("m%d" % i, 100 + i), name, "cpu",
                                        deployment=self.NASTY[-1 - i])
                self.assertEqual(status, 200, (name, body))
                self.assertEqual(body["service"], name)
                status, body = c.post_json("/api/apm/deployments", token,
                                           {"service": name, "version": self.NASTY[-1 - i],
                                            "time": 1700000000 + i})
                self.assertEqual(status, 201 if status != 200 else 200, body)
            rows = c.stored_rows()
            got = {(r[1], r[2]): (r[5][-1], r[6]) for r in rows}
            want = {(n, self.NASTY[-1 - i]): ("m%d" % i, 100 + i) for i, n in enumerate(self.NASTY)}
            self.assertEqual(got, want)
            for table in ("stacks", "series", "buckets", "rollups"):
                self.assertGreater(c.count(table), 0, table)
            status, body = c.get_json("/api/apm/services", viewer)
            self.assertEqual(status, 200, body)
            listed = {s.get("service", s.get("name")) for s in body.get("services", [])}
            self.assertTrue(set(self.NASTY) <= listed, listed)
            for i, name in enumerate(self.NASTY):
                status, body = c.get_json("/api/apm/deployments", viewer,
                                          params={"service": name, "start": "1699999000",
                                                  "end": "1700001000"})
                self.assertEqual(status, 200, body)
                self.assertEqual([(d["service"], d["version"]) for d in body["deployments"]],
                                 [(name, self.NASTY[-1 - i])])

    def test_tokens_never_appear_in_logs_or_error_messages(self):
        with Collector() as c:
            collector = c.create_token("collector", name="agent-1")
            viewer = c.create_token("user", role="viewer")
            engineer = c.create_token("user", role="engineer")
            revoked = c.create_token("collector", name="old")
            c.revoke_token(c.token_id("old"))
            bogus = ["rtc_" + "f" * 40, "rtu_" + "0" * 40, "not-a-token-" + "9" * 20]
            secrets = list(c.tokens) + bogus
            bodies = []

            def call(method, path, token, scheme=None, **kw):
                status, _, body = c.request(method, path, token, scheme=scheme, **kw)
                bodies.append((method, path, status, body))

            routes = [("GET", "/api/apm/config"), ("PUT", "/api/apm/config"),
                      ("GET", "/api/apm/audit"), ("POST", "/api/apm/profiles"),
                      ("POST", "/api/apm/deployments"), ("GET", "/api/apm/services"),
                      ("GET", "/api/apm/profiles/top"), ("GET", "/api/apm/deployments")]
            for method, path in routes:
                for tok in secrets:
                    for scheme in ("Collector", "Bearer", "Basic", "collector"):
                        body = b"{}" if method != "GET" else None
                        call(method, path, tok, scheme=scheme, body=body,
                             content_type="application/json")
            # right tokens, bad requests: every error path of the write routes
            call("POST", "/api/apm/profiles", collector, body=b"not a pprof",
                 params={"service": "s", "profile_type": "cpu"})
            call("POST", "/api/apm/profiles", collector, body=b"x",
                 params={"service": "s", "profile_type": "cpu", "environment": "other"})
            call("PUT", "/api/apm/config", engineer, body=b"{bad json",
                 content_type="application/json")
            call("PUT", "/api/apm/config", viewer, body=b"{}", content_type="application/json")
            call("GET", "/api/apm/config", revoked)
            call("POST", "/api/apm/deployments", collector,
                 body=json.dumps({"service": "s", "version": "v", "time": "soon"}).encode(),
                 content_type="application/json")
            c.stop()
            log = c.log()
            self.assertIn("listening on", log)  # the log is the collector's stderr
            for tok in secrets:
                self.assertNotIn(tok, log, "a token is in the collector log")
                for method, path, status, body in bodies:
                    self.assertNotIn(tok.encode(), body,
                                     "%s %s (%d) echoes a token" % (method, path, status))


if __name__ == "__main__":
    harness.main()
