# SPDX-License-Identifier: Apache-2.0
# Fleet mode on a ClickHouse cluster of two shards, one replica each (two clickhouse-server
# processes, a ZooKeeper and the remote_servers of fleet_servers.py, ROOTTRACE_FLEET_CLUSTER=2x1):
# `migrate --cluster` makes Replicated tables on each shard with the columns one server gets and
# Distributed tables over them; a collector on the cluster answers as a SQLite collector given
# the same uploads (the fleet suites check one ClickHouse server against SQLite the same way); a
# series' rows (and its row of the series dictionary, schema v7) are on one shard, written to the
# shard's own table where the Distributed table would put them (ch_route.c); the config
# file's cluster key is checked. Fleet suites' cases
# run here on the cluster too: uploads through two collectors and exactly-once ids, the tiers
# built shard by shard (a read racing the builder, late uploads, retention dropping days on
# every shard), span links and the stacks dictionary across shards. `make check-fleet` runs
# every fleet suite on the cluster (kill -9 during ingest and during a tier build, migrate
# --from, the stacks dictionary's retention, ...).
import os

os.environ["ROOTTRACE_FLEET_CLUSTER"] = "2x1"  # before fleet_servers starts the servers

import subprocess  # noqa: E402
import time  # noqa: E402
import unittest  # noqa: E402

import fleet_servers  # noqa: E402
import harness  # noqa: E402
from collector_fixture import Collector  # noqa: E402
import test_collector_fleet as one_server  # noqa: E402
from test_collector_tiers import cpu as tiers_cpu  # noqa: E402
from test_collector_fleet import TwoCollectors, cpu  # noqa: E402,F401
from test_spans_route import FleetSpansRoute  # noqa: E402,F401

TABLES = ("stacks", "series", "rollups", "rollups_hour", "rollups_day", "uploads",
          "rollups_hour_staging", "rollups_day_staging", "span_links", "span_traces",
          "span_roots", "span_names", "profile_lines")


def nodes():
    return fleet_servers.servers().nodes


def db_of(url):
    return url.rsplit("/", 1)[1]


class Schema(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pg, cls.ch = fleet_servers.fresh_databases()
        cls.c = Collector(backend="sqlite", start=False)  # for cli()
        cls.addClassCleanup(cls.c.close)

    def columns(self, node, db, table):
        return node.query("SELECT name, type FROM system.columns WHERE database = '%s'"
                          " AND table = '%s'" % (db, table))

    def test_every_node_has_replicated_shard_tables_and_distributed_ones(self):
        db = db_of(self.ch)
        self.assertEqual(len(nodes()), 2)
        for node in nodes():
            engines = dict(line.split("\t") for line in node.query(
                "SELECT name, engine FROM system.tables WHERE database = '%s'" % db).split("\n")
                if line)
            for t in TABLES:
                self.assertEqual(engines.get(t), "Distributed", (t, engines))
                self.assertTrue(engines.get(t + "_local", "").startswith("Replicated"),
                                (t, engines))

    def test_shard_tables_have_the_columns_one_server_gets(self):
        # The same node, as one server: migrate without --cluster into another database.
        name = "rt_single_%d" % os.getpid()
        fleet_servers.servers().pg.psql("CREATE DATABASE %s" % name)
        single = self.ch.rsplit("/", 1)[0] + "/" + name
        self.c.cli("migrate", "--control-store", fleet_servers.servers().pg.url(name),
                   "--profile-store", single)
        for t in TABLES:
            self.assertEqual(self.columns(nodes()[0], db_of(self.ch), t + "_local"),
                             self.columns(nodes()[0], name, t), t)

    def test_migrate_keeps_the_mode_and_refuses_another_cluster(self):
        again = subprocess.run([self.c.binary, "migrate", "--control-store", self.pg,
                                "--profile-store", self.ch], capture_output=True, text=True)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertRegex(again.stderr, r"ClickHouse\): schema version (\d+) -> \1\n")
        r = subprocess.run([self.c.binary, "migrate", "--control-store", self.pg,
                            "--profile-store", self.ch, "--cluster", "other"],
                           capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("made on cluster roottrace", r.stderr)

    def test_serve_checks_the_config_files_cluster(self):
        path = os.path.join(self.c.tmp, "fleet.conf")
        with open(path, "w") as f:
            f.write("control_store = %s\nprofile_store = %s\ncluster = elsewhere\n"
                    % (self.pg, self.ch))
        r = subprocess.run([self.c.binary, "serve", "--config", path, "--data", self.c.data,
                            "--listen", "127.0.0.1:0"], capture_output=True, text=True,
                           timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("cluster elsewhere", r.stderr)
        # migrate reads the same key (as --cluster): another cluster is refused
        r = subprocess.run([self.c.binary, "migrate", "--config", path], capture_output=True,
                           text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("made on cluster roottrace", r.stderr)


class ClusterTiers(one_server.FleetTiers):
    """The tiers on a cluster: `tiers build` builds each shard's tiers on that shard's own
    tables (ClickHouse 18.16 refuses REPLACE PARTITION ON CLUSTER), the windows answer the same
    before a build, after it, and after late uploads into built periods; retention drops days
    on every shard, the tiers' too."""

    def test_retention_cuts_tiers_where_it_cuts_five_minute_rows(self):
        super().test_retention_cuts_tiers_where_it_cuts_five_minute_rows()
        day = (int(time.time()) - 30 * 86400) // 86400
        for node in nodes():
            self.assertEqual(node.query(
                "SELECT count() FROM system.parts WHERE database = '%s' AND active AND"
                " table IN ('rollups_local', 'rollups_hour_local', 'rollups_day_local',"
                " 'uploads_local')"
                " AND toUInt32(partition) < %d" % (db_of(self.c.ch_url), day)).strip(), "0")

    def test_each_shard_builds_its_own_series(self):
        start = (int(time.time()) // 86400 - 3) * 86400
        for i in range(8):  # eight services: both shards hold some
            status, body = self.c.upload(self.tok, tiers_cpu({"main;work": 1 + i},
                                                             start + 3600 + 600 * i),
                                         "svc-%d" % i, "cpu")
            self.assertEqual(status, 200, body)
        self.assertEqual(self.build(), 1)
        db = db_of(self.c.ch_url)
        for node in nodes():  # schema-neutral: sums, whatever names a series
            five = node.query("SELECT sum(value) FROM %s.rollups_local WHERE"
                              " stack_hash != toFixedString('', 16)" % db).strip()
            self.assertGreater(int(five), 0)  # both shards hold some series
            for tier in ("rollups_hour_local", "rollups_day_local"):
                self.assertEqual(node.query(
                    "SELECT sum(value) FROM %s.%s WHERE stack_hash !="
                    " toFixedString('', 16)" % (db, tier)).strip(), five, tier)

    def test_a_build_without_every_shard_builds_nothing(self):
        start = (int(time.time()) // 86400 - 3) * 86400
        self.send(start + 3600, 5)
        r = subprocess.run([self.c.binary, "tiers", "build", "--control-store", self.c.pg_url,
                            "--profile-store", self.c.ch_url, "--delay-s", "0",
                            "--clickhouse-servers", "127.0.0.1:%d" % nodes()[0].port],
                           capture_output=True, text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("1 of its 2 shards reached", r.stderr)
        self.assertEqual(int(self.c.clickhouse("SELECT count() FROM {db}.rollups_hour")), 0)
        self.check_windows(((start, start + 86400),))


class ClusterTierBuilds(one_server.TierBuilds):
    """A read racing the collectors' builder on the cluster answers as before any build (a day
    is read from its tiers once every shard built it). The kill -9 case runs under make
    check-fleet (test_collector_fleet on the cluster)."""
    test_a_build_killed_mid_way_is_redone_by_another_with_nothing_doubled = None


def stacks_of(service, i):
    return [(["main", service, "handle", "parse"], [1, 1000 * (i + 1)]),
            (["main", service, "render%d" % (i % 3)], [1, 700]),
            (["main", "gc"], [1, 50 + i])]


class TwoShards(unittest.TestCase):
    SERVICES = ["svc-%02d" % i for i in range(12)]

    @classmethod
    def setUpClass(cls):
        cls.c = Collector(backend="fleet")
        cls.addClassCleanup(cls.c.close)
        cls.single = Collector(backend="sqlite")
        cls.addClassCleanup(cls.single.close)
        cls.tok = cls.c.create_token("collector")
        cls.viewer = cls.c.create_token("user", role="viewer")
        cls.stok = cls.single.create_token("collector")
        # Two hours ago: closed hours, which a tier build folds.
        cls.at = (time.time_ns() // 300_000_000_000) * 300_000_000_000 - 7200_000_000_000
        for i, service in enumerate(cls.SERVICES * 2):
            for profile_type in ("cpu",):
                pb = cpu(stacks_of(service, i), cls.at + (i % 3) * 300_000_000_000)
                status, doc = cls.c.upload(cls.tok, pb, service, profile_type)
                assert status == 200, doc
                status, doc = cls.single.upload(cls.stok, pb, service, profile_type)
                assert status == 200, doc

    def test_reads_answer_as_one_store_does(self):
        self.compare()

    def test_reads_after_a_tier_build_answer_as_one_store_does(self):
        self.c.cli("tiers", "build", *self.c.server_args(), "--delay-s", "0")
        self.assertGreater(int(self.c.clickhouse("SELECT count() FROM {db}.rollups_hour")), 0)
        for node in nodes():  # each shard built its own series' hours
            self.assertGreater(int(node.query("SELECT count() FROM %s.rollups_hour_local"
                                              % db_of(self.c.ch_url))), 0)
        self.compare()

    def compare(self):
        base = {"profile_type": "cpu", "start": self.at // 10**9 - 3600,
                "end": self.at // 10**9 + 900}
        for service in self.SERVICES[:4]:
            params = dict(base, service=service)
            for path in ("/api/apm/profiles/top", "/api/apm/profiles/flamegraph"):
                status, cluster = self.c.get_json(path, self.viewer, params=params)
                self.assertEqual(status, 200, cluster)
                status, one = self.single.get_json(path, self.single.admin_token,
                                                   params=params)
                self.assertEqual(status, 200, one)
                self.assertEqual(cluster, one, (path, service))
        mid = self.at // 10**9 + 300
        diff = dict(service=self.SERVICES[0], profile_type="cpu", before_start=mid - 3600,
                    before_end=mid, after_start=mid, after_end=mid + 600)
        status, cluster = self.c.get_json("/api/apm/profiles/diff", self.viewer, params=diff)
        self.assertEqual(status, 200, cluster)
        status, one = self.single.get_json("/api/apm/profiles/diff", self.single.admin_token,
                                           params=diff)
        self.assertEqual(cluster, one)
        self.assertEqual(self.c.stored_total(), self.single.stored_total())

    def test_a_series_rows_are_on_one_shard(self):
        """Rows name their series by id (schema v7) and are sharded by it: each id's rollups,
        upload counts and dictionary row are on one shard."""
        db = db_of(self.c.ch_url)
        on = []
        for node in nodes():
            on.append(set(node.query("SELECT DISTINCT series_id FROM %s.rollups_local" % db)
                          .split()))
        self.assertEqual(len(on[0] | on[1]), len(self.SERVICES))  # one node, one series each
        self.assertEqual(on[0] & on[1], set())
        self.assertTrue(on[0] and on[1], on)  # both shards hold some series
        for node, ids in zip(nodes(), on):  # uploads (filled by its view) and the dictionary
            for table in ("uploads_local", "series_local"):
                self.assertEqual(set(node.query("SELECT DISTINCT series_id FROM %s.%s"
                                                % (db, table)).split()), ids, table)
        names = self.c.clickhouse("SELECT DISTINCT service FROM {db}.series").split()
        self.assertEqual(sorted(names), sorted(self.SERVICES))


def inserted_rows(node):
    return int(node.query("SELECT value FROM system.events WHERE event = 'InsertedRows'")
               or 0)


class DirectToShards(unittest.TestCase):
    """The collector writes a group's rollups to each shard's own table, on the shard the
    Distributed table would choose (series_id modulo the shards' weights), not through the
    Distributed table (ch_route.c): a series of the second shard's costs the first server
    nothing once its dictionary rows are stored."""

    def test_rollups_go_to_their_shard_without_the_distributed_hop(self):
        with Collector(backend="fleet", serve_args=["--tier-build-interval-ms", "0"]) as c:
            tok = c.create_token("collector")
            at = time.time_ns()
            for i in range(20):  # a service whose series is on the second shard
                service = "direct-%d" % i
                status, doc = c.upload(tok, cpu(stacks_of(service, 1), at), service, "cpu")
                self.assertEqual(status, 200, doc)
                sid = int(c.clickhouse("SELECT series_id FROM {db}.series WHERE service = '%s'"
                                       % service))
                if sid % 2 == 1:
                    break
            self.assertEqual(sid % 2, 1)
            first, second = nodes()
            before = inserted_rows(first), inserted_rows(second)
            status, doc = c.upload(tok, cpu(stacks_of(service, 1), at), service, "cpu")
            self.assertEqual(status, 200, doc)
            self.assertEqual(inserted_rows(first), before[0])  # no Distributed INSERT there
            self.assertGreater(inserted_rows(second), before[1])
            db = db_of(c.ch_url)
            for k, node in enumerate(nodes()):  # every row where Distributed would put it
                self.assertEqual(node.query("SELECT count() FROM %s.rollups_local WHERE"
                                            " series_id %% 2 != %d" % (db, k)).strip(), "0")
            self.assertEqual(int(c.clickhouse(
                "SELECT sum(value) FROM {db}.rollups WHERE series_id = %d"
                " AND stack_hash = toFixedString('', 16)" % sid)), 2)  # two uploads counted


if __name__ == "__main__":
    harness.main()
