# SPDX-License-Identifier: Apache-2.0
# The SQLite stacks dictionary (issue 17), through the real collector over HTTP: a stack is
# stored as its frames' function ids, each function name once; a database written with the
# older dictionary (each stack's joined frame text, keyed by its SHA-256) is converted when the
# collector opens it, under the same stack ids, and every read answers as before; retention
# removes the function names no stack uses any more.
import hashlib
import json
import os
import sqlite3
import time
import unittest

import harness
import pprof_py
from collector_fixture import Collector, stack_function_ids

SEC = 1_000_000_000
BASE = (int(time.time()) // 86400 - 2) * 86400  # a whole day two days ago
STACKS = {"main;serve;render": 4 * SEC, "main;serve;render;décode ünï": 3 * SEC,
          "main;serve;render;décode ünï;malloc": 2 * SEC, "main;gc": SEC,
          "main;(*T).Method with spaces": 5 * SEC}


def cpu(stacks, at):
    return pprof_py.build_gz([(k.split(";"), v) for k, v in stacks.items()],
                             sample_types=(("cpu", "nanoseconds"),),
                             period_type=("cpu", "nanoseconds"), period=10_000_000,
                             time_nanos=at * SEC, duration_nanos=60 * SEC)


def to_text_dictionary(db, table="stacks"):
    """Rewrites the stacks dictionary (or the links file's link_stacks) as the collector wrote
    it before function ids: one row per stack with its frames joined by newlines, keyed by the
    SHA-256 of that text, and no `functions`. The rows written: (id, n_frames, text)."""
    names = dict(db.execute("SELECT id, name FROM functions"))
    rows = [(i, n, "\n".join(names[f] for f in stack_function_ids(ids)))
            for i, n, ids in db.execute("SELECT id, n_frames, ids FROM %s" % table)]
    db.executescript(
        "DROP TABLE %s; DROP TABLE functions;"
        "CREATE TABLE %s(id INTEGER PRIMARY KEY, hash BLOB NOT NULL UNIQUE,"
        " n_frames INTEGER NOT NULL, frames TEXT NOT NULL);" % (table, table))
    db.executemany("INSERT INTO %s(id, hash, n_frames, frames) VALUES(?, ?, ?, ?)" % table,
                   [(i, hashlib.sha256(t.encode()).digest(), n, t) for i, n, t in rows])
    db.commit()
    return rows


def exported(pb):
    """{leaf-first stack: values} of an exported pprof."""
    return {tuple(smp.stack): smp.values for smp in pprof_py.parse(pb).samples}


class StackDictionary(unittest.TestCase):
    def setUp(self):
        self.c = Collector()
        self.addCleanup(self.c.close)
        self.tok = self.c.create_token("collector")
        self.viewer = self.c.create_token("user", role="viewer")

    def upload(self, service, pb):
        status, body = self.c.upload(self.tok, pb, service, "cpu")
        self.assertEqual(status, 200, body)

    def answers(self, service):
        """Every read of the window: collapsed, top, flame graph, cost, export."""
        params = {"service": service, "profile_type": "cpu", "start": str(BASE),
                  "end": str(BASE + 3600)}
        out = {}
        for path in ("collapsed", "top", "flamegraph", "cost", "export"):
            status, _, body = self.c.request("GET", "/api/apm/profiles/" + path, self.viewer,
                                             params=params)
            self.assertEqual(status, 200, (path, body[:300]))
            out[path] = body if path == "export" else (
                body.decode() if path == "collapsed" else json.loads(body))
        return out

    def sql(self, query):
        with self.c.db() as db:
            return db.execute(query).fetchall()

    def test_each_function_name_is_stored_once(self):
        self.upload("svc", cpu(STACKS, BASE + 60))
        names = sorted(n for (n,) in self.sql("SELECT name FROM functions"))
        self.assertEqual(names, sorted({f for k in STACKS for f in k.split(";")}))
        self.assertEqual(self.sql("SELECT count(*) FROM stacks"), [(len(STACKS),)])
        self.assertEqual({r[5]: r[6] for r in self.c.stored_rows(service="svc")},
                         {tuple(k.split(";")): v for k, v in STACKS.items()})

    def test_text_dictionary_is_converted_on_open_with_the_same_answers(self):
        self.upload("svc", cpu(STACKS, BASE + 60))
        before, rows = self.answers("svc"), self.c.stored_rows(service="svc")
        self.assertIn("main;(*T).Method with spaces 5000000000", before["collapsed"].splitlines())
        self.c.stop()
        db = sqlite3.connect(os.path.join(self.c.data, "roottrace.db"))
        to_text_dictionary(db)
        db.close()
        self.c.start()
        self.assertEqual(self.c.stored_rows(service="svc"), rows)
        after = self.answers("svc")
        for path in ("collapsed", "top", "flamegraph", "cost"):
            self.assertEqual(after[path], before[path], path)
        self.assertEqual(exported(after["export"]), exported(before["export"]))
        columns = [r[1] for r in self.sql("PRAGMA table_info(stacks)")]
        self.assertEqual(columns, ["id", "n_frames", "ids"])
        # the converted stacks are the ones a new upload of the same profile finds
        self.upload("svc", cpu(STACKS, BASE + 120))
        self.assertEqual(self.sql("SELECT count(*) FROM stacks"), [(len(STACKS),)])
        self.assertEqual({r[5]: r[6] for r in self.c.stored_rows(service="svc")},
                         {tuple(k.split(";")): 2 * v for k, v in STACKS.items()})

    def test_retention_removes_the_function_names_no_stack_uses(self):
        old = int(time.time()) - 40 * 86400
        self.upload("old", cpu({"main;only_in_old;leaf": SEC}, old))
        self.upload("svc", cpu({"main;kept": SEC}, BASE + 60))
        self.c.restart(["--retention-days", "30"])  # the job runs at start, in the background
        deadline = time.time() + 10
        while self.c.stored_rows(service="old") and time.time() < deadline:
            time.sleep(0.1)
        self.assertEqual(sorted(n for (n,) in self.sql("SELECT name FROM functions")),
                         ["kept", "main"])
        self.assertEqual(self.c.stored_rows(service="old"), [])
        self.upload("svc", cpu({"main;only_in_old;leaf": SEC}, BASE + 60))
        self.assertEqual({r[5]: r[6] for r in self.c.stored_rows(service="svc")},
                         {("main", "kept"): SEC, ("main", "only_in_old", "leaf"): SEC})


if __name__ == "__main__":
    harness.main()
