# SPDX-License-Identifier: Apache-2.0
# Lines (issue 32): a function's self time by file and line, from uploads that carry lines (a
# real Go runtime/pprof CPU profile, built pprofs with Line.line and Function.filename) and
# from the agent's (build-id, offset) leaves, resolved on demand; the share with no line and
# why; the bounds and their counter; heap and wall have lines too and never merge with cpu;
# the diff form; source text from --source-dir; top's answers unchanged by line detail.
import os
import re
import sqlite3
import subprocess
import time
import unittest

import harness
import otlp_py
import pprof_py
from collector_fixture import Collector, build_dir

SRC = os.environ.get("ROOTTRACE_SRC", os.getcwd())
GO_MAIN = os.path.join(SRC, "tests", "helpers", "gocpuprofile", "main.go")


def build_go_profiler():
    """tests/helpers/gocpuprofile under the build dir (offline, local toolchain)."""
    out = os.path.join(build_dir(), "tests", "gocpuprofile")
    env = dict(os.environ, GOFLAGS="-mod=mod", GOPROXY="off", GOTOOLCHAIN="local",
               GOCACHE=os.path.join(build_dir(), "gocache"), CGO_ENABLED="0")
    subprocess.run(["go", "build", "-o", out, "."], cwd=os.path.dirname(GO_MAIN), env=env,
                   check=True, capture_output=True, timeout=300)
    return out


def function_lines(path, name):
    """The line numbers of Go function `name`'s body in path: from `func name(` to the `}`
    that closes it at column 0."""
    with open(path) as f:
        src = f.read().splitlines()
    start = next(i for i, l in enumerate(src) if l.startswith("func %s(" % name)) + 1
    end = next(i for i in range(start, len(src) + 1) if src[i - 1] == "}")
    return range(start, end + 1)


NS = 10_000_000  # one 10 ms sample


class LinesCase(unittest.TestCase):
    serve_args = ()

    @classmethod
    def setUpClass(cls):
        cls.c = Collector(serve_args=cls.serve_args)
        # A class cleanup, not tearDownClass: it runs when a subclass's setUpClass raises
        # after this (a missing node SDK, a failed go build) too.
        cls.addClassCleanup(cls.c.close)
        cls.tok = cls.c.create_token("collector")
        cls.viewer = cls.c.create_token("user", role="viewer")

    def upload(self, samples, service, profile_type="cpu", sample_types=(("cpu", "nanoseconds"),),
               **kw):
        data = pprof_py.build(samples, sample_types=sample_types, time_nanos=time.time_ns(),
                              period_type=sample_types[0], period=NS, **kw)
        status, body = self.c.upload(self.tok, data, service, profile_type)
        self.assertEqual(status, 200, body)
        return body

    def lines(self, service, function, profile_type="cpu", status=200, **params):
        params.update(service=service, profile_type=profile_type, function=function)
        params.setdefault("time_range", "1h")
        params = {k: v for k, v in params.items() if v is not None}
        got, body = self.c.get_json("/api/apm/profiles/lines", self.viewer, params=params)
        self.assertEqual(got, status, body)
        return body

    def top(self, service, profile_type="cpu"):
        status, body = self.c.get_json("/api/apm/profiles/top", self.viewer, params={
            "service": service, "profile_type": profile_type, "time_range": "1h"})
        self.assertEqual(status, 200, body)
        return {f["name"]: f["self"] for f in body["functions"]}


class GoRuntimePprof(LinesCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        prog = build_go_profiler()
        path = os.path.join(cls.c.tmp, "cpu.pprof")
        subprocess.run([prog, path, "1.5"], check=True, capture_output=True, timeout=60)
        with open(path, "rb") as f:
            status, body = cls.c.upload(cls.tok, f.read(), "go", "cpu")
        assert status == 200, body

    def test_fib_lines_are_lines_of_fib_in_its_source_file(self):
        top = self.top("go")
        self.assertGreater(top.get("main.fib", 0), 0, top)
        doc = self.lines("go", "main.fib")
        self.assertEqual(doc["self"], top["main.fib"])
        body = function_lines(GO_MAIN, "fib")
        self.assertTrue(doc["lines"], doc)
        for line in doc["lines"]:
            self.assertTrue(line["file"].endswith("tests/helpers/gocpuprofile/main.go"), line)
            self.assertIn(line["line"], body, (line, list(body)))
        # every nanosecond of its self time is on a line: Go sends them all
        self.assertEqual(sum(l["self"] for l in doc["lines"]), doc["self"])
        self.assertEqual(doc["no_line"]["self"], 0)
        selfs = [l["self"] for l in doc["lines"]]
        self.assertEqual(selfs, sorted(selfs, reverse=True))

    def test_hash_loop_leaf_lines_are_in_the_sha256_source(self):
        top = self.top("go")
        leaf = max((n for n in top if "sha256" in n), key=lambda n: top[n])
        doc = self.lines("go", leaf)
        self.assertTrue(doc["lines"], doc)
        self.assertTrue(all("crypto/sha256/" in l["file"] for l in doc["lines"]), doc["lines"])
        self.assertEqual(sum(l["self"] for l in doc["lines"]) + doc["no_line"]["self"],
                         doc["self"])


class BuiltProfiles(LinesCase):
    def test_lines_sum_per_line_biggest_first_with_exact_values(self):
        hot = "app.parse"
        self.upload([(["main", (hot, "/src/app/parse.go", 40)], 5 * NS),
                     (["main", "app.run", (hot, "/src/app/parse.go", 40)], 2 * NS),
                     (["main", (hot, "/src/app/parse.go", 12)], 3 * NS),
                     (["main", (hot, "/src/app/util.go", 7)], 1 * NS)], "exact")
        doc = self.lines("exact", hot)
        self.assertEqual(doc["self"], 11 * NS)
        self.assertEqual([(l["file"], l["line"], l["self"]) for l in doc["lines"]],
                         [("/src/app/parse.go", 40, 7 * NS), ("/src/app/parse.go", 12, 3 * NS),
                          ("/src/app/util.go", 7, 1 * NS)])
        self.assertAlmostEqual(doc["lines"][0]["share"], 700 / 11, places=6)
        self.assertEqual(doc["no_line"], {"self": 0, "share": 0.0, "reasons": []})

    def test_lines_are_only_the_leafs_self_time(self):
        self.upload([([("app.outer", "/src/o.go", 3), ("app.inner", "/src/i.go", 9)], 4 * NS)],
                    "leaf")
        self.assertEqual(self.lines("leaf", "app.inner")["lines"][0]["line"], 9)
        # app.outer has no self time: nothing to show
        self.lines("leaf", "app.outer", status=404)

    def test_a_function_without_lines_says_the_upload_carried_none(self):
        self.upload([(["main", "app.nolines"], 6 * NS),
                     (["main", ("app.nolines", "/src/n.go", 5)], 2 * NS)], "partial")
        doc = self.lines("partial", "app.nolines")
        self.assertEqual(doc["self"], 8 * NS)
        self.assertEqual(doc["lines"][0]["self"], 2 * NS)
        self.assertEqual(doc["no_line"]["self"], 6 * NS)
        self.assertEqual(doc["no_line"]["share"], 75.0)
        self.assertEqual(doc["no_line"]["reasons"],
                         [{"reason": "upload carried no lines", "self": 6 * NS, "share": 75.0}])

    def test_agent_offsets_without_debug_info_are_never_guessed(self):
        build_id = "3f2a9c0d1e4b5a6978877665544332211f0e0d0c"
        self.upload([(["main", ("native_hot", None, 0, build_id, 0x1234)], 3 * NS),
                     (["main", ("native_hot", None, 0, build_id, 0x1300)], 1 * NS)], "agent")
        doc = self.lines("agent", "native_hot")
        self.assertEqual(doc["self"], 4 * NS)
        self.assertEqual(doc["lines"], [])
        self.assertEqual(doc["no_line"]["self"], 4 * NS)
        self.assertEqual(len(doc["no_line"]["reasons"]), 1, doc)
        self.assertIn("no debug info for build-id " + build_id,
                      doc["no_line"]["reasons"][0]["reason"])
        self.assertEqual(sorted((u["offset"], u["self"]) for u in doc["unresolved"]),
                         [("0x1234", 3 * NS), ("0x1300", 1 * NS)])
        self.assertTrue(all(u["build_id"] == build_id for u in doc["unresolved"]))
        # the module the offsets are in: the mapping's file name
        self.assertEqual({u["module"] for u in doc["unresolved"]}, {"lib-" + build_id})
        self.assertTrue(doc["no_line"]["reasons"][0]["reason"].startswith(
            "lib-%s: no debug info for build-id" % build_id), doc["no_line"])

    def test_cpu_and_wall_lines_never_merge(self):
        f = "app.handler"
        self.upload([(["main", (f, "/src/h.go", 10)], 3 * NS)], "both", "cpu")
        self.upload([(["main", (f, "/src/h.go", 20)], 9 * NS)], "both", "wall",
                    sample_types=(("wall", "nanoseconds"),))
        cpu = self.lines("both", f, "cpu")
        wall = self.lines("both", f, "wall")
        self.assertEqual([(l["line"], l["self"]) for l in cpu["lines"]], [(10, 3 * NS)])
        self.assertEqual([(l["line"], l["self"]) for l in wall["lines"]], [(20, 9 * NS)])
        self.assertEqual((cpu["measurement"], wall["measurement"]), ("cpu", "wall"))

    def test_heap_lines_are_averaged_over_uploads_like_its_stacks(self):
        f = "app.alloc"
        types = (("inuse_objects", "count"), ("inuse_space", "bytes"))
        for space in (1000, 3000):
            self.upload([(["main", (f, "/src/a.go", 77)], [10, space])], "heapy", "heap",
                        sample_types=types)
        doc = self.lines("heapy", f, "heap")
        self.assertEqual(doc["unit"], "bytes")
        self.assertEqual(doc["self"], 2000)
        self.assertEqual([(l["line"], l["self"]) for l in doc["lines"]], [(77, 2000)])

    def test_line_detail_does_not_change_top(self):
        stacks = [(["main", "app.a", "app.b"], 5 * NS), (["main", "app.c"], 2 * NS)]
        with_lines = [(["main", "app.a", ("app.b", "/s/b.go", 3)], 5 * NS),
                      (["main", ("app.c", "/s/c.go", 4)], NS),
                      (["main", ("app.c", "/s/c.go", 5)], NS)]
        self.upload(stacks, "plain")
        self.upload(with_lines, "lined")
        self.assertEqual(self.top("plain"), self.top("lined"))

    def test_diff_of_two_windows_ranks_lines_by_growth_of_share(self):
        f = "app.diffed"
        now = int(time.time())
        before_t, after_t = now - 3600, now - 60

        def up(t, samples):
            data = pprof_py.build(samples, time_nanos=t * 10**9, period=NS,
                                  period_type=("cpu", "nanoseconds"))
            status, body = self.c.upload(self.tok, data, "diffy", "cpu")
            self.assertEqual(status, 200, body)

        up(before_t, [(["main", (f, "/s/d.go", 1)], 8 * NS), (["main", (f, "/s/d.go", 2)], 2 * NS)])
        up(after_t, [(["main", (f, "/s/d.go", 1)], 2 * NS), (["main", (f, "/s/d.go", 2)], 8 * NS)])
        doc = self.lines("diffy", f, time_range=None, before_start=before_t - 300,
                         before_end=before_t + 300, after_start=after_t - 300,
                         after_end=after_t + 300)
        self.assertEqual(doc["before"]["self"], 10 * NS)
        self.assertEqual(doc["after"]["self"], 10 * NS)
        self.assertEqual([(l["line"], round(l["delta_pts"], 6)) for l in doc["lines"]],
                         [(2, 60.0), (1, -60.0)])
        self.assertEqual((doc["lines"][0]["before_self"], doc["lines"][0]["after_self"]),
                         (2 * NS, 8 * NS))

    def test_function_is_required_and_span_filters_refused(self):
        status, body = self.c.get_json("/api/apm/profiles/lines", self.viewer, params={
            "service": "exact", "profile_type": "cpu"})
        self.assertEqual(status, 400, body)
        self.assertIn("function", body["detail"])
        self.lines("exact", "app.parse", status=400, trace_id="0af7651916cd43dd8448eb211c80319c")

    def test_lines_need_a_viewer_token(self):
        status, _ = self.c.get_json("/api/apm/profiles/lines", None, params={
            "service": "exact", "profile_type": "cpu", "function": "app.parse"})
        self.assertEqual(status, 401)
        status, _ = self.c.get_json("/api/apm/profiles/lines", self.tok, params={
            "service": "exact", "profile_type": "cpu", "function": "app.parse"})
        self.assertIn(status, (401, 403))


class Otlp(LinesCase):
    """OTLP profiles' line table: a leaf's innermost line with its function's filename, and an
    unsymbolised leaf's build-id and file offset, as on the pprof route."""

    def export(self, service, as_json):
        r = otlp_py.Request()
        t = time.time_ns()
        hot = r.location([("otlp.hot", "/src/otlp/hot.go", 17)])
        hot2 = r.location([("otlp.hot", "/src/otlp/hot.go", 19)])
        main = r.location([("main", "/src/otlp/main.go", 3)])
        exe = r.mapping("/usr/bin/app", build_id="abcdef12", start=0x400000, offset=0x1000)
        raw = r.location([], mapping=exe, address=0x401234)
        r.resource({"service.name": service}).profile(
            ("cpu", "nanoseconds"), time_nanos=t, samples=[
                {"stack": r.stack([hot, main]), "values": [3 * NS]},
                {"stack": r.stack([hot2, main]), "values": [NS]},
                {"stack": r.stack([raw, main]), "values": [2 * NS]}])
        body = r.json() if as_json else r.protobuf()
        status, _, out = self.c.request(
            "POST", "/v1development/profiles", self.tok, body=body,
            content_type="application/json" if as_json else "application/x-protobuf")
        self.assertEqual(status, 200, out)

    def check(self, service):
        doc = self.lines(service, "otlp.hot")
        self.assertEqual([(l["file"], l["line"], l["self"]) for l in doc["lines"]],
                         [("/src/otlp/hot.go", 17, 3 * NS), ("/src/otlp/hot.go", 19, NS)])
        top = self.top(service)
        raw = next(n for n in top if n.startswith("abcdef12+0x"))
        doc = self.lines(service, raw)
        self.assertEqual(doc["unresolved"][0]["offset"], "0x2234")  # 0x401234 - start + 0x1000
        self.assertEqual(doc["unresolved"][0]["module"], "app")
        self.assertIn("no debug info for build-id abcdef12", doc["no_line"]["reasons"][0]["reason"])

    def test_protobuf_line_table(self):
        self.export("otlp-pb", False)
        self.check("otlp-pb")

    def test_json_line_table(self):
        self.export("otlp-json", True)
        self.check("otlp-json")


class Bounds(LinesCase):
    def dropped(self, bound):
        return self.c.metrics().get(
            'roottrace_line_positions_dropped_total{bound="%s"}' % bound, 0)

    def test_the_per_function_bound_keeps_the_biggest_lines_and_counts_the_rest(self):
        before = self.dropped("function")
        f = "app.wide"
        # 300 lines, line i worth i + 1 samples: lines 0..43 are the smallest 44
        self.upload([(["main", (f, "/s/w.go", i + 1)], (i + 1) * NS) for i in range(300)],
                    "wide")
        self.assertEqual(self.dropped("function") - before, 44)
        doc = self.lines("wide", f, limit=1000)
        self.assertEqual(doc["n_lines"], 256)
        self.assertEqual(min(l["line"] for l in doc["lines"]), 45)
        reasons = doc["no_line"]["reasons"]
        self.assertEqual(len(reasons), 1, reasons)
        self.assertIn("bound of 256 lines per function", reasons[0]["reason"])
        self.assertEqual(reasons[0]["self"], sum(range(1, 45)) * NS)
        self.assertEqual(doc["self"], sum(range(1, 301)) * NS)

    def test_the_bound_holds_across_uploads_into_one_bucket(self):
        if self.c.backend == "fleet":
            self.skipTest("ClickHouse sums line rows in its own merges: its bounds hold per "
                          "upload (docs/api.md)")
        f = "app.grows"
        before = self.dropped("function")
        self.upload([(["main", (f, "/s/g.go", i + 1)], 2 * NS) for i in range(200)], "grows")
        self.upload([(["main", (f, "/s/g.go", i + 1001)], NS) for i in range(100)], "grows")
        self.assertEqual(self.dropped("function") - before, 44)
        doc = self.lines("grows", f, limit=1000)
        self.assertEqual(doc["n_lines"], 256)
        self.assertEqual(doc["no_line"]["self"], 44 * NS)

    def test_the_per_series_bound_counts_what_it_drops(self):
        before = self.dropped("series")
        # 40 functions of 250 lines: 10,000 lines, 1,808 past the 8,192 of a series
        samples = [(["main", ("app.f%d" % k, "/s/f%d.go" % k, i + 1)], NS + (k * 250 + i))
                   for k in range(40) for i in range(250)]
        self.upload(samples, "manyfuncs")
        self.assertEqual(self.dropped("series") - before, 10000 - 8192)
        dropped_self = 0
        for k in (0, 39):
            doc = self.lines("manyfuncs", "app.f%d" % k, limit=1000)
            dropped_self += doc["no_line"]["self"]
            self.assertEqual(sum(l["self"] for l in doc["lines"]) + doc["no_line"]["self"],
                             doc["self"])
        # the smallest go first: app.f0's lines are the smallest, app.f39's the biggest
        self.assertGreater(self.lines("manyfuncs", "app.f0")["no_line"]["self"], 0)
        self.assertEqual(self.lines("manyfuncs", "app.f39")["no_line"]["self"], 0)
        self.assertIn("8192 lines per series",
                      self.lines("manyfuncs", "app.f0")["no_line"]["reasons"][0]["reason"])


class PyroscopeNodeSdk(LinesCase):
    """A real Pyroscope Node.js SDK upload (wall and heap, through POST /ingest): V8 names each
    function's own line, which must be the line the function is defined on in app.js."""
    APP = os.path.join(SRC, "tests", "helpers", "pyroscope-nodejs", "app.js")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        sdk = os.path.join(build_dir(), "node", "node_modules", "@pyroscope", "nodejs")
        if not os.path.exists(sdk):
            raise AssertionError("%s is missing: run `make node-sdk` (make check does)" % sdk)
        env = dict(os.environ, NODE_PATH=os.path.dirname(os.path.dirname(sdk)))
        r = subprocess.run(["node", cls.APP, "http://127.0.0.1:%d" % cls.c.port, cls.tok,
                            "nodeapp", "5"], env=env, capture_output=True, text=True,
                           timeout=90)
        assert r.returncode == 0, r.stderr[-2000:]

    def defined_on(self, function):
        with open(self.APP) as f:
            return next(i + 1 for i, l in enumerate(f) if l.startswith("function %s(" % function))

    def check_hot(self, profile_type, function):
        top = self.top("nodeapp", profile_type)
        name = max(top, key=top.get)
        self.assertIn(function, name, top)
        doc = self.lines("nodeapp", name, profile_type)
        self.assertEqual(doc["self"], top[name])
        line = doc["lines"][0]
        self.assertTrue(line["file"].endswith("tests/helpers/pyroscope-nodejs/app.js"), line)
        self.assertEqual(line["line"], self.defined_on(function))
        self.assertEqual(sum(l["self"] for l in doc["lines"]), doc["self"])

    def test_wall_hot_function_line_is_its_line_in_app_js(self):
        self.check_hot("wall", "rootTraceHotFunction")

    def test_heap_hot_function_line_is_its_line_in_app_js(self):
        self.check_hot("heap", "rootTraceKeepsMemory")


class GperftoolsHeap(LinesCase):
    """gperftools/tcmalloc heap profiles: in-use columns objects/count + space/bytes."""
    TYPES = (("objects", "count"), ("space", "bytes"))

    def test_space_bytes_is_stored_as_heap_with_object_counts_beside(self):
        doc = self.upload([(["main", ("tc_alloc_hot", "/src/m.cc", 21)], [3, 4096]),
                           (["main", "other"], [1, 512])], "tcm", "heap", sample_types=self.TYPES)
        self.assertEqual(doc["sample_type"], "space/bytes")
        self.assertEqual(doc["profile_type"], "heap")
        self.assertEqual(doc["total"], 4608)
        self.assertEqual(doc["inuse_objects"], 4)
        self.assertEqual(self.top("tcm", "heap"), {"tc_alloc_hot": 4096, "other": 512, "main": 0})
        lines = self.lines("tcm", "tc_alloc_hot", "heap")
        self.assertEqual([(l["file"], l["line"], l["self"]) for l in lines["lines"]],
                         [("/src/m.cc", 21, 4096)])

    def test_it_is_taken_as_heap_through_pyroscope_ingest_too(self):
        data = pprof_py.build([(["main", "tc_alloc_hot"], [2, 2048])], sample_types=self.TYPES)
        status, _, body = self.c.request(
            "POST", "/ingest", None, body=data, content_type="application/octet-stream",
            params={"name": "tcm-pyro", "from": str(int(time.time())), "format": "pprof"},
            headers={"Authorization": "Basic " + __import__("base64").b64encode(
                ("x:" + self.tok).encode()).decode()})
        self.assertEqual(status, 200, body)
        self.assertEqual(self.top("tcm-pyro", "heap").get("tc_alloc_hot"), 2048)

    def test_a_profile_with_only_object_counts_is_still_refused(self):
        data = pprof_py.build([(["main"], [2])], sample_types=(("objects", "count"),))
        status, body = self.c.upload(self.tok, data, "tcm-bad", "heap")
        self.assertEqual(status, 422, body)
        self.assertEqual(body["error"], "no_fitting_sample_type")
        self.assertIn("space/bytes", body["detail"])


class Retention(LinesCase):
    """Line detail follows the rollups' retention."""
    serve_args = ("--retention-days", "1", "--retention-interval", "1")

    def test_old_line_detail_goes_with_its_rollups(self):
        old = int(time.time()) - 3 * 86400
        for t, source in ((old, "/s/gone.go"), (int(time.time()), "/s/k.go")):
            data = pprof_py.build([(["main", ("app.kept", source, 8)], NS)],
                                  time_nanos=t * 10**9, period=NS)
            status, body = self.c.upload(self.tok, data, "retained", "cpu")
            self.assertEqual(status, 200, body)
        deadline = time.time() + 20
        while time.time() < deadline:
            got, body = self.c.get_json("/api/apm/profiles/lines", self.viewer, params=dict(
                service="retained", profile_type="cpu", function="app.kept",
                start=old - 600, end=old + 600))
            if got == 404:
                break
            time.sleep(0.2)
        self.assertEqual(got, 404, body)
        self.assertEqual(self.lines("retained", "app.kept")["lines"][0]["self"], NS)
        if self.c.backend == "sqlite":
            with self.c.db() as db:
                buckets = [b for (b,) in db.execute("SELECT bucket FROM line_rollups")]
                # the sources dictionary keeps only what the kept rows name
                sources = [t for (t,) in db.execute("SELECT text FROM line_sources")]
            self.assertEqual(len(buckets), 1)
            self.assertGreater(buckets[0], old + 86400)
            self.assertEqual(sources, ["/s/k.go"])
        else:
            files = self.c.clickhouse("SELECT DISTINCT source FROM {db}.profile_lines"
                                      " WHERE service = 'retained' AND kind = 0").split()
            self.assertEqual(files, ["/s/k.go"])


class SourcesUpgrade(LinesCase):
    """A line_sources table from before sources were retained gains their latest bucket: the
    latest of the line detail, so each stays until every row that can name it is gone."""

    def test_an_old_sources_table_is_given_the_latest_bucket_and_still_reads(self):
        if self.c.backend != "sqlite":
            self.skipTest("SQLite's sources dictionary (ClickHouse keeps sources in its rows)")
        self.upload([(["main", ("app.old", "/s/old.go", 3)], NS)], "upgraded")
        self.c.stop()
        with sqlite3.connect(os.path.join(self.c.data, "roottrace.db")) as db:
            db.executescript(
                "CREATE TABLE s(id INTEGER PRIMARY KEY, kind INTEGER NOT NULL,"
                " text TEXT NOT NULL, UNIQUE(kind, text));"
                " INSERT INTO s SELECT id, kind, text FROM line_sources;"
                " DROP TABLE line_sources; ALTER TABLE s RENAME TO line_sources;")
        self.c.start()
        with self.c.db() as db:
            got = db.execute("SELECT text, last_bucket FROM line_sources").fetchall()
            latest = db.execute("SELECT max(bucket) FROM line_rollups").fetchone()[0]
        self.assertEqual(got, [("/s/old.go", latest)])
        self.assertEqual(self.lines("upgraded", "app.old")["lines"][0]["file"], "/s/old.go")


class SourceText(LinesCase):
    @classmethod
    def setUpClass(cls):
        cls.src = os.path.join(build_dir(), "tests", "lines-src")
        os.makedirs(os.path.join(cls.src, "app"), exist_ok=True)
        with open(os.path.join(cls.src, "app", "main.go"), "w") as f:
            f.write("package main\n\nfunc hot() int {\n\treturn busy(42)\n}\n")
        cls.serve_args = ("--source-dir", cls.src)
        super().setUpClass()

    def test_source_text_is_shown_when_the_source_dir_has_the_file(self):
        self.upload([(["main", ("main.hot", "/build/ci/work/app/main.go", 4)], NS),
                     (["main", ("main.hot", "/elsewhere/other.go", 9)], NS // 2)], "src")
        doc = self.lines("src", "main.hot")
        self.assertEqual(doc["lines"][0]["text"], "\treturn busy(42)")
        self.assertNotIn("text", doc["lines"][1])

    def test_no_file_outside_the_source_dir_is_read(self):
        self.upload([(["main", ("main.evil", "/x/../../../etc/passwd", 1)], NS)], "evil")
        doc = self.lines("evil", "main.evil")
        self.assertNotIn("text", doc["lines"][0])


class SourceTextFromConfig(LinesCase):
    """The same directory named by the config file's source_dir key."""

    @classmethod
    def setUpClass(cls):
        src = os.path.join(build_dir(), "tests", "lines-src-config")
        os.makedirs(os.path.join(src, "pkg"), exist_ok=True)
        with open(os.path.join(src, "pkg", "a.go"), "w") as f:
            f.write("package pkg\nfunc A() { spin() }\n")
        conf = os.path.join(build_dir(), "tests", "lines-src-config.conf")
        with open(conf, "w") as f:
            f.write("# the lines view's sources\nsource_dir = %s\n" % src)
        cls.serve_args = ("--config", conf)
        super().setUpClass()

    def test_the_config_key_source_dir_shows_source_text(self):
        self.upload([(["main", ("pkg.A", "/home/ci/pkg/a.go", 2)], NS)], "conf")
        self.assertEqual(self.lines("conf", "pkg.A")["lines"][0]["text"], "func A() { spin() }")


harness.main()

