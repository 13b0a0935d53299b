# SPDX-License-Identifier: Apache-2.0
# POST /ingest, Pyroscope's HTTP ingest, against a real collector: the same Go CPU profile
# answers the same through /ingest as through /api/apm/profiles; the type from the name's
# suffix or the pprof's sample types (wall before cpu); folded stacks; the name's labels
# (service_name, version, the rest dropped); Basic auth; every refusal stores nothing.
import base64
import os
import subprocess
import sys
import time
import unittest

import harness
import pprof_py
from collector_fixture import Collector

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_collector_ingest import build_go_profiler  # noqa: E402

NOW_BUCKET = 1714564800  # 2024-05-01T12:00:00Z, a bucket start
ACCEPTED = "cpu, itimer, wall, inuse_space, inuse_objects, alloc_space, alloc_objects"


def basic(token, user="pyroscope"):
    return "Basic " + base64.b64encode(("%s:%s" % (user, token)).encode()).decode()


class PyroscopeIngest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Collector()
        cls.addClassCleanup(cls.c.close)
        cls.tok = cls.c.create_token("collector")
        cls.viewer = cls.c.create_token("user", role="viewer")

    def ingest(self, body, name, auth=None, content_type="application/octet-stream", **params):
        params["name"] = name
        params.setdefault("format", "pprof")
        params.setdefault("from", str(NOW_BUCKET + 10))
        params.setdefault("until", str(NOW_BUCKET + 20))
        headers = {"Authorization": auth or basic(self.tok)}
        status, _, out = self.c.request("POST", "/ingest", body=body, params=params,
                                        headers=headers, content_type=content_type)
        return self.c._json(status, out)

    def query(self, route, service, profile_type, **params):
        params.update(service=service, profile_type=profile_type, start=str(NOW_BUCKET - 3600),
                      end=str(NOW_BUCKET + 3600))
        status, body = self.c.get_json("/api/apm/profiles/" + route, self.viewer, params=params)
        self.assertEqual(status, 200, body)
        return body

    def assertRefused(self, status, doc, expected_status, service):
        self.assertEqual(status, expected_status, doc)
        self.assertEqual(self.c.stored_rows(service=service), [])

    def test_same_cpu_profile_via_ingest_and_profiles_gives_the_same_answers(self):
        path = os.path.join(self.c.tmp, "go-cpu.pprof")
        subprocess.run([build_go_profiler(), path, "1"], check=True, capture_output=True,
                       timeout=60)
        with open(path, "rb") as f:
            data = f.read()
        now = str(int(time.time()))
        status, doc = self.ingest(data, "go-pyro.cpu{env=ci}", **{"from": now, "until": now})
        self.assertEqual(status, 200, doc)
        status, doc2 = self.c.upload(self.tok, data, "go-native", "cpu")
        self.assertEqual(status, 200, doc2)
        for key in ("total", "samples", "stacks", "sample_type"):
            self.assertEqual(doc[key], doc2[key], key)
        self.assertGreater(doc["total"], 0)
        for route, params in (("flamegraph", {}), ("top", {"limit": 50}), ("cost", {})):
            answers = []
            for service in ("go-pyro", "go-native"):
                status, body = self.c.get_json("/api/apm/profiles/" + route, self.viewer,
                                               params=dict(params, service=service,
                                                           profile_type="cpu", time_range="1h"))
                self.assertEqual(status, 200, body)
                del body["service"], body["window"]
                answers.append(body)
            self.assertEqual(answers[0], answers[1], route)

    def test_type_without_suffix_comes_from_the_sample_types_wall_before_cpu(self):
        cases = [
            ("infer-wall", (("samples", "count"), ("wall", "nanoseconds")), "wall", 700),
            ("infer-both", (("cpu", "nanoseconds"), ("wall", "nanoseconds")), "wall", 700),
            ("infer-cpu", (("samples", "count"), ("cpu", "nanoseconds")), "cpu", 700),
            ("infer-heap", (("inuse_objects", "count"), ("inuse_space", "bytes")), "heap", 700),
            ("infer-alloc", (("alloc_objects", "count"), ("alloc_space", "bytes")), "alloc", 700),
        ]
        for service, types, expected, value in cases:
            data = pprof_py.build_gz([(["main", "work"], [3, value])], sample_types=types)
            status, doc = self.ingest(data, service + "{process.runtime.name=nodejs}")
            self.assertEqual(status, 200, doc)
            self.assertEqual(doc["profile_type"], expected, service)
            rows = self.c.stored_rows(service=service, profile_type=expected)
            self.assertEqual([(r[3], r[5], r[6]) for r in rows],
                             [(expected, ("main", "work"), value)], service)
        # an allocation profile keeps its object counts beside the bytes (issue 15)
        rows = self.c.stored_rows(service="infer-alloc", profile_type="alloc_objects")
        self.assertEqual([(r[5], r[6]) for r in rows], [(("main", "work"), 3)])

    def test_a_pprof_with_no_storable_sample_type_is_422_naming_them(self):
        data = pprof_py.build([(["main"], [5])], sample_types=(("goroutine", "count"),))
        status, doc = self.ingest(data, "no-fit")
        self.assertRefused(status, doc, 422, "no-fit")
        self.assertIn("wall/nanoseconds (wall), cpu/nanoseconds (cpu)", doc["detail"])
        self.assertIn("goroutine/count", doc["detail"])

    def test_suffix_picks_the_type_and_an_unknown_one_is_422_listing_the_accepted(self):
        data = pprof_py.build([(["main", "work"], [3, 700])],
                              sample_types=(("wall", "nanoseconds"), ("cpu", "nanoseconds")))
        status, doc = self.ingest(data, "suffix-app.cpu")
        self.assertEqual((status, doc["profile_type"], doc["service"]), (200, "cpu", "suffix-app"))
        status, doc = self.ingest(data, "goroutine-app.goroutines{}")
        self.assertRefused(status, doc, 422, "goroutine-app")
        self.assertEqual(doc["error"], "unknown_profile_type")
        self.assertIn(ACCEPTED, doc["detail"])
        # a dotted app name whose last part is no Pyroscope type stays the app name
        status, doc = self.ingest(data, "shop.eu.checkout")
        self.assertEqual((status, doc["service"], doc["profile_type"]),
                         (200, "shop.eu.checkout", "wall"))

    def test_folded_counts_become_nanoseconds_at_the_sample_rate(self):
        body = b"main;work;hot 30\nmain;idle 10\n"
        status, doc = self.ingest(body, "folded-app.cpu{version=v9}", format="folded",
                                  sampleRate="50", content_type="text/plain")
        self.assertEqual(status, 200, doc)
        rows = sorted((r[2], r[3], r[5], r[6]) for r in self.c.stored_rows("folded-app"))
        self.assertEqual(rows, [("v9", "cpu", ("main", "idle"), 10 * 20000000),
                                ("v9", "cpu", ("main", "work", "hot"), 30 * 20000000)])
        status, doc = self.ingest(b"a;b 4096\n", "folded-heap.inuse_space", format="folded")
        self.assertEqual((status, self.c.stored_total("folded-heap", "heap")), (200, 4096))
        status, doc = self.ingest(b"a;b 3\n", "folded-objects.inuse_objects", format="folded")
        self.assertRefused(status, doc, 422, "folded-objects")
        status, doc = self.ingest(b"a;b 3\na;b\n", "folded-bad.cpu", format="folded")
        self.assertRefused(status, doc, 400, "folded-bad")
        self.assertIn("line 2", doc["detail"])

    def test_labels_service_name_and_version_are_kept_the_rest_dropped(self):
        data = pprof_py.build([(["main"], [1, 500])],
                              sample_types=(("samples", "count"), ("wall", "nanoseconds")))
        names = ["labels-app{service_name=billing,version=1.0,pod=a-1,region=eu}",
                 "labels-app{service_name=billing,version=1.0,pod=b-2,region=us}",
                 "labels-app{service_version=2.0,version=1.0,pod=c-3}"]
        for i, name in enumerate(names):
            status, doc = self.ingest(data, name, **{"from": str(NOW_BUCKET + i),
                                                     "until": str(NOW_BUCKET + i)})
            self.assertEqual(status, 200, doc)
        with self.c.db() as db:
            series = db.execute("SELECT service, deployment FROM series WHERE service IN"
                                " ('billing', 'labels-app') ORDER BY service").fetchall()
        self.assertEqual(series, [("billing", "1.0"), ("labels-app", "2.0")])
        self.assertEqual(self.c.stored_total("billing", "wall"), 1000)

    def test_malformed_names_are_400_and_store_nothing(self):
        data = pprof_py.build([(["main"], [1])], sample_types=(("wall", "nanoseconds"),))
        for name, reason in (("bad-app{a=b", "'}' missing"), ("bad-app{a=1,a=2}", "twice"),
                             ("{a=b}", "no application name"), ("", "name is missing")):
            status, doc = self.ingest(data, name)
            self.assertRefused(status, doc, 400, "bad-app")
            self.assertIn(reason, doc["detail"])

    def test_basic_password_is_the_token_and_the_user_is_ignored(self):
        data = pprof_py.build([(["main"], [1])], sample_types=(("wall", "nanoseconds"),))
        for i, auth in enumerate((basic(self.tok, "anyone"), basic(self.tok, ""),
                                  "Collector " + self.tok)):
            status, doc = self.ingest(data, "auth-ok", auth, **{"from": str(NOW_BUCKET + i),
                                                                "until": str(NOW_BUCKET + i)})
            self.assertEqual(status, 200, (auth, doc))
        refusals = ((basic("rtc_" + "0" * 64), 401), (basic(self.tok)[:-4] + "!!!!", 401),
                    ("Basic " + base64.b64encode(self.tok.encode()).decode(), 401),
                    (basic(self.viewer), 403), ("Bearer " + self.tok, 403))
        for auth, expected in refusals:
            status, doc = self.ingest(data, "auth-refused", auth)
            self.assertRefused(status, doc, expected, "auth-refused")

    def test_a_resent_upload_is_merged_once(self):
        data = pprof_py.build_gz([(["main", "retry"], [1, 900])],
                                 sample_types=(("samples", "count"), ("wall", "nanoseconds")))
        first = self.ingest(data, "retry-app{pod=x}")
        again = self.ingest(data, "retry-app{pod=x}")
        self.assertEqual((first[0], first[1]["duplicate"]), (200, False))
        self.assertEqual((again[0], again[1]["duplicate"]), (200, True))
        self.assertEqual(self.c.stored_total("retry-app", "wall"), 900)
        later = self.ingest(data, "retry-app{pod=x}", **{"from": str(NOW_BUCKET + 30),
                                                         "until": str(NOW_BUCKET + 40)})
        self.assertEqual((later[0], later[1]["duplicate"]), (200, False))
        self.assertEqual(self.c.stored_total("retry-app", "wall"), 1800)

    def test_time_comes_from_from_and_bad_times_are_400(self):
        data = pprof_py.build([(["main"], [1])], sample_types=(("wall", "nanoseconds"),))
        status, doc = self.ingest(data, "time-app", **{"from": str((NOW_BUCKET + 301) * 1000),
                                                       "until": str(NOW_BUCKET + 310)})
        self.assertEqual((status, doc["bucket"]), (200, NOW_BUCKET + 300))
        for params in ({"from": "yesterday"}, {"from": "20", "until": "10"}):
            status, doc = self.ingest(data, "time-bad", **params)
            self.assertRefused(status, doc, 400, "time-bad")

    def test_unsupported_formats_and_multipart_are_415(self):
        data = pprof_py.build([(["main"], [1])], sample_types=(("wall", "nanoseconds"),))
        status, doc = self.ingest(data, "fmt-app", format="jfr")
        self.assertRefused(status, doc, 415, "fmt-app")
        self.assertIn("pprof or folded", doc["detail"])
        status, doc = self.ingest(data, "fmt-app", content_type="multipart/form-data; boundary=x")
        self.assertRefused(status, doc, 415, "fmt-app")
        self.assertIn("multipart", doc["detail"])


if __name__ == "__main__":
    harness.main()
