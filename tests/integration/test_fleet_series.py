# SPDX-License-Identifier: Apache-2.0
# Fleet mode: series named by a 64-bit id (schema v7). A store written at schema version 6 (the
# five series strings on every row, made with v6's DDL from the current tables) and migrated to
# v7 answers every read identically (flame graph, top, diff, cost, collapsed, export, services,
# coverage, nodes, deployments, per node and per deployment), its hour and day tiers stay
# complete, and uploads after the upgrade add up with its rows as in a store that only ever had
# v7. The collector's ids are those the migration computes in ClickHouse; an id the dictionary
# holds with other strings (a collision) is refused. Retention of the dictionary:
# test_fleet_stacks.py.
import subprocess
import time
import unittest

import fleet_servers
import harness
from collector_fixture import Collector
from test_fleet_stacks import DAY, cpu, require_servers_and_faketime, v6_store_sql

SERVICES = ("api", "worker")
NODES = ("node-a", "node-b")


class SeriesUpgrade(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        require_servers_and_faketime()
        if fleet_servers.cluster_shape():
            self.skipTest("builds a version 6 store by hand on one server")
        self.c = Collector(backend="fleet", start=False)
        self.addCleanup(self.c.close)
        self.now = int(time.time())
        # whole days in the past (tiers built), today, and a day ahead (future partition)
        self.times = (self.now - 2 * DAY, self.now - DAY, self.now, self.now + DAY)
        self.start, self.end = self.now - 3 * DAY, self.now + 2 * DAY

    def upload_all(self, c, tok):
        for i, at in enumerate(self.times):
            for service in SERVICES:
                for node in NODES:
                    deployment = "v%d" % (i % 2)
                    status, doc = c.upload(
                        tok, cpu([(["main", "serve", service], 100 + i, {}),
                                  (["main", "only-%s-%d" % (node, i)], 10 + i, {})], at),
                        service, "cpu", deployment=deployment, params={"node": node})
                    self.assertEqual(status, 200, doc)

    def reads(self, c, viewer):
        window = {"profile_type": "cpu", "start": self.start, "end": self.end}
        out = []
        for service in SERVICES:
            w = dict(window, service=service)
            for extra in ({}, {"node": NODES[1]}, {"deployment": "v1"}):
                for path in ("flamegraph", "top", "cost"):
                    out.append(strip_clock(c.get_json("/api/apm/profiles/" + path, viewer,
                                                      params=dict(w, **extra))))
                status, _, body = c.request("GET", "/api/apm/profiles/collapsed", viewer,
                                            params=dict(w, **extra))
                out.append((status, sorted(body.decode().splitlines())))
            mid = self.now - self.now % DAY
            out.append(strip_clock(c.get_json("/api/apm/profiles/diff", viewer, params=dict(
                service=service, profile_type="cpu", before_start=self.start,
                before_end=mid, after_start=mid, after_end=self.end))))
        for path in ("services", "deployments"):
            status, doc = c.get_json("/api/apm/" + path, viewer)
            out.append((status, strip_clock(doc)))
        return out

    def build_tiers(self, c):
        c.cli("tiers", "build", *c.server_args(), "--delay-s", "0", "--days", "4")

    def tier_marks(self):
        return self.c.clickhouse("SELECT bucket, sum(value) FROM {db}.rollups_hour WHERE"
                                 " stack_hash = toFixedString('', 16) GROUP BY bucket"
                                 " ORDER BY bucket")

    def test_a_version_6_store_migrated_answers_identically_and_adds_up_new_uploads(self):
        tok = self.c.create_token("collector")
        viewer = self.c.create_token("user", role="viewer")
        self.c.start()
        self.upload_all(self.c, tok)
        self.c.stop()
        self.build_tiers(self.c)
        self.c.start()
        before, marks = self.reads(self.c, viewer), self.tier_marks()
        self.assertTrue(marks.strip())  # the hour tier holds the past days' uploads
        self.c.stop()
        for sql in v6_store_sql():
            self.c.clickhouse(sql)
        with self.assertRaises(RuntimeError) as refused:
            self.c.start()
        self.assertIn("migrate", str(refused.exception))
        r = subprocess.run([self.c.binary, "migrate"] + self.c.server_args(),
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ClickHouse): schema version 6 -> 7", r.stderr)
        self.assertEqual(self.c.clickhouse("EXISTS TABLE {db}.rollups_v7").strip(), "0")
        self.assertEqual(int(self.c.clickhouse("SELECT count() FROM system.columns WHERE"
                                               " database = '{db}' AND table = 'rollups'"
                                               " AND name = 'service'")), 0)
        self.c.start()
        self.assertEqual(self.tier_marks(), marks)  # the tiers converted, still complete
        self.assertEqual(self.reads(self.c, viewer), before)
        # Uploads after the upgrade, under the ids the collector computes, add up with the
        # converted rows (the ids the migration computed in ClickHouse) exactly as in a fresh
        # v7 store that got every upload.
        self.upload_all(self.c, tok)
        n_series = len(SERVICES) * len(NODES) * 2  # two deployments
        self.assertEqual(int(self.c.clickhouse(
            "SELECT uniqExact(series_id) FROM {db}.rollups")), n_series)
        with Collector(backend="fleet") as fresh:
            fresh_tok = fresh.create_token("collector")
            self.upload_all(fresh, fresh_tok)
            self.upload_all(fresh, fresh_tok)
            expected = self.reads(fresh, fresh.create_token("user", role="viewer"))
        got = self.reads(self.c, viewer)
        self.assertNotEqual(got, before)
        self.assertEqual(got, expected)


# What follows the clock (the window reaches into the future: the seconds it covers so far,
# the averages over them; the coverage history's buckets end at now, so they move by one
# five-minute bucket between two reads that straddle a boundary) or the arrival of uploads,
# not what is stored.
CLOCK_FIELDS = ("window", "covered_seconds", "seconds", "avg_vcpus", "vcpu_hours_per_month",
                "last_upload", "last_seen", "first_seen", "generated_at", "history")


def strip_clock(doc):
    """An answer (or a (status, answer) pair) without CLOCK_FIELDS, at any depth."""
    if isinstance(doc, dict):
        return {k: strip_clock(v) for k, v in doc.items() if k not in CLOCK_FIELDS}
    if isinstance(doc, (list, tuple)):
        return type(doc)(strip_clock(v) for v in doc)
    return doc


class SeriesDictionary(unittest.TestCase):
    """The series dictionary on its own: one row a series, its id the one ClickHouse computes
    (the migration's), and a colliding id refused. (Its retention: test_fleet_stacks.py.)"""

    def setUp(self):
        require_servers_and_faketime()
        self.c = Collector(backend="fleet")
        self.addCleanup(self.c.close)
        self.tok = self.c.create_token("collector")
        self.now = int(time.time())

    def upload(self, service, at, node="node-a"):
        status, doc = self.c.upload(self.tok, cpu([(["main", service], 10, {})], at), service,
                                    "cpu", params={"node": node})
        return status, doc

    def test_a_series_is_stored_once_with_the_id_clickhouse_computes(self):
        for _ in range(3):
            self.assertEqual(self.upload("api", self.now)[0], 200)
        rows = self.c.clickhouse(
            "SELECT series_id = reinterpretAsUInt64(substring(SHA256(concat(environment,"
            " '\\0', service, '\\0', profile_type, '\\0', deployment, '\\0', node)), 1, 8)),"
            " service, node FROM {db}.series").split("\n")
        self.assertEqual([r for r in rows if r], ["1\tapi\tnode-a"])

    def test_an_id_stored_with_other_strings_is_refused(self):
        self.assertEqual(self.upload("api", self.now)[0], 200)
        env = self.c.clickhouse("SELECT any(environment) FROM {db}.series").strip()
        # What a collision would look like: another series' strings under the id of
        # (env, svc-b, cpu, "", node-a), which this collector has not stored yet.
        self.c.clickhouse(
            "INSERT INTO {db}.series SELECT reinterpretAsUInt64(substring(SHA256(concat("
            "'%s', '\\0', 'svc-b', '\\0', 'cpu', '\\0', '', '\\0', 'node-a')), 1, 8)),"
            " '%s', 'other', 'cpu', '', 'node-a', toUInt32(intDiv(toUInt32(now()), 86400))"
            % (env, env))
        deadline = time.time() + 30  # a cluster's Distributed table forwards it a moment later
        while (self.c.clickhouse("SELECT count() FROM {db}.series WHERE service = 'other'")
               .strip() != "1" and time.time() < deadline):
            time.sleep(0.1)
        before = self.c.metrics()["roottrace_store_series_collisions_total"]
        status, doc = self.upload("svc-b", self.now)
        self.assertEqual(status, 503, doc)  # refused: nothing stored under another's name
        self.assertIn("already %s/other" % env, self.c.log())
        # Said by name: in the answer's detail and its own counter, beside store_error.
        self.assertIn("a series id collision (clickhouse: series id ", doc["detail"])
        self.assertIn("of %s/svc-b is already %s/other's" % (env, env), doc["detail"])
        self.assertNotIn("retry", doc["detail"])
        metrics = self.c.metrics()
        self.assertEqual(metrics["roottrace_store_series_collisions_total"], before + 1)
        self.assertEqual(metrics.get('roottrace_rejects_total{reason="store_error"}'), 1)
        self.assertEqual(self.c.stored_total("svc-b"), 0)
        self.assertEqual(self.upload("api", self.now)[0], 200)  # the others still go in


if __name__ == "__main__":
    harness.main()
