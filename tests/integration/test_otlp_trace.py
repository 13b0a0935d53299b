# SPDX-License-Identifier: Apache-2.0
# OTLP profiles ingest (POST /v1development/profiles, protobuf and JSON) and the trace link: a
# request with two resources, inlined frames, timestamps-only samples and a link is stored with
# the expected frames and values; malformed requests store nothing; span ids from OTLP links,
# pprof labels (Go's pprof.Do, Datadog's) are queryable by trace_id / span_id without creating
# series, expire on their own retention, and diff against their endpoint's baseline.
import os
import sqlite3
import subprocess
import time
import unittest

import harness
import otlp_py
import pprof_py
from collector_fixture import Collector
from test_collector_ingest import build_go_profiler

SRC = os.environ.get("ROOTTRACE_SRC", os.getcwd())
OTLP = "/v1development/profiles"
PERIOD = 10_000_000  # 10 ms in nanoseconds
TRACE = "0af7651916cd43dd8448eb211c80319c"
SPAN = "b7ad6b7169203331"
PROTOBUF = "application/x-protobuf"


def now_nanos():
    return int(time.time()) * 1_000_000_000


def example_request(services=("otlp-a", "otlp-b"), environment=None):
    """Two resources: a CPU profile (samples every 10 ms) with an inlined frame, a
    timestamps-only sample linked to a span and an unsymbolised frame; a wall profile."""
    r = otlp_py.Request()
    t = now_nanos()
    inl = r.location(["inlinedHelper", "outerFunction"])  # innermost first
    main = r.location(["main"])
    exe = r.mapping("/usr/bin/app", build_id="abcdef12", start=0x400000, offset=0x1000)
    raw = r.location([], mapping=exe, address=0x401234)
    linked = r.stack([inl, main])  # leaf first
    unsym = r.stack([raw, main])
    link = r.link(TRACE, SPAN)
    attrs = {"service.name": services[0], "service.version": "1.2.0"}
    if environment:
        attrs["deployment.environment.name"] = environment
    a = r.resource(attrs)
    a.profile(("samples", "count"), period_type=("cpu", "nanoseconds"), period=PERIOD,
              time_nanos=t, samples=[
                  {"stack": linked, "timestamps": [t, t + PERIOD, t + 2 * PERIOD], "link": link},
                  {"stack": unsym, "values": [2]}])
    b = r.resource({"service.name": services[1]})
    b.profile(("wall", "nanoseconds"), time_nanos=t, samples=[{"stack": linked, "values": [500]}])
    return r


class Base(unittest.TestCase):
    serve_args = ()
    backend = None  # the Fleet* classes say "fleet"; None: ROOTTRACE_TEST_BACKEND's choice

    @classmethod
    def setUpClass(cls):
        cls.c = Collector(serve_args=cls.serve_args, backend=cls.backend)
        cls.addClassCleanup(cls.c.close)
        cls.tok = cls.c.create_token("collector")
        cls.user = cls.c.create_token("user", role="viewer")
        # Reads go to `reader`: in fleet mode a second collector on the same servers, so that
        # every span query answered there shows the links are shared, not per collector.
        cls.reader = cls.c
        if cls.c.backend == "fleet":
            cls.reader = Collector(backend="fleet", stores=(cls.c.pg_url, cls.c.ch_url),
                                   serve_args=cls.serve_args)
            cls.addClassCleanup(cls.reader.close)

    def post(self, body, content_type=PROTOBUF, token=None):
        status, headers, data = self.c.request("POST", OTLP, token or self.tok, body=body,
                                               content_type=content_type)
        return status, headers, data

    def links_db(self):
        path = os.path.join(self.c.data, "roottrace-links.db")
        return sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=10)

    def link_count(self):
        if self.c.backend == "fleet":
            return int(self.c.clickhouse("SELECT count() FROM {db}.span_links"))
        with self.links_db() as db:
            return db.execute("SELECT count(*) FROM span_links").fetchone()[0]

    def get(self, path, params=None):
        status, doc = self.reader.get_json(path, self.user, params=params)
        return status, doc

    def window(self):
        """The last hour and the current bucket: the default window ends at now rounded up to
        a bucket, which is now itself in the first second of a bucket."""
        now = int(time.time())
        return {"start": now - 3600, "end": now + 300}

    def flame(self, service, profile_type, **params):
        p = {"service": service, "profile_type": profile_type}
        p.update(self.window())
        p.update(params)
        status, doc = self.get("/api/apm/profiles/flamegraph", p)
        self.assertEqual(status, 200, doc)
        return doc

    def paths(self, node, prefix=()):
        """{root-first frames: self value} of a flame graph."""
        out = {}
        here = prefix + (node["name"],) if prefix or node["name"] != "root" else ()
        if node["self"]:
            out[here] = node["self"]
        for ch in node["children"]:
            out.update(self.paths(ch, here))
        return out

    def stored(self, service, profile_type):
        return {r[5]: r[6] for r in self.c.stored_rows(service, profile_type)}


class OtlpIngest(Base):
    def expect_example(self, a, b):
        self.assertEqual(self.stored(a, "cpu"), {
            ("main", "outerFunction", "inlinedHelper"): 3 * PERIOD,  # 3 timestamps x period
            ("main", "abcdef12+0x2234"): 2 * PERIOD})  # build id + file offset
        self.assertEqual(self.stored(b, "wall"), {("main", "outerFunction", "inlinedHelper"): 500})
        self.assertEqual({r[2] for r in self.c.stored_rows(a)}, {"1.2.0"})  # service.version
        flame = self.paths(self.flame(a, "cpu")["root"])
        self.assertEqual(flame[("main", "outerFunction", "inlinedHelper")], 3 * PERIOD)
        span = self.flame(a, "cpu", span_id=SPAN)
        self.assertEqual(span["total"], 3 * PERIOD)
        self.assertEqual(self.paths(span["root"]),
                         {("main", "outerFunction", "inlinedHelper"): 3 * PERIOD})

    def test_protobuf_request_stores_frames_values_and_link(self):
        status, headers, data = self.post(example_request(("pb-a", "pb-b")).protobuf())
        self.assertEqual(status, 200, data)
        self.assertEqual(headers.get("Content-Type"), PROTOBUF)
        self.assertEqual(otlp_py.parse_response(data), (0, ""))
        self.expect_example("pb-a", "pb-b")

    def test_json_request_is_read_like_protobuf(self):
        status, _, data = self.post(example_request(("js-a", "js-b")).json(), "application/json")
        self.assertEqual(status, 200, data)
        self.assertEqual(data, b"{}")
        self.expect_example("js-a", "js-b")

    def test_gzipped_request_is_inflated(self):
        body = pprof_py.gzipped(example_request(("gz-a", "gz-b")).protobuf())
        self.assertEqual(self.post(body)[0], 200)
        self.expect_example("gz-a", "gz-b")

    def test_trace_endpoint_answers_per_span(self):
        self.assertEqual(self.post(example_request(("tr-a", "tr-b")).protobuf())[0], 200)
        status, doc = self.get("/api/apm/traces/%s/profile" % TRACE, {"service": "tr-a"})
        self.assertEqual(status, 200, doc)
        self.assertIsNone(doc["reason"])
        self.assertEqual(len(doc["spans"]), 1)
        s = doc["spans"][0]
        self.assertEqual((s["span_id"], s["profile_type"], s["samples"], s["value"]),
                         (SPAN, "cpu", 3, 3 * PERIOD))
        self.assertEqual(s["top_functions"][0]["name"], "inlinedHelper")

    def test_trace_without_links_says_why(self):
        status, doc = self.get("/api/apm/traces/%s/profile" % ("1" * 32),
                               {"service": "never-uploaded"})
        self.assertEqual(status, 200, doc)
        self.assertEqual(doc["spans"], [])
        self.assertEqual(doc["reason"]["code"], "no_upload")

    def test_off_cpu_is_its_own_type(self):
        r = otlp_py.Request()
        s = r.stack([r.location(["blockedInRead"])])
        r.resource({"service.name": "offcpu-svc"}).profile(
            ("off_cpu", "nanoseconds"), samples=[{"stack": s, "values": [7000]}])
        self.assertEqual(self.post(r.protobuf())[0], 200)
        self.assertEqual(self.stored("offcpu-svc", "offcpu"), {("blockedInRead",): 7000})
        self.assertEqual(self.stored("offcpu-svc", "cpu"), {})
        self.assertEqual(self.stored("offcpu-svc", "wall"), {})
        self.assertEqual(self.flame("offcpu-svc", "offcpu")["total"], 7000)

    def test_unknown_sample_type_is_a_partial_success(self):
        r = otlp_py.Request()
        s = r.stack([r.location(["alloc"])])
        rp = r.resource({"service.name": "partial"})
        rp.profile(("allocated_objects", "count"), samples=[{"stack": s, "values": [3]}])
        rp.profile(("cpu", "nanoseconds"), samples=[{"stack": s, "values": [40]}])
        status, _, data = self.post(r.protobuf())
        self.assertEqual(status, 200, data)
        rejected, message = otlp_py.parse_response(data)
        self.assertEqual(rejected, 1)
        self.assertIn("allocated_objects/count", message)
        self.assertEqual(self.stored("partial", "cpu"), {("alloc",): 40})

    def refused(self, body, status=400, service="otlp-bad", content_type=PROTOBUF):
        before = self.c.count("rollups"), self.link_count()
        got, _, data = self.post(body, content_type)
        self.assertEqual(got, status, data)
        self.assertEqual((self.c.count("rollups"), self.link_count()), before)
        self.assertEqual(self.stored(service, "cpu"), {})
        return data.decode()

    def test_missing_service_name_is_refused_naming_it(self):
        r = example_request(("otlp-bad", "x"))
        r.resources[1].attrs = {"host.name": "h"}
        self.assertIn("service.name", self.refused(r.protobuf()))

    def test_other_environment_is_forbidden(self):
        body = example_request(("otlp-bad", "y"), environment="staging").protobuf()
        self.assertIn("staging", self.refused(body, 403))
        body = example_request(("env-ok", "z"), environment="production").protobuf()
        self.assertEqual(self.post(body)[0], 200)

    def test_v1_9_numbering_is_refused_not_misread(self):
        body = example_request(("otlp-bad", "v19")).protobuf(v19=True)
        self.refused(body)

    def test_every_malformed_index_is_refused(self):
        def broken(edit):
            r = example_request(("otlp-bad", "idx"))
            edit(r)
            return r.protobuf()

        cases = {
            "stack_table": lambda r: r.resources[0].profiles[0].samples[0].update(stack=99),
            "link_table": lambda r: r.resources[0].profiles[0].samples[0].update(link=99),
            "location_table": lambda r: r.stacks.append([99]),
            "function_table": lambda r: r.locations.append((0, 0, [99])),
            "mapping_table": lambda r: r.locations.append((99, 0, [])),
            "string_table": lambda r: r.functions.append(999),
            "attribute_table": lambda r: r.resources[0].profiles[0].samples[1].update(
                attributes=[99]),
        }
        for table, edit in cases.items():
            with self.subTest(table=table):
                self.assertIn(table, self.refused(broken(edit)))
        self.assertIn("string_table", self.refused(
            example_request(("otlp-bad", "j")).json().replace(b'"stringTable": ["",',
                                                              b'"stringTable": ["x",'),
            content_type="application/json"))

    def test_garbage_and_bad_json_are_refused(self):
        self.refused(b"\xff\xff\xff\xff")
        self.assertIn("not JSON", self.refused(b"{", content_type="application/json"))
        self.refused(b'{"resourceProfiles": 3}', content_type="application/json")
        self.refused(b"x", 415, content_type="text/plain")

    def test_span_ids_create_no_series(self):
        r = otlp_py.Request()
        s = r.stack([r.location(["handler"])])
        samples = [{"stack": s, "values": [1], "link": r.link(TRACE, "%016x" % (i + 1))}
                   for i in range(50)]
        r.resource({"service.name": "many-spans"}).profile(("cpu", "nanoseconds"), samples)
        before = self.c.count("series")
        self.assertEqual(self.post(r.protobuf())[0], 200)
        self.assertEqual(self.c.count("series"), before + 1)
        one = self.flame("many-spans", "cpu", span_id="%016x" % 7)
        self.assertEqual(one["total"], 1)
        self.assertEqual(self.flame("many-spans", "cpu", trace_id=TRACE)["total"], 50)


class PprofSpanLabels(Base):
    def test_go_pprof_do_labels_link_spans(self):
        prog = build_go_profiler()
        path = os.path.join(self.c.tmp, "span.pprof")
        span_a, span_b = "00000000000000a1", "00000000000000b2"
        subprocess.run([prog, path, "1", TRACE, span_a, span_b], check=True,
                       capture_output=True, timeout=60)
        with open(path, "rb") as f:
            status, doc = self.c.upload(self.tok, f.read(), "go-spans", "cpu")
        self.assertEqual(status, 200, doc)
        self.assertGreater(doc["links"]["stored"], 0)
        a = self.flame("go-spans", "cpu", span_id=span_a)
        b = self.flame("go-spans", "cpu", span_id=span_b)
        names_a = {f for p in self.paths(a["root"]) for f in p}
        names_b = {f for p in self.paths(b["root"]) for f in p}
        self.assertIn("main.hashLoop", names_a)
        self.assertNotIn("main.fib", names_a)
        self.assertIn("main.fib", names_b)
        self.assertNotIn("main.hashLoop", names_b)
        whole = self.flame("go-spans", "cpu")["total"]
        self.assertLessEqual(a["total"] + b["total"], whole)
        status, trace = self.get("/api/apm/traces/%s/profile" % TRACE)
        self.assertEqual(status, 200, trace)
        self.assertEqual({s["span_id"]: s["span_name"] for s in trace["spans"]},
                         {span_a: "GET /hash", span_b: "GET /fib"})

    def test_datadog_numeric_span_ids_and_endpoint(self):
        data = pprof_py.build([
            (["main", "checkout"], 30, {"span id": 1234, "local root span id": 1000,
                                        "trace endpoint": "POST /checkout"}),
            (["main", "idle"], 70, {})])
        status, doc = self.c.upload(self.tok, data, "dd-svc", "cpu")
        self.assertEqual(status, 200, doc)
        self.assertEqual(doc["links"], {"stored": 1, "dropped": 0})
        span = self.flame("dd-svc", "cpu", span_id="%x" % 1234)
        self.assertEqual(self.paths(span["root"]), {("main", "checkout"): 30})
        self.assertEqual(self.flame("dd-svc", "cpu")["total"], 100)

    def test_pyroscope_ingest_keeps_span_labels(self):
        data = pprof_py.build([(["main", "handle"], 10_000_000, {"span_id": "00000000000000cc",
                                                               "trace_id": TRACE}),
                               (["main", "idle"], 30_000_000, {})])
        status, _, body = self.c.request("POST", "/ingest", self.tok, body=data, params={
            "name": "pyro-spans.cpu", "format": "pprof"},
            content_type="application/octet-stream")
        self.assertEqual(status, 200, body)
        span = self.flame("pyro-spans", "cpu", span_id="cc")
        self.assertEqual(self.paths(span["root"]), {("main", "handle"): 10_000_000})
        self.assertEqual(self.flame("pyro-spans", "cpu")["total"], 40_000_000)

    def test_include_children_follows_the_local_root_span(self):
        root, child = 1000, 1234
        data = pprof_py.build([
            (["main", "serve"], 5, {"span id": root, "local root span id": root,
                                    "trace_id": TRACE}),
            (["main", "serve", "query"], 30, {"span id": child, "local root span id": root,
                                              "trace_id": TRACE}),
            (["main", "other"], 7, {"span id": 99, "local root span id": 98})])
        self.assertEqual(self.c.upload(self.tok, data, "tree-svc", "cpu")[0], 200)
        alone = self.flame("tree-svc", "cpu", span_id="%x" % root)
        self.assertEqual(alone["total"], 5)
        tree = self.flame("tree-svc", "cpu", span_id="%x" % root, include_children="true")
        self.assertEqual(self.paths(tree["root"]), {("main", "serve"): 5,
                                                   ("main", "serve", "query"): 30})
        self.assertEqual(self.flame("tree-svc", "cpu", span_id="%x" % child,
                                    include_children="true")["total"], 30)
        self.assertEqual(tree["children"], {"resolved": True, "spans": 2})
        status, trace = self.get("/api/apm/traces/%s/profile" % TRACE,
                                 {"service": "tree-svc", "include_children": "true"})
        self.assertEqual(status, 200, trace)
        by_span = {s["span_id"]: s for s in trace["spans"]}
        self.assertEqual(by_span["%016x" % root]["value"], 5)
        self.assertEqual(by_span["%016x" % root]["value_with_children"], 35)
        # A local root id tells the root's children, not the child's: a child's own children
        # would name the root too, so they cannot be told apart. Said, never guessed.
        child_row = by_span["%016x" % child]
        self.assertIsNone(child_row["value_with_children"])
        self.assertEqual(child_row["children"]["reason"]["code"], "children_unresolved")
        self.assertEqual(self.get("/api/apm/profiles/flamegraph", {
            "service": "tree-svc", "profile_type": "cpu", "include_children": "true"})[0], 400)

    def test_include_children_walks_parent_span_ids_within_the_trace(self):
        # root -> mid -> leaf, and root -> side in another service; "other" is a span of
        # another trace whose parent id happens to be root's.
        other_trace = "1" * 32
        data = pprof_py.build([
            (["main", "serve"], 1, {"span_id": "0a", "trace_id": TRACE}),
            (["main", "serve", "mid"], 10, {"span_id": "0b", "parent_span_id": "0a",
                                            "trace_id": TRACE}),
            (["main", "serve", "mid", "leaf"], 100, {"span_id": "0c", "parent_span_id": "0b",
                                                     "trace_id": TRACE}),
            (["main", "stray"], 1000, {"span_id": "0e", "parent_span_id": "0a",
                                       "trace_id": other_trace})])
        side = pprof_py.build([(["main", "side"], 10000, {"span_id": "0d", "parent_span_id": "0a",
                                                        "trace_id": TRACE})])
        self.assertEqual(self.c.upload(self.tok, data, "parent-svc", "cpu")[0], 200)
        self.assertEqual(self.c.upload(self.tok, side, "parent-side", "cpu")[0], 200)
        root = self.flame("parent-svc", "cpu", span_id="0a", include_children="true")
        self.assertEqual(root["total"], 111)  # the other service's child is not this service's
        self.assertEqual(root["children"], {"resolved": True, "spans": 4})
        mid = self.flame("parent-svc", "cpu", span_id="0b", include_children="true")
        self.assertEqual(self.paths(mid["root"]), {("main", "serve", "mid"): 10,
                                                  ("main", "serve", "mid", "leaf"): 100})
        leaf = self.flame("parent-svc", "cpu", span_id="0c", include_children="true")
        self.assertEqual((leaf["total"], leaf["children"]), (100, {"resolved": True, "spans": 1}))
        self.assertEqual(self.flame("parent-svc", "cpu", span_id="0a")["total"], 1)
        status, trace = self.get("/api/apm/traces/%s/profile" % TRACE,
                                 {"include_children": "true"})
        self.assertEqual(status, 200, trace)
        by_span = {s["span_id"]: s for s in trace["spans"]}
        self.assertEqual(by_span["%016x" % 0x0a]["value_with_children"], 111)
        self.assertEqual(by_span["%016x" % 0x0d]["value_with_children"], 10000)

    def test_include_children_without_parents_says_children_unresolved(self):
        flat = "2" * 32  # a trace of its own: no link of it names a parent
        data = pprof_py.build([
            (["main", "a"], 3, {"span_id": "00000000000000f1", "trace_id": flat}),
            (["main", "a", "b"], 4, {"span_id": "00000000000000f2", "trace_id": flat})])
        self.assertEqual(self.c.upload(self.tok, data, "flat-svc", "cpu")[0], 200)
        doc = self.flame("flat-svc", "cpu", span_id="f1", include_children="true")
        self.assertEqual(doc["total"], 3)  # the span alone, and said to be so
        self.assertFalse(doc["children"]["resolved"])
        self.assertEqual(doc["children"]["spans"], 1)
        self.assertEqual(doc["children"]["reason"]["code"], "children_unresolved")

    def test_span_id_query_returns_only_that_span(self):
        data = pprof_py.build([
            (["main", "a"], 10, {"span_id": "00000000000000aa", "trace_id": TRACE}),
            (["main", "b"], 20, {"span_id": "00000000000000bb", "trace_id": TRACE}),
            (["main", "c"], 40, {})])
        before = self.c.count("series")
        self.assertEqual(self.c.upload(self.tok, data, "labels-svc", "cpu")[0], 200)
        self.assertEqual(self.c.count("series"), before + 1)
        self.assertEqual(self.paths(self.flame("labels-svc", "cpu", span_id="aa")["root"]),
                         {("main", "a"): 10})
        top = self.get("/api/apm/profiles/top", dict(
            self.window(), service="labels-svc", profile_type="cpu", trace_id=TRACE))[1]
        self.assertEqual({f["name"]: f["self"] for f in top["functions"] if f["self"]},
                         {"a": 10, "b": 20})
        self.assertEqual(self.get("/api/apm/profiles/flamegraph", {
            "service": "labels-svc", "profile_type": "cpu", "span_id": "xyz"})[0], 400)

    def test_span_diff_against_its_endpoint_baseline(self):
        t = int(time.time()) - 600
        base = pprof_py.build([(["main", "handler", "db"], 90, {"span_id": "1", "span_name": "GET /x"}),
                               (["main", "handler", "json"], 10, {"span_id": "1", "span_name": "GET /x"})],
                              time_nanos=(t - 1200) * 1_000_000_000)
        slow = pprof_py.build([(["main", "handler", "db"], 10, {"span_id": "2", "span_name": "GET /x"}),
                               (["main", "handler", "json"], 90, {"span_id": "2", "span_name": "GET /x"})],
                              time_nanos=t * 1_000_000_000)
        for data in (base, slow):
            self.assertEqual(self.c.upload(self.tok, data, "diff-svc", "cpu")[0], 200)
        status, doc = self.get("/api/apm/profiles/diff", {
            "service": "diff-svc", "profile_type": "cpu", "span_id": "2"})
        self.assertEqual(status, 200, doc)
        self.assertEqual(doc["mode"], "span")
        self.assertEqual((doc["before"]["total"], doc["after"]["total"]), (100, 100))
        self.assertEqual(doc["before"]["span_name"], "GET /x")
        movers = {m["name"]: m["delta_pts"] for m in doc["movers"]}
        self.assertAlmostEqual(movers["json"], 80.0)

    def test_span_reads_and_the_diff_baseline_honour_node(self):
        t = int(time.time()) - 600

        def spans(span, db, js, at):
            return pprof_py.build([
                (["main", "handler", "db"], db, {"span_id": span, "span_name": "GET /n"}),
                (["main", "handler", "json"], js, {"span_id": span, "span_name": "GET /n"})],
                time_nanos=at * 1_000_000_000)
        for span, db, js, at, node in (("1a", 90, 10, t - 1200, "node-a"),
                                       ("1b", 10, 90, t - 1200, "node-b"),
                                       ("2a", 50, 50, t, "node-a")):
            self.assertEqual(self.c.upload(self.tok, spans(span, db, js, at), "node-svc", "cpu",
                                           params={"node": node})[0], 200)
        status, doc = self.get("/api/apm/profiles/diff", {
            "service": "node-svc", "profile_type": "cpu", "span_id": "2a", "node": "node-a"})
        self.assertEqual(status, 200, doc)
        self.assertEqual((doc["before"]["total"], doc["after"]["total"]), (100, 100))
        movers = {m["name"]: m["delta_pts"] for m in doc["movers"]}
        self.assertAlmostEqual(movers["db"], -40.0)  # against node-a's endpoint only
        status, every = self.get("/api/apm/profiles/diff", {
            "service": "node-svc", "profile_type": "cpu", "span_id": "2a"})
        self.assertEqual(status, 200, every)
        self.assertEqual(every["before"]["total"], 200)  # every node's
        self.assertEqual(self.flame("node-svc", "cpu", span_id="2a", node="node-b")["total"], 0)
        self.assertEqual(self.flame("node-svc", "cpu", span_id="2a", node="node-a")["total"], 100)


class LinkRetention(Base):
    serve_args = ("--link-retention-hours", "1", "--retention-interval", "1")

    def test_retention_drops_links_without_touching_rollups(self):
        # two days old: past the hour on SQLite, and in a whole day ClickHouse drops
        old = (int(time.time()) - 2 * 86400) * 1_000_000_000
        data = pprof_py.build([(["main", "old"], 5, {"span_id": "0f"})], time_nanos=old)
        self.assertEqual(self.c.upload(self.tok, data, "ret-svc", "cpu")[0], 200)
        deadline = time.time() + 60
        while self.link_count() and time.time() < deadline:
            time.sleep(0.2)
        self.assertEqual(self.link_count(), 0)
        self.assertEqual(self.stored("ret-svc", "cpu"), {("main", "old"): 5})


class OlderLinksFile(unittest.TestCase):
    def test_a_links_file_without_parent_ids_is_upgraded_and_read(self):
        with Collector(start=False, backend="sqlite") as c:  # a SQLite links file
            with sqlite3.connect(os.path.join(c.data, "roottrace-links.db")) as db:
                db.executescript(  # the file as a collector before parent ids left it
                    "DROP TABLE IF EXISTS span_links; DROP TABLE IF EXISTS link_stacks;"
                    "CREATE TABLE link_stacks (id INTEGER PRIMARY KEY, hash BLOB NOT NULL"
                    " UNIQUE, n_frames INTEGER NOT NULL, frames TEXT NOT NULL);"
                    "CREATE TABLE span_links (time INTEGER NOT NULL, environment TEXT NOT NULL,"
                    " service TEXT NOT NULL, profile_type TEXT NOT NULL, trace_id TEXT NOT NULL,"
                    " span_id TEXT NOT NULL, span_name TEXT NOT NULL, stack_id INTEGER NOT NULL,"
                    " value INTEGER NOT NULL, samples INTEGER NOT NULL,"
                    " root_span_id TEXT NOT NULL);"
                    "INSERT INTO link_stacks VALUES (1, x'00', 2, 'main' || char(10) || 'old');"
                    "INSERT INTO span_links VALUES (%d, 'production', 'old-svc', 'cpu', '',"
                    " '00000000000000ab', '', 1, 7, 1, '');" % int(time.time()))
            c.start()
            user = c.create_token("user", role="viewer")
            status, doc = c.get_json("/api/apm/profiles/flamegraph", user, params={
                "service": "old-svc", "profile_type": "cpu", "span_id": "ab",
                "include_children": "true"})
            self.assertEqual(status, 200, doc)
            self.assertEqual(doc["total"], 7)
            self.assertEqual(doc["children"]["reason"]["code"], "children_unresolved")


class FleetPprofSpanLabels(PprofSpanLabels):
    """The span cases on the fleet stores: uploads through collector A, every read through
    collector B, which answers from the same ClickHouse links."""
    backend = "fleet"


class FleetOtlpIngest(OtlpIngest):
    """OTLP ingest and its links on the fleet stores, read through a second collector."""
    backend = "fleet"


class FleetServeWithoutData(unittest.TestCase):
    def test_serve_needs_no_data_dir_in_fleet_mode(self):
        """The links are in ClickHouse: nothing of a fleet collector is on its disk."""
        with Collector(backend="fleet", start=False) as c:
            log = os.path.join(c.tmp, "nodata.log")
            with open(log, "w") as out:
                proc = subprocess.Popen([c.binary, "serve", "--listen", "127.0.0.1:0"]
                                        + c.server_args(), stdout=out, stderr=out)
            try:
                deadline = time.time() + 15
                while time.time() < deadline and "listening on" not in open(log).read():
                    self.assertIsNone(proc.poll(), open(log).read())
                    time.sleep(0.05)
                self.assertIn("listening on", open(log).read())
            finally:
                proc.terminate()
                proc.wait(timeout=30)


class FleetLinkRetention(LinkRetention):
    """Link retention on ClickHouse drops whole days of links, never the rollups."""
    backend = "fleet"


if __name__ == "__main__":
    harness.main()
