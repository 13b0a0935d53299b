# SPDX-License-Identifier: Apache-2.0
# Collector ingest: a real Go CPU profile (raw and gzipped) stored with its exact cpu total,
# many small uploads merged into one rollup, every bad input refused with nothing stored,
# agent self-reports kept per agent, deploy markers.
import gzip
import os
import subprocess
import time
import unittest

import harness
import pprof_py
from collector_fixture import Collector, build_dir

SRC = os.environ.get("ROOTTRACE_SRC", os.getcwd())


def build_go_profiler():
    """Builds tests/helpers/gocpuprofile under the build dir (offline, local toolchain)."""
    out = os.path.join(build_dir(), "tests", "gocpuprofile")
    env = dict(os.environ, GOFLAGS="-mod=mod", GOPROXY="off", GOTOOLCHAIN="local",
               GOCACHE=os.path.join(build_dir(), "gocache"), CGO_ENABLED="0")
    subprocess.run(["go", "build", "-o", out, "."], cwd=os.path.join(SRC, "tests", "helpers",
                   "gocpuprofile"), env=env, check=True, capture_output=True, timeout=300)
    return out


def bucket_now():
    now = int(time.time())
    return now - now % 300


class GoCpuProfile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Collector()
        cls.addClassCleanup(cls.c.close)
        cls.tok = cls.c.create_token("collector")
        prog = build_go_profiler()
        path = os.path.join(cls.c.tmp, "cpu.pprof")
        subprocess.run([prog, path, "1"], check=True, capture_output=True, timeout=60)
        with open(path, "rb") as f:
            cls.gz = f.read()
        cls.raw = gzip.decompress(cls.gz) if cls.gz[:2] == b"\x1f\x8b" else cls.gz
        if cls.gz[:2] != b"\x1f\x8b":
            cls.gz = gzip.compress(cls.raw)
        cls.expected = pprof_py.parse(cls.raw).total("cpu", "nanoseconds")

    def check_stored(self, service, status, doc):
        self.assertEqual(status, 200, doc)
        self.assertGreater(self.expected, 0)
        self.assertEqual(doc["total"], self.expected)
        self.assertEqual(doc["sample_type"], "cpu/nanoseconds")
        self.assertEqual(self.c.stored_total(service, "cpu"), self.expected)

    def test_raw_profile_total_is_stored(self):
        self.check_stored("go-raw", *self.c.upload(self.tok, self.raw, "go-raw", "cpu"))

    def test_gzipped_profile_total_is_stored(self):
        self.check_stored("go-gz", *self.c.upload(self.tok, self.gz, "go-gz", "cpu"))

    def test_stacks_are_root_first_function_names(self):
        self.c.upload(self.tok, self.raw, "go-frames", "cpu")
        rows = self.c.stored_rows("go-frames", "cpu")
        frames = [f for r in rows for f in r[5]]
        self.assertTrue(any(f == "main.fib" for f in frames), frames[:20])
        main_rows = [r[5] for r in rows if "main.main" in r[5]]
        self.assertTrue(main_rows)
        for stack in main_rows:
            # runtime.main calls main.main: the root comes first
            self.assertLess(stack.index("runtime.main"), stack.index("main.main"))
        self.assertFalse([f for f in frames if ":" in f.split(".")[-1] or not f])

    def test_time_nanos_chooses_the_bucket(self):
        t = pprof_py.parse(self.raw).time_nanos // 10**9
        self.c.upload(self.tok, self.raw, "go-bucket", "cpu")
        self.assertEqual({r[4] for r in self.c.stored_rows("go-bucket")}, {t - t % 300})


class ManySmallUploads(unittest.TestCase):
    def test_thousand_wall_profiles_land_in_one_rollup(self):
        with Collector(serve_args=["--sync", "normal"]) as c:
            tok = c.create_token("collector")
            t0 = (bucket_now() - 600) * 10**9 + 5 * 10**9  # inside one closed bucket
            expect = {}
            for i in range(1000):
                stacks = [(["main", "handle", "render"], [1000 + i]),
                          (["main", "handle", "db.query"], [7 * (i % 13) + 1])]
                if i % 10 == 0:
                    stacks.append((["main", "gc"], [i]))
                for frames, (v,) in stacks:
                    expect[tuple(frames)] = expect.get(tuple(frames), 0) + v
                data = pprof_py.build(stacks, sample_types=[("wall", "nanoseconds")],
                                      time_nanos=t0 + i * 10**8)
                status, doc = c.upload(tok, data, "php-app", "wall")
                self.assertEqual(status, 200, doc)
            rows = c.stored_rows("php-app", "wall")
            self.assertEqual(len({(r[0], r[1], r[2], r[3], r[4]) for r in rows}), 1)
            self.assertEqual({r[5]: r[6] for r in rows}, expect)
            self.assertEqual(c.bucket_uploads(), [(1000,)])
            self.assertEqual(c.metrics()["roottrace_uploads_accepted_total"], 1000)


def vt(t, u):
    return pprof_py.field_varint(1, t) + pprof_py.field_varint(2, u)


def raw_profile(sample_types, samples, locations, functions, strings):
    """Hand-built pprof for malformed cases: ids and string indices exactly as given."""
    f = pprof_py
    out = b"".join(f.field_bytes(1, vt(t, u)) for t, u in sample_types)
    out += b"".join(f.field_bytes(2, f.field_packed(1, ids) + f.field_packed(2, vals))
                    for ids, vals in samples)
    out += b"".join(f.field_bytes(4, f.field_varint(1, lid) +
                                  f.field_bytes(4, f.field_varint(1, fid)))
                    for lid, fid in locations)
    out += b"".join(f.field_bytes(5, f.field_varint(1, fid) + f.field_varint(2, name))
                    for fid, name in functions)
    out += b"".join(f.field_bytes(6, s) for s in strings)
    return out


STRINGS = ["", "wall", "nanoseconds", "main", "work"]
GOOD = raw_profile([(1, 2)], [([2, 1], [5])], [(1, 1), (2, 2)], [(1, 3), (2, 4)], STRINGS)


class BadInput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Collector(serve_args=["--max-body", "65536", "--max-inflated", "1048576"])
        cls.addClassCleanup(cls.c.close)
        cls.tok = cls.c.create_token("collector")

    def refused(self, status, data, service="bad", profile_type="wall", **kw):
        got, doc = self.c.upload(self.tok, data, service, profile_type, **kw)
        self.assertEqual(got, status, doc)
        self.assertIsInstance(doc, dict)
        self.assertTrue(doc.get("error") and doc.get("detail"), doc)
        for table in ("rollups", "stacks", "series", "buckets"):
            self.assertEqual(self.c.count(table), 0, table)
        return doc

    def test_the_good_profile_is_accepted(self):
        # the control: same service on its own collector, so the tables stay empty here
        with Collector() as c:
            status, doc = c.upload(c.create_token("collector"), GOOD, "bad", "wall")
            self.assertEqual(status, 200, doc)
            self.assertEqual(c.stored_rows()[0][5:], (("main", "work"), 5))

    def test_body_over_cap_is_413(self):
        self.refused(413, b"\0" * 100000)

    def test_gzip_bomb_is_413(self):
        bomb = gzip.compress(b"\0" * (20 << 20))
        self.assertLess(len(bomb), 65536)
        doc = self.refused(413, bomb)
        self.assertIn("inflate", doc["detail"])

    def test_corrupt_gzip_is_400(self):
        self.refused(400, gzip.compress(GOOD)[:-12] + b"garbage!!!!!")

    def test_not_protobuf_is_400(self):
        self.refused(400, b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff")
        self.refused(400, b"hello, this is text and not a profile")

    def test_truncated_is_400(self):
        self.refused(400, GOOD[:-3])

    def test_string_index_out_of_range_is_400(self):
        bad = raw_profile([(1, 2)], [([1], [5])], [(1, 1)], [(1, 99)], STRINGS)
        self.refused(400, bad)

    def test_zero_id_is_400(self):
        bad = raw_profile([(1, 2)], [([1], [5])], [(1, 0)], [(0, 3)], STRINGS)
        self.refused(400, bad)

    def test_duplicate_id_is_400(self):
        bad = raw_profile([(1, 2)], [([1], [5])], [(1, 1), (1, 1)], [(1, 3)], STRINGS)
        self.refused(400, bad)

    def test_value_count_mismatch_is_400(self):
        bad = raw_profile([(1, 2)], [([1], [5, 6])], [(1, 1)], [(1, 3)], STRINGS)
        self.refused(400, bad)

    def test_missing_service_is_400(self):
        got, doc = self.c.request("POST", "/api/apm/profiles", self.tok, body=GOOD,
                                  params={"profile_type": "wall"},
                                  content_type="application/octet-stream")[0], None
        self.assertEqual(got, 400)

    def test_unknown_profile_type_is_400(self):
        self.refused(400, GOOD, profile_type="memory")

    def test_long_service_name_is_400(self):
        self.refused(400, GOOD, service="s" * 200)

    def test_control_characters_in_service_is_400(self):
        self.refused(400, GOOD, service="api\nx")
        self.refused(400, GOOD, service="api\x7f")

    def test_bad_deployment_is_400(self):
        self.refused(400, GOOD, deployment="v1\x01")

    def test_wrong_content_type_is_415(self):
        got, doc = self.c.upload(self.tok, GOOD, "bad", "wall", content_type="application/json")
        self.assertEqual(got, 415, doc)
        self.assertEqual(self.c.count("rollups"), 0)

    def test_no_fitting_sample_type_is_422_naming_what_it_has(self):
        doc = self.refused(422, GOOD, profile_type="cpu")
        self.assertIn("wall/nanoseconds", doc["detail"])
        self.assertIn("cpu/nanoseconds", doc["detail"])

    def test_422_detail_cut_inside_a_utf8_sequence_is_still_422(self):
        # the "this one has" list is truncated at a fixed size: the cut must not leave half a
        # character that the JSON encoder refuses (that answered 500 "out of memory")
        for pad in ("", "a"):  # the cut falls inside a character for one of the two
            prof = raw_profile([(1, 2), (5, 2)], [([2, 1], [5, 7])], [(1, 1), (2, 2)],
                               [(1, 3), (2, 4)], STRINGS + [pad + "\u00e9" * 150])
            doc = self.refused(422, prof, profile_type="cpu")
            self.assertIn("wall/nanoseconds", doc["detail"])
            self.assertIn("\u00e9\u00e9", doc["detail"])

    def test_rejects_are_counted_by_reason(self):
        before = self.c.metrics()
        self.c.upload(self.tok, GOOD, "bad", "heap")
        after = self.c.metrics()
        key = 'roottrace_rejects_total{reason="no_fitting_sample_type"}'
        self.assertEqual(after[key], before[key] + 1)


class SelfReportAndDeployments(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Collector(environment="prod")
        cls.addClassCleanup(cls.c.close)
        cls.tok = cls.c.create_token("collector", "prod")

    def test_agent_self_report_from_headers(self):
        headers = {"X-RootTrace-Agent-Id": "agent-1", "X-RootTrace-Node": "node-a",
                   "X-RootTrace-Agent-Version": "0.1.0", "X-RootTrace-Window-Seconds": "60",
                   "X-RootTrace-Cpu-Seconds": "0.25", "X-RootTrace-Bpf-Seconds": "0.125",
                   "X-RootTrace-Lost-Samples": "3", "X-RootTrace-Unknown-Frames": "17",
                   "X-RootTrace-Processes": "42"}
        status, doc = self.c.upload(self.tok, GOOD, "api", "wall", headers=headers)
        self.assertEqual(status, 200, doc)
        row = self.c.control_rows("SELECT environment, node, version, window_s, cpu_s, bpf_s,"
                                  " lost_samples, unknown_frames, processes FROM agents"
                                  " WHERE agent_id = 'agent-1'")[0]
        self.assertEqual(row, ("prod", "node-a", "0.1.0", 60.0, 0.25, 0.125, 3, 17, 42))

    def test_agent_self_report_from_query(self):
        status, doc = self.c.upload(self.tok, GOOD, "api", "wall",
                                    params={"agent_id": "agent-q", "node": "n", "cpu_s": "1.5"})
        self.assertEqual(status, 200, doc)
        self.assertEqual(self.c.control_rows("SELECT cpu_s FROM agents"
                                             " WHERE agent_id='agent-q'"), [(1.5,)])

    def test_bad_self_report_is_400_and_nothing_stored(self):
        status, doc = self.c.upload(self.tok, GOOD, "api-bad-report", "wall",
                                    headers={"X-RootTrace-Agent-Id": "a",
                                             "X-RootTrace-Lost-Samples": "many"})
        self.assertEqual(status, 400, doc)
        self.assertEqual(self.c.stored_rows("api-bad-report"), [])

    def test_deployment_marker_by_collector_token_and_engineer(self):
        eng = self.c.create_token("user", "prod", "engineer")
        viewer = self.c.create_token("user", "prod", "viewer")
        status, doc = self.c.post_json("/api/apm/deployments", self.tok,
                                       {"service": "api", "version": "v2",
                                        "time": "2024-05-01T12:00:00Z"})
        self.assertEqual(status, 201, doc)
        self.assertEqual(doc["time"], 1714564800)
        self.assertEqual(self.c.post_json("/api/apm/deployments", eng,
                                          {"service": "api", "version": "v3"})[0], 201)
        self.assertEqual(self.c.post_json("/api/apm/deployments", viewer,
                                          {"service": "api", "version": "v4"})[0], 403)
        self.assertEqual(self.c.post_json("/api/apm/deployments", self.tok,
                                          {"environment": "other", "service": "api",
                                           "version": "v5"})[0], 403)
        self.assertEqual(self.c.post_json("/api/apm/deployments", self.tok,
                                          {"service": "api", "version": "v6",
                                           "time": "yesterday"})[0], 400)
        self.assertEqual(self.c.post_json("/api/apm/deployments", self.tok, b"{")[0], 400)
        got = self.c.control_rows("SELECT environment, service, version FROM deployments"
                                  " ORDER BY id")
        self.assertEqual(got, [("prod", "api", "v2"), ("prod", "api", "v3")])


if __name__ == "__main__":
    harness.main()
