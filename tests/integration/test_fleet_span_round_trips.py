# SPDX-License-Identifier: Apache-2.0
# Round trips to ClickHouse of span reads, counted by the collector's own
# roottrace_backend_requests_total{backend="clickhouse"}: a span's merge is its stacks' sums and
# then their frames; include_children first reads the span's rows and its trace's rows, and
# the trace route reads a trace once for all its spans' families (span_tree.h), not once per
# span. The answers are the ones test_otlp_trace.py expects of the same tree.
import unittest

import harness
import pprof_py
from collector_fixture import Collector

TRACE = "0af7651916cd43dd8448eb211c80319c"
CH_REQUESTS = 'roottrace_backend_requests_total{backend="clickhouse"}'
PG_REQUESTS = 'roottrace_backend_requests_total{backend="postgresql"}'


class FleetSpanRoundTrips(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Collector(backend="fleet")
        cls.addClassCleanup(cls.c.close)
        cls.tok = cls.c.create_token("collector")
        cls.user = cls.c.create_token("user", role="viewer")
        # root -> mid -> leaf: three spans of one trace, each naming its parent
        tree = pprof_py.build([
            (["main", "serve"], 1, {"span_id": "0a", "trace_id": TRACE}),
            (["main", "serve", "mid"], 10, {"span_id": "0b", "parent_span_id": "0a",
                                            "trace_id": TRACE}),
            (["main", "serve", "mid", "leaf"], 100, {"span_id": "0c", "parent_span_id": "0b",
                                                     "trace_id": TRACE})])
        status, doc = cls.c.upload(cls.tok, tree, "trips-svc", "cpu")
        assert status == 200 and doc["links"]["stored"] == 3, doc

    def get(self, path, params):
        status, doc = self.c.get_json(path, self.user, params=params)
        self.assertEqual(status, 200, doc)
        return doc

    def counted(self, read):
        """The fewest ClickHouse requests of three runs of read (a request of the collector's
        own in the background, retention at start, cannot be counted against it), with those
        of the GET /metrics that counts them, and read's last answer."""
        counts, answer = [], None
        for _ in range(3):
            before = self.c.metrics()[CH_REQUESTS]
            answer = read()
            counts.append(self.c.metrics()[CH_REQUESTS] - before)
        return min(counts), answer

    def clickhouse_requests(self, read):
        """(ClickHouse requests read made, its answer)."""
        metrics_cost, _ = self.counted(lambda: None)
        n, answer = self.counted(read)
        return n - metrics_cost, answer

    def test_metrics_count_requests_to_both_servers(self):
        m = self.c.metrics()
        self.assertGreater(m[CH_REQUESTS], 0)  # the upload's inserts at least
        self.assertGreater(m[PG_REQUESTS], 0)  # its token and upload id at least
        self.assertEqual(self.counted(lambda: None)[0], 1)  # /metrics: the store's size

    def test_span_flame_graph_with_children_is_four_queries(self):
        n, doc = self.clickhouse_requests(lambda: self.get("/api/apm/profiles/flamegraph", {
            "service": "trips-svc", "profile_type": "cpu", "span_id": "0a",
            "include_children": "true"}))
        self.assertEqual((doc["total"], doc["children"]), (111, {"resolved": True, "spans": 3}))
        self.assertEqual(n, 4)  # the span's rows, its trace's rows, the sums, their frames

    def test_span_flame_graph_alone_is_two_queries(self):
        n, doc = self.clickhouse_requests(lambda: self.get("/api/apm/profiles/flamegraph", {
            "service": "trips-svc", "profile_type": "cpu", "span_id": "0b"}))
        self.assertEqual(doc["total"], 10)
        self.assertEqual(n, 2)  # the sums, their frames

    def trace_with_children(self, **params):
        params["include_children"] = "true"
        n, doc = self.clickhouse_requests(lambda: self.get(
            "/api/apm/traces/%s/profile" % TRACE, params))
        with_children = {s["span_id"]: s["value_with_children"] for s in doc["spans"]}
        self.assertEqual(with_children, {"%016x" % 0x0a: 111, "%016x" % 0x0b: 110,
                                         "%016x" % 0x0c: 100})
        return n

    def test_trace_with_children_reads_the_trace_once(self):
        # the trace's spans (which are also what every span's family walk reads of the
        # trace), then per span: its own rows, the sums, their frames (it was 1 + 4 per span)
        self.assertEqual(self.trace_with_children(), 1 + 3 * 3)

    def test_trace_of_one_service_with_children_reads_the_whole_trace_once_more(self):
        # the service's spans are not the whole trace the walks need: it is read once
        self.assertEqual(self.trace_with_children(service="trips-svc"), 1 + 1 + 3 * 3)


if __name__ == "__main__":
    harness.main()
