# SPDX-License-Identifier: Apache-2.0
# Fleet mode on one ClickHouse shard of two replicas (two clickhouse-server processes and a
# ZooKeeper of fleet_servers.py, ROOTTRACE_FLEET_CLUSTER=1x2), a collector on each replica
# sharing one PostgreSQL: uploads sent while one replica is stopped and started again (an
# upload refused by the stopped replica's collector is sent again, same upload id, through the
# other) are all stored afterwards, exactly once, on both replicas, their line detail too; reads
# are served, complete, through the replica still up while the other is down. A tier build run
# on one replica reaches the other (REPLACE PARTITION between Replicated tables is replicated),
# which then answers from its tiers alone. A retried group's lines are not stored twice while
# the replica holding them is down or the other one behind.
import os

os.environ["ROOTTRACE_FLEET_CLUSTER"] = "1x2"  # before fleet_servers starts the servers

import time  # noqa: E402
import unittest  # noqa: E402

import fleet_servers  # noqa: E402
import harness  # noqa: E402
from collector_fixture import Collector  # noqa: E402
import pprof_py  # noqa: E402


def upload_pb(i, at):
    """Upload i: its own function u<i> with value i + 1, so that a lost or doubled upload shows;
    on a line of its own, so that its lines' mark is looked up on the replicas."""
    return pprof_py.build([(["main", ("u%d" % i, "/s/u.go", i + 1)], i + 1)],
                          sample_types=[("wall", "nanoseconds")], time_nanos=at)


class TwoReplicas(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.nodes = fleet_servers.servers().nodes
        cls.a = Collector(backend="fleet")  # on replica 1
        cls.addClassCleanup(cls.a.close)
        node2 = cls.a.ch_url.replace(":%d/" % cls.nodes[0].port, ":%d/" % cls.nodes[1].port)
        cls.b = Collector(backend="fleet", stores=(cls.a.pg_url, node2))
        cls.addClassCleanup(cls.b.close)
        cls.col = cls.a.create_token("collector")
        cls.viewer = cls.a.create_token("user", role="viewer")
        cls.db = cls.a.ch_url.rsplit("/", 1)[1]

    def send(self, i, first):
        """Upload i through first, through the other collector when first refuses it."""
        params = {"upload_id": "replica-test/%d" % i}
        for fx in (first, self.a if first is self.b else self.b) * 20:
            status, doc = fx.upload(self.col, upload_pb(i, self.at), "svc", "wall",
                                    params=params)
            if status == 200:
                return doc
            self.assertEqual(status, 503, doc)
            time.sleep(0.1)
        self.fail("upload %d never accepted" % i)

    def sync_replicas(self):
        """Waits until each replica has fetched every part the other one has."""
        for node in self.nodes:
            for table in node.query("SELECT name FROM system.tables WHERE database = '%s'"
                                    " AND engine LIKE 'Replicated%%'" % self.db).split():
                node.query("SYSTEM SYNC REPLICA %s.%s" % (self.db, table))

    def local_total(self, node):
        return node.query("SELECT sum(value), uniqExact(stack_hash) FROM %s.rollups_local"
                          " WHERE stack_hash != toFixedString('', 16)" % self.db).split()

    def local_lines(self, node):
        """The lines' total and the marks' count, on node."""
        return node.query("SELECT sumIf(value, kind < 255), countIf(kind = 255) FROM"
                          " %s.profile_lines_local" % self.db).split()

    def read(self, fx):
        """{function: self} of the window, through fx."""
        params = {"service": "svc", "profile_type": "wall", "start": self.at // 10**9 - 600,
                  "end": self.at // 10**9 + 600}
        status, fg = fx.get_json("/api/apm/profiles/flamegraph", self.viewer, params=params)
        self.assertEqual(status, 200, fg)
        main = [c for c in fg["root"]["children"] if c["name"] == "main"]
        return {c["name"]: c["total"] for c in (main[0]["children"] if main else [])}

    def test_uploads_during_a_replicas_restart_are_stored_once_and_reads_go_on(self):
        self.at = time.time_ns() - 60 * 10**9
        n = 60
        expected = n * (n + 1) // 2
        for i in range(0, 20):
            self.send(i, (self.a, self.b)[i % 2])
        # An upload is acknowledged once one replica stored it; the other fetches it a moment
        # later. Wait for that, so that what replica 1 serves alone below is every upload.
        self.sync_replicas()
        self.nodes[1].stop()
        for i in range(20, 40):  # half of them first to the collector whose replica is down
            self.send(i, (self.a, self.b)[i % 2])
        top_while_down = self.read(self.a)
        self.nodes[1].start_again()
        for i in range(40, n):
            self.send(i, (self.a, self.b)[i % 2])
        self.sync_replicas()
        for node in self.nodes:  # every upload, once: values 1..n, one row per value
            self.assertEqual(self.local_total(node), [str(expected), str(n)])
            self.assertEqual(self.local_lines(node), [str(expected), str(n)])
        self.assertEqual(self.a.stored_total("svc", "wall"), expected)
        self.nodes[0].stop()  # reads through the other replica alone
        try:
            top_other = self.read(self.b)
        finally:
            self.nodes[0].start_again()
        everything = {"u%d" % i: i + 1 for i in range(n)}
        self.assertEqual(top_other, everything)
        self.assertEqual(self.read(self.a), everything)
        # While replica 2 was down, replica 1 served every upload acknowledged until then.
        self.assertEqual(top_while_down, {"u%d" % i: i + 1 for i in range(40)})


class TierBuildOnOneReplica(unittest.TestCase):
    """A tier build runs on one replica of the shard (the first of --clickhouse-servers that
    answers); its REPLACE PARTITION goes through the replication log, so the other replica
    holds the same tiers and answers from them alone."""

    def test_the_other_replica_gets_the_tiers_and_answers_alone(self):
        nodes = fleet_servers.servers().nodes
        a = Collector(backend="fleet")
        try:
            node2 = a.ch_url.replace(":%d/" % nodes[0].port, ":%d/" % nodes[1].port)
            b = Collector(backend="fleet", stores=(a.pg_url, node2))
            self.addCleanup(b.close)
            col = a.create_token("collector")
            viewer = a.create_token("user", role="viewer")
            day = (int(time.time()) // 86400 - 2) * 86400
            for i in range(6):
                status, doc = a.upload(col, upload_pb(i, (day + 3600 * (i + 1)) * 10**9), "svc",
                                       "wall")
                self.assertEqual(status, 200, doc)
            params = {"service": "svc", "profile_type": "wall", "start": day,
                      "end": day + 86400}
            status, before = a.get_json("/api/apm/profiles/top", viewer, params=params)
            self.assertEqual(status, 200, before)
            out = a.cli("tiers", "build", *a.server_args(), "--delay-s", "0", "--days", "4")
            self.assertIn("days built: 1", out)
            db = a.ch_url.rsplit("/", 1)[1]
            for node in nodes:
                for table in ("rollups_hour_local", "rollups_day_local"):
                    node.query("SYSTEM SYNC REPLICA %s.%s" % (db, table))
                sums = [node.query("SELECT sum(value) FROM %s.%s WHERE stack_hash !="
                                   " toFixedString('', 16)" % (db, t)).strip()
                        for t in ("rollups_local", "rollups_hour_local", "rollups_day_local")]
                self.assertEqual(sums, [str(21)] * 3)  # values 1..6
            nodes[0].stop()  # replica 2 alone: its tiers answer
            try:
                status, alone = b.get_json("/api/apm/profiles/top", viewer, params=params)
            finally:
                nodes[0].start_again()
            self.assertEqual(status, 200, alone)
            self.assertEqual(alone, before)
        finally:
            a.close()


NS = 10_000_000  # one 10 ms sample


def lines_pb(hot, warm):
    """app.hot's self time on two lines, 12 and 14."""
    return pprof_py.build([(["main", ("app.hot", "/s/hot.go", 12)], hot),
                           (["main", ("app.hot", "/s/hot.go", 14)], warm)],
                          time_nanos=time.time_ns(), period=NS)


class LinesOfARetry(unittest.TestCase):
    """A group whose lines went in on one replica but whose rollups INSERT failed is retried:
    the retry must find the lines' mark on the replica that holds it, not on the other one that
    has not fetched it yet (fetches stopped), and while that replica is down the retry is
    refused rather than stored with its lines a second time (profiles_ch_lines.c); a first try
    is stored meanwhile (the ledger's line tries, profiles_ch_write.c)."""

    def test_a_retry_while_the_replica_with_its_lines_is_down_or_behind_adds_them_once(self):
        nodes = fleet_servers.servers().nodes
        a = Collector(backend="fleet")
        self.addCleanup(a.close)
        node2 = a.ch_url.replace(":%d/" % nodes[0].port, ":%d/" % nodes[1].port)
        b = Collector(backend="fleet", stores=(a.pg_url, node2))
        self.addCleanup(b.close)
        col = a.create_token("collector")
        viewer = a.create_token("user", role="viewer")
        db = a.ch_url.rsplit("/", 1)[1]
        params = {"upload_id": "lines-retry"}
        marks = ("SELECT count() FROM %s.profile_lines_local WHERE function = '' AND kind = 255"
                 % db)
        for node in nodes:
            node.query("SYSTEM STOP FETCHES %s.profile_lines_local" % db)
        # a's server without its rollups table, and the shard's replicas without theirs (the
        # collector writes the rollups to them directly, ch_route.c): the lines INSERT goes
        # in (on one replica, which keeps it to itself), the rollups INSERT fails.
        renames = [(nodes[0], "rollups")] + [(n, "rollups_local") for n in nodes]
        for node, table in renames:
            node.query("RENAME TABLE %s.%s TO %s.%s_away" % (db, table, db, table))
        try:
            status, doc = a.upload(col, lines_pb(5 * NS, 2 * NS), "svc", "cpu", params=params)
        finally:
            for node, table in renames:
                node.query("RENAME TABLE %s.%s_away TO %s.%s" % (db, table, db, table))
        self.assertEqual(status, 503, doc)
        holders = [n for n in nodes if int(n.query(marks)) > 0]
        self.assertEqual(len(holders), 1)
        holder = holders[0]
        other, through = ((nodes[1], b) if holder is nodes[0] else (nodes[0], a))
        holder.stop()
        try:  # the other replica has not fetched the lines: it cannot say they are not stored
            status, doc = through.upload(col, lines_pb(5 * NS, 2 * NS), "svc", "cpu",
                                         params=params)
            # A first try meanwhile is stored: no earlier try noted its lines in the ledger.
            first = through.upload(col, lines_pb(NS, NS), "svc", "cpu",
                                   params={"upload_id": "lines-first"})
        finally:
            holder.start_again()
        self.assertEqual(status, 503, doc)
        self.assertIn("line detail", doc["detail"])
        self.assertEqual(first[0], 200, first[1])
        self.assertEqual(int(other.query(marks)), 1)  # the first try's, not the retry's
        # Back, a replica's tables stay read-only until its ZooKeeper session is up again
        # (the killed server's session must expire first): an INSERT sent there fails.
        for _ in range(120):
            if holder.query("SELECT sum(is_readonly) FROM system.replicas WHERE database = '%s'"
                            % db).strip() == "0":
                break
            time.sleep(0.5)
        for _ in range(40):  # the holder back (the other still behind): its mark is found
            status, doc = through.upload(col, lines_pb(5 * NS, 2 * NS), "svc", "cpu",
                                         params=params)
            if status == 200:
                break
            time.sleep(0.5)
        self.assertEqual((status, doc.get("duplicate")), (200, False), doc)
        for node in nodes:
            node.query("SYSTEM START FETCHES %s.profile_lines_local" % db)
        for node in nodes:
            node.query("SYSTEM SYNC REPLICA %s.profile_lines_local" % db)
            self.assertEqual(node.query(
                "SELECT sum(value) FROM %s.profile_lines_local WHERE function = 'app.hot'"
                % db).strip(), str(9 * NS))
        status, body = a.get_json("/api/apm/profiles/lines", viewer, params=dict(
            service="svc", profile_type="cpu", function="app.hot", time_range="1h"))
        self.assertEqual(status, 200, body)
        self.assertEqual({l["line"]: l["self"] for l in body["lines"]}, {12: 6 * NS, 14: 3 * NS})


if __name__ == "__main__":
    harness.main()
