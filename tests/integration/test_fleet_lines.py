# SPDX-License-Identifier: Apache-2.0
# Line detail on the ClickHouse fleet store, exactly once: a group whose lines went in but whose
# rollups INSERT failed is retried by its sender, and the retry adds the rollups without adding
# the lines again (the lines' mark rows, collector/store/clickhouse/profiles_ch_lines.c), so a
# function's line totals stay equal to its self time in the rollups.
import time
import unittest

import fleet_servers
import harness
import pprof_py
from collector_fixture import Collector

NS = 10_000_000  # one 10 ms sample


def skip_without_servers():
    """make check installs both servers: missing ones fail the suite rather than skip it."""
    why = fleet_servers.available()
    if why:
        raise RuntimeError(why)


def profile(hot, warm):
    return pprof_py.build([(["main", ("app.hot", "/s/hot.go", 12)], hot),
                           (["main", ("app.hot", "/s/hot.go", 14)], warm)],
                          time_nanos=time.time_ns(), period=NS)


class RetriedGroup(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_without_servers()
        cls.c = Collector(backend="fleet")
        cls.tok = cls.c.create_token("collector")
        cls.viewer = cls.c.create_token("user", role="viewer")

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

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
        self.c.clickhouse("RENAME TABLE {db}.rollups TO {db}.rollups_away")
        try:
            status, doc = self.upload("retry", profile(5 * NS, 2 * NS), "retried")
            self.assertEqual(status, 503, doc)
            self.assertEqual(self.stored_lines("retry"), 11 * NS)  # the lines did go in
        finally:
            self.c.clickhouse("RENAME TABLE {db}.rollups_away TO {db}.rollups")
        status, doc = self.upload("retry", profile(5 * NS, 2 * NS), "retried")
        self.assertEqual((status, doc["duplicate"]), (200, False), doc)
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


if __name__ == "__main__":
    harness.main()
