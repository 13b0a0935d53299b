# SPDX-License-Identifier: Apache-2.0
# The SQLite link store's stacks (DATA/roottrace-links.db), through the real collector over
# HTTP: a link's stack is kept as its frames' function ids, each function name once in the
# file's own `functions` table; a links file written before function ids (each stack's joined
# frame text keyed by its SHA-256, PRAGMA user_version 0) is converted when the collector opens
# it, under the same stack ids, and every span read answers as before; retention removes the
# names no link stack uses; span reads stay exact past the names kept between reads; a file of
# a newer collector is refused, untouched.
import json
import os
import sqlite3
import time
import unittest

import harness
import pprof_py
from collector_fixture import Collector, stack_function_ids
from test_collector_stack_dictionary import to_text_dictionary

TRACE = "0af7651916cd43dd8448eb211c80319c"
OTHER_TRACE = "1" * 32
LINKS_VERSION = 2  # links.c LINKS_SCHEMA_VERSION
# A long name in every stack of test_a_name_shared_by_many_stacks_is_stored_once: twice in the
# file when names are stored once (the `functions` row and its UNIQUE index), 40 times or more
# when each stack keeps its text.
SHARED = "com.example.service.RequestDispatcher.dispatchWithRetriesAndTimeouts" * 3


def linked_profile(at):
    """A trace of spans 0a (root) -> 0b -> 0c by parent ids, a local-root family under 1000,
    an endpoint's spans for the span diff, and samples without a span."""
    def at_s(s):
        return s * 1_000_000_000
    older = pprof_py.build([
        (["main", "handler", "db"], 90, {"span_id": "1", "span_name": "GET /x"}),
        (["main", "handler", "json"], 10, {"span_id": "1", "span_name": "GET /x"})],
        time_nanos=at_s(at - 1200))
    newer = pprof_py.build([
        (["main", "serve"], 1, {"span_id": "0a", "trace_id": TRACE}),
        (["main", "serve", "mid"], 10, {"span_id": "0b", "parent_span_id": "0a",
                                        "trace_id": TRACE}),
        (["main", "serve", "mid", "leaf"], 100, {"span_id": "0c", "parent_span_id": "0b",
                                                 "trace_id": TRACE}),
        (["main", "serve", "mid", "leaf"], 7, {"span_id": "0e", "trace_id": OTHER_TRACE}),
        (["main", "root"], 5, {"span id": 1000, "local root span id": 1000}),
        (["main", "root", "query ünï"], 30, {"span id": 1234, "local root span id": 1000}),
        (["main", "handler", "db"], 10, {"span_id": "2", "span_name": "GET /x"}),
        (["main", "handler", "json"], 90, {"span_id": "2", "span_name": "GET /x"}),
        (["main", "idle"], 40, {})], time_nanos=at_s(at))
    return older, newer


def to_text_stacks(path):
    """Rewrites a links file as the collector wrote it before function ids: link_stacks rows
    of joined frame text keyed by the SHA-256 of that text, no `functions`, version 0."""
    db = sqlite3.connect(path)
    rows = to_text_dictionary(db, "link_stacks")
    db.execute("PRAGMA user_version = 0")
    db.commit()
    db.close()
    return rows



def without_windows(answer):
    """The answer without its "window" objects: a window ending now moves with the clock
    between two reads (a second apart under the sanitizer), the stored answers do not."""
    if isinstance(answer, dict):
        return {k: without_windows(v) for k, v in answer.items() if k != "window"}
    if isinstance(answer, list):
        return [without_windows(v) for v in answer]
    return answer

class LinkStackDictionary(unittest.TestCase):
    def setUp(self):
        self.c = Collector(backend="sqlite")
        self.addCleanup(self.c.close)
        self.tok = self.c.create_token("collector")
        self.viewer = self.c.create_token("user", role="viewer")
        self.path = os.path.join(self.c.data, "roottrace-links.db")
        now = int(time.time())  # one window for every read: answers compared across a restart
        self.window = {"start": str(now - 3600), "end": str(now + 300)}

    def sql(self, query):
        db = sqlite3.connect("file:%s?mode=ro" % self.path, uri=True, timeout=10)
        try:
            return db.execute(query).fetchall()
        finally:
            db.close()

    def upload(self, data, service="links-svc"):
        status, doc = self.c.upload(self.tok, data, service, "cpu")
        self.assertEqual(status, 200, doc)
        return doc

    def get(self, path, **params):
        p = dict(self.window)
        p.update(params)
        status, _, body = self.c.request("GET", path, self.viewer, params=p)
        self.assertEqual(status, 200, (path, params, body[:300]))
        return json.loads(body)

    def span_answers(self):
        """Every span read: flame graphs by span (alone, with children by parent ids and by
        local root), by trace, top by trace, the trace's spans, and the span diff."""
        svc = {"service": "links-svc", "profile_type": "cpu"}
        out = {}
        for span in ("0a", "0b", "0c", "3e8", "4d2", "2"):
            for children in ("false", "true"):
                out["flame", span, children] = self.get(
                    "/api/apm/profiles/flamegraph", span_id=span, include_children=children,
                    **svc)
        out["flame trace"] = self.get("/api/apm/profiles/flamegraph", trace_id=TRACE, **svc)
        out["top trace"] = self.get("/api/apm/profiles/top", trace_id=OTHER_TRACE, **svc)
        out["trace"] = self.get("/api/apm/traces/%s/profile" % TRACE, include_children="true")
        out["diff"] = self.get("/api/apm/profiles/diff", span_id="2", **svc)
        return without_windows(out)

    def test_a_name_shared_by_many_stacks_is_stored_once(self):
        stacks = [["main", SHARED, "step%d" % i, "leaf%d" % (i % 4)] for i in range(40)]
        data = pprof_py.build([(s, 10 + i, {"span_id": "%x" % (0x100 + i), "trace_id": TRACE})
                               for i, s in enumerate(stacks)])
        self.assertEqual(self.upload(data)["links"], {"stored": 40, "dropped": 0})
        self.assertEqual(self.sql("SELECT count(*) FROM functions WHERE name = '%s'" % SHARED),
                         [(1,)])
        self.assertEqual(sorted(n for (n,) in self.sql("SELECT name FROM functions")),
                         sorted({f for s in stacks for f in s}))
        names = dict(self.sql("SELECT id, name FROM functions"))
        rows = self.sql("SELECT n_frames, ids FROM link_stacks")
        self.assertEqual(sorted([names[f] for f in stack_function_ids(ids)] for _, ids in rows),
                         sorted(stacks))
        # a few bytes a frame: every id here is below 128, one byte
        self.assertEqual(sum(len(ids) for _, ids in rows), sum(n for n, _ in rows))
        trace = self.get("/api/apm/profiles/flamegraph", service="links-svc", profile_type="cpu",
                         trace_id=TRACE)
        self.assertEqual(trace["total"], sum(10 + i for i in range(40)))
        span = self.get("/api/apm/profiles/flamegraph", service="links-svc", profile_type="cpu",
                        span_id="%x" % 0x107)
        self.assertEqual(span["total"], 17)
        self.c.stop()  # checkpointed: the whole file is the database
        with open(self.path, "rb") as f:
            self.assertEqual(f.read().count(SHARED.encode()), 2)  # the row and its index

    def test_span_reads_stay_exact_past_the_names_kept_between_reads(self):
        # links.c keeps up to 8 Ki names read from one span read to the next, then forgets
        # them: one trace read of 9,000 distinct names passes that, the reads after it start
        # over and must still name every frame right.
        n = 9000
        data = pprof_py.build([(["main", "handler%d" % i], 1 + i % 7,
                                {"span_id": "%x" % (0x10000 + i), "trace_id": OTHER_TRACE})
                               for i in range(n)])
        self.assertEqual(self.upload(data)["links"], {"stored": n, "dropped": 0})
        svc = {"service": "links-svc", "profile_type": "cpu"}
        trace = self.get("/api/apm/profiles/flamegraph", trace_id=OTHER_TRACE, **svc)
        self.assertEqual(trace["total"], sum(1 + i % 7 for i in range(n)))
        for i in (5, 8191, 8999):
            span = self.get("/api/apm/profiles/flamegraph", span_id="%x" % (0x10000 + i), **svc)
            self.assertEqual(span["total"], 1 + i % 7)
            self.assertEqual(span["root"]["children"][0]["name"], "main")
            self.assertEqual(span["root"]["children"][0]["children"][0]["name"],
                             "handler%d" % i)

    def test_a_text_stacks_file_is_converted_on_open_with_the_same_answers(self):
        older, newer = linked_profile(int(time.time()) - 600)
        self.upload(older)
        self.upload(newer)
        before = self.span_answers()
        self.assertEqual(before["flame", "0a", "true"]["total"], 111)
        self.assertEqual(before["flame", "3e8", "true"]["total"], 35)
        links, stacks = self.sql("SELECT count(*) FROM span_links")[0][0], \
            self.sql("SELECT count(*) FROM link_stacks")[0][0]
        self.c.stop()
        text_rows = to_text_stacks(self.path)
        self.assertIn("main\nroot\nquery ünï", {t for _, _, t in text_rows})
        self.c.start()
        self.assertEqual(self.span_answers(), before)
        self.assertEqual(self.sql("PRAGMA user_version"), [(LINKS_VERSION,)])
        self.assertEqual([r[1] for r in self.sql("PRAGMA table_info(link_stacks)")],
                         ["id", "n_frames", "ids"])
        names = dict(self.sql("SELECT id, name FROM functions"))
        self.assertEqual(  # every stack under its id, the same frames
            {i: "\n".join(names[f] for f in stack_function_ids(ids))
             for i, _, ids in self.sql("SELECT id, n_frames, ids FROM link_stacks")},
            {i: t for i, _, t in text_rows})
        # the converted stacks are the ones new links of the same stacks find
        self.upload(newer)
        self.assertEqual(self.sql("SELECT count(*) FROM link_stacks"), [(stacks,)])
        self.assertEqual(self.sql("SELECT count(*) FROM span_links"), [(links + 8,)])
        self.assertEqual(self.get("/api/apm/profiles/flamegraph", service="links-svc",
                                  profile_type="cpu", span_id="0c")["total"], 200)

    def test_retention_removes_the_names_no_link_stack_uses(self):
        old = (int(time.time()) - 2 * 86400) * 1_000_000_000
        self.upload(pprof_py.build([(["main", "only_in_old"], 5, {"span_id": "0f"})],
                                   time_nanos=old))
        self.upload(pprof_py.build([(["main", "kept"], 3, {"span_id": "1f"})]))
        self.c.restart(["--link-retention-hours", "1", "--retention-interval", "1"])
        deadline = time.time() + 60
        while self.sql("SELECT count(*) FROM span_links")[0][0] > 1 and time.time() < deadline:
            time.sleep(0.2)
        self.assertEqual(self.sql("SELECT count(*) FROM link_stacks"), [(1,)])
        self.assertEqual(sorted(n for (n,) in self.sql("SELECT name FROM functions")),
                         ["kept", "main"])
        # a name retention removed is given a new id when it comes back
        self.upload(pprof_py.build([(["main", "only_in_old", "again"], 2, {"span_id": "2f"})]))
        self.assertEqual(self.get("/api/apm/profiles/flamegraph", service="links-svc",
                                  profile_type="cpu", span_id="2f")["root"]["children"][0]
                         ["children"][0]["name"], "only_in_old")

    def test_a_file_of_a_newer_collector_is_refused_untouched(self):
        self.c.stop()
        db = sqlite3.connect(self.path)
        db.execute("PRAGMA user_version = %d" % (LINKS_VERSION + 1))
        db.commit()
        db.close()
        with self.assertRaises(RuntimeError) as err:
            self.c.start()
        self.assertIn("cannot open the store", str(err.exception))
        self.assertEqual(self.sql("PRAGMA user_version"), [(LINKS_VERSION + 1,)])


if __name__ == "__main__":
    harness.main()
