# SPDX-License-Identifier: Apache-2.0
# Line detail on the ClickHouse fleet store, exactly once: a group whose lines went in but whose
# rollups INSERT failed is retried by its sender, and the retry adds the rollups without adding
# the lines again (the lines' mark rows, collector/store/clickhouse/profiles_ch_lines.c), so a
# function's line totals stay equal to its self time in the rollups. The failed INSERT's cause
# (a server refusing) is named in the 503, /healthz and /metrics until a write goes through.
# The ledger's line tries expire with the upload ids.
import time
import unittest

import fleet_servers
import harness
import pprof_py
from collector_fixture import Collector

NS = 10_000_000  # one 10 ms sample
REFUSED = 'roottrace_store_failures_total{backend="clickhouse",cause="refused"}'


def skip_without_servers():
    """make check installs both servers: missing ones fail the suite rather than skip it."""
    why = fleet_servers.available()
    if why:
        raise RuntimeError(why)


def profile(hot, warm):
    return pprof_py.build([(["main", ("app.hot", "/s/hot.go", 12)], hot),
                           (["main", ("app.hot", "/s/hot.go", 14)], warm)],
                          time_nanos=time.time_ns(), period=NS)


def rename_rollups(c, old, new):
    """The rollups table renamed; on a cluster also each shard's own, which the collector
    writes a group's rollups to directly (collector/store/clickhouse/ch_route.c)."""
    c.clickhouse("RENAME TABLE {db}.%s TO {db}.%s" % (old, new))
    if fleet_servers.cluster_shape():
        db = c.ch_url.rsplit("/", 1)[1]
        for node in fleet_servers.servers().nodes:
            node.query("RENAME TABLE %s.%s_local TO %s.%s_local" % (db, old, db, new))


class RetriedGroup(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_without_servers()
        cls.c = Collector(backend="fleet")
        cls.addClassCleanup(cls.c.close)
        cls.tok = cls.c.create_token("collector")
        cls.viewer = cls.c.create_token("user", role="viewer")

    def upload(self, service, data, upload_id):
        return self.c.upload(self.tok, data, service, "cpu", params={"upload_id": upload_id})

    def lines(self, service):
        status, body = self.c.get_json("/api/apm/profiles/lines", self.viewer, params=dict(
            service=service, profile_type="cpu", function="app.hot", time_range="1h"))
        self.assertEqual(status, 200, body)
        return {l["line"]: l["self"] for l in body["lines"]}

    def self_time(self, service):
        status, body = self.c.get_json("/api/apm/profiles/top", self.viewer, params=dict(
            service=service, profile_type="cpu", time_range="1h"))
        self.assertEqual(status, 200, body)
        return {f["name"]: f["self"] for f in body["functions"]}["app.hot"]

    def stored_lines(self, service):
        return int(self.c.clickhouse(
            "SELECT sum(value) FROM {db}.profile_lines WHERE service = '%s'"
            " AND function = 'app.hot'" % service) or 0)

    def test_lines_stored_before_a_failed_rollups_insert_are_not_added_again(self):
        self.assertEqual(self.upload("retry", profile(3 * NS, NS), "first")[0], 200)
        # The rollups table away: the group's lines INSERT succeeds, its rollups INSERT fails.
        rename_rollups(self.c, "rollups", "rollups_away")
        try:
            refused = self.c.metrics().get(REFUSED, 0)
            status, doc = self.upload("retry", profile(5 * NS, 2 * NS), "retried")
            self.assertEqual(status, 503, doc)
            self.assertEqual(self.stored_lines("retry"), 11 * NS)  # the lines did go in
            # A server refusing is named as such: the 503, /healthz and /metrics.
            self.assertIn("the database server refused the request (clickhouse: ", doc["detail"])
            health = self.c.get_json("/healthz")[1]
            self.assertEqual((health["status"], health["stores"]["profiles"],
                              health["faults"]["profiles"]["cause"]),
                             ("degraded", "refused", "refused"), health)
            self.assertGreater(self.c.metrics()[REFUSED], refused)
        finally:
            rename_rollups(self.c, "rollups_away", "rollups")
        status, doc = self.upload("retry", profile(5 * NS, 2 * NS), "retried")
        self.assertEqual((status, doc["duplicate"]), (200, False), doc)
        self.assertEqual(self.c.get_json("/healthz")[1]["status"], "ok")  # a write went in
        self.assertEqual(self.stored_lines("retry"), 11 * NS)
        self.assertEqual(self.self_time("retry"), 11 * NS)
        self.assertEqual(self.lines("retry"), {12: 8 * NS, 14: 3 * NS})
        # A third try is a duplicate: neither its values nor its lines are added.
        status, doc = self.upload("retry", profile(5 * NS, 2 * NS), "retried")
        self.assertEqual((status, doc["duplicate"]), (200, True), doc)
        self.assertEqual(self.stored_lines("retry"), 11 * NS)

    def test_each_upload_with_lines_stores_one_mark(self):
        for i in range(3):
            self.assertEqual(self.upload("marks", profile(NS, NS), "mark-%d" % i)[0], 200)
        self.assertEqual(self.lines("marks"), {12: 3 * NS, 14: 3 * NS})
        marks = self.c.clickhouse(
            "SELECT count(), uniqExact(position) FROM {db}.profile_lines"
            " WHERE service = 'marks' AND function = '' AND kind = 255").split()
        self.assertEqual(marks, ["3", "3"])

    def test_old_line_tries_expire_with_the_upload_ids(self):
        pg = fleet_servers.servers().pg
        db = self.c.pg_url.rsplit("/", 1)[1]

        def count(table):
            return int(pg.psql("SELECT count(*) FROM %s WHERE upload_id = 'old'" % table, db=db))
        for table in ("uploads", "upload_line_tries"):
            pg.psql("INSERT INTO %s(environment, upload_id, received_at) VALUES"
                    " ('production', 'old', 1000)" % table, db=db)
        self.assertEqual((count("uploads"), count("upload_line_tries")), (1, 1))
        self.c.restart()  # the retention job runs at start
        deadline = time.time() + 30
        while count("upload_line_tries") and time.time() < deadline:
            time.sleep(0.2)
        self.assertEqual((count("uploads"), count("upload_line_tries")), (0, 0))


if __name__ == "__main__":
    harness.main()
