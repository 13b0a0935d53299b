# SPDX-License-Identifier: Apache-2.0
# GET /api/apm/spans: a service's slowest linked spans in a window, largest value inside the
# window first, each with its share of the service's total (the flame graph's), never mixing
# profile types or counting links outside the window; with span_id=, where one span's samples
# are; and the link retention in its answers and the trace route's. On SQLite and, through a
# second collector, on the fleet stores.
import time
import unittest

import harness
import pprof_py
from collector_fixture import Collector

SEC = 1_000_000_000
TRACE = "5d0000000000000000000000000000aa"


class SpansRoute(unittest.TestCase):
    backend = None  # FleetSpansRoute says "fleet"; None: ROOTTRACE_TEST_BACKEND's choice

    @classmethod
    def setUpClass(cls):
        cls.c = Collector(backend=cls.backend)
        cls.reader = cls.c
        try:
            tok = cls.c.create_token("collector")
            cls.user = cls.c.create_token("user", role="viewer")
            if cls.c.backend == "fleet":  # reads through another collector on the same stores
                cls.reader = Collector(backend="fleet", stores=(cls.c.pg_url, cls.c.ch_url))
            now = int(time.time())
            cls.cpu_at = now - 60
            label = lambda sid, name: {"span_id": sid, "trace_id": TRACE, "span_name": name}
            uploads = [
                ("cpu", now - 60, "node-a", [(["main", "a"], 30, label("0a", "GET /a")),
                                             (["main", "b"], 50, label("0b", "GET /b")),
                                             (["main", "idle"], 100, {})]),
                ("cpu", now - 30, "node-b", [(["main", "c"], 20, label("0c", "GET /c")),
                                             (["main", "a"], 15, label("0a", "GET /a"))]),
                ("wall", now - 60, "node-a", [(["main", "b"], 9000, label("0b", "GET /b"))]),
                # a day ago: outside the hour, inside the retention
                ("cpu", now - 86400, "node-a", [(["main", "old"], 1000,
                                                label("0d", "GET /old")),
                                               (["main", "a"], 500, label("0a", "GET /a"))]),
            ]
            for ptype, at, node, samples in uploads:
                pb = pprof_py.build(samples, sample_types=((ptype, "nanoseconds"),),
                                    time_nanos=at * SEC)
                status, doc = cls.c.upload(tok, pb, "slow-svc", ptype, params={"node": node})
                assert status == 200, doc
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.reader is not cls.c:
            cls.reader.close()
        cls.c.close()

    def get(self, path="/api/apm/spans", **params):
        return self.reader.get_json(path, self.user, params=params)

    def spans(self, **params):
        p = {"service": "slow-svc", "profile_type": "cpu", "time_range": "1h"}
        p.update(params)
        status, doc = self.get(**p)
        self.assertEqual(status, 200, doc)
        return doc

    def test_slowest_spans_of_the_window_by_value_with_their_share(self):
        doc = self.spans()
        rows = [(s["span_id"], s["span_name"], s["value"], s["samples"] > 0)
                for s in doc["spans"]]
        self.assertEqual(rows, [("000000000000000b", "GET /b", 50, True),
                                ("000000000000000a", "GET /a", 45, True),
                                ("000000000000000c", "GET /c", 20, True)])
        self.assertEqual(doc["total"], 215)  # the service's, linked or not
        shares = [round(s["share"], 6) for s in doc["spans"]]
        self.assertEqual(shares, [round(100 * v / 215, 6) for v in (50, 45, 20)])
        first = doc["spans"][0]
        self.assertEqual((first["trace_id"], first["service"], first["profile_type"],
                          first["unit"]), (TRACE, "slow-svc", "cpu", "nanoseconds"))
        self.assertLessEqual(doc["window"]["start"], first["first"])
        self.assertEqual((doc["measurement"], doc["link_retention_hours"], doc["limit"]),
                         ("cpu", 72, 20))

    def test_limit_window_type_and_node_narrow_it(self):
        self.assertEqual([s["span_id"] for s in self.spans(limit=1)["spans"]],
                         ["000000000000000b"])
        wall = self.spans(profile_type="wall")["spans"]
        self.assertEqual([(s["span_id"], s["value"]) for s in wall],
                         [("000000000000000b", 9000)])
        week = self.spans(time_range="7d")["spans"]  # the older links count in a wider window
        self.assertEqual([(s["span_id"], s["value"]) for s in week],
                         [("000000000000000d", 1000), ("000000000000000a", 545),
                          ("000000000000000b", 50), ("000000000000000c", 20)])
        node_b = self.spans(node="node-b")
        self.assertEqual([(s["span_id"], s["value"]) for s in node_b["spans"]],
                         [("000000000000000c", 20), ("000000000000000a", 15)])
        self.assertEqual(node_b["total"], 35)
        self.assertEqual(self.spans(service="nobody")["spans"], [])

    def test_span_id_finds_the_span_in_every_type(self):
        status, doc = self.get(span_id="B")
        self.assertEqual(status, 200, doc)
        self.assertIsNone(doc["reason"])
        self.assertEqual(sorted((s["profile_type"], s["value"], s["trace_id"], s["span_name"])
                                for s in doc["spans"]),
                         [("cpu", 50, TRACE, "GET /b"), ("wall", 9000, TRACE, "GET /b")])
        status, doc = self.get(span_id="0b", profile_type="wall")
        self.assertEqual([s["profile_type"] for s in doc["spans"]], ["wall"])
        status, doc = self.get(span_id="ee")
        self.assertEqual((status, doc["spans"]), (200, []))
        self.assertEqual(doc["reason"]["code"], "no_samples")
        self.assertIn("72 hours", doc["reason"]["detail"])

    def test_bad_parameters_are_refused(self):
        for params in ({"profile_type": "cpu"}, {"service": "slow-svc"},
                       {"service": "slow-svc", "profile_type": "cpu", "limit": "0"},
                       {"service": "slow-svc", "profile_type": "cpu", "trace_id": TRACE},
                       {"service": "slow-svc", "profile_type": "cpu", "deployment": "v1"},
                       {"span_id": "xyz"}, {"span_id": "0b", "profile_type": "cpu,wall"}):
            status, doc = self.get(**params)
            self.assertEqual(status, 400, (params, doc))
        status, _, _ = self.reader.request("GET", "/api/apm/spans",
                                           params={"service": "slow-svc", "profile_type": "cpu"})
        self.assertEqual(status, 401)

    def test_the_trace_route_says_how_long_links_are_kept(self):
        status, doc = self.get("/api/apm/traces/%s/profile" % ("7" * 32))
        self.assertEqual(status, 200, doc)
        self.assertEqual((doc["spans"], doc["link_retention_hours"]), ([], 72))


class FleetSpansRoute(SpansRoute):
    """The same answers from the ClickHouse link store, read through a second collector."""
    backend = "fleet"


if __name__ == "__main__":
    harness.main()
