# SPDX-License-Identifier: Apache-2.0
# Fleet mode: retention prunes ClickHouse's stacks dictionary (partitioned by day, schema v3)
# without losing a stack that a kept rollup or span link names. Days pass for real: each day's
# uploads go through a collector whose clock libfaketime sets that many days back, so that it
# stores its stacks in that day's partition, as a fleet's collectors do over a week. After
# retention every read of the kept days (flame graph, top, collapsed, export, span and trace
# reads) answers exactly as before, and the stacks only dropped days named are gone; two
# collectors (one a day behind) ingesting while both prune leave no row without its stack. A
# store at schema version 2 or 3 with data (stacks named by their old 64-bit identity),
# migrated to v4 (128-bit identities), answers the same, and new uploads add up with its rows.
# The series dictionary (schema v7, partitioned by day the same way) is pruned with them.
import gzip
import os
import re
import subprocess
import threading
import time
import unittest

import fake_clock
import fleet_servers
import harness
import pprof_py
from collector_fixture import Collector

DAY = 86400
TRACE = "0af7651916cd43dd8448eb211c8031%02x"


def require_servers_and_faketime():
    """make check installs both servers and libfaketime (scripts/install-deps.sh): a missing
    one fails the suite rather than skip it."""
    why = fleet_servers.available()
    if why:
        raise RuntimeError(why)
    fake_clock.require()


def cpu(samples, at):
    """samples: [(frames root first, value, labels)]; a profile of `at` (unix seconds)."""
    return pprof_py.build([(frames, [1, v], labels) for frames, v, labels in samples],
                          sample_types=[("samples", "count"), ("cpu", "nanoseconds")],
                          period_type=("cpu", "nanoseconds"), period=10000000,
                          time_nanos=at * 10**9)


def anchor():
    """(a time of today's UTC day, the end of a window holding it), both in the past, so that
    reads of the window do not change as the clock moves (covered_seconds): waits for the first
    minutes after midnight to pass."""
    now = int(time.time())
    if now % DAY < 330:
        time.sleep(330 - now % DAY)
        now = int(time.time())
    at = now - 900 if now % DAY >= 1200 else now - now % DAY + 1
    return at, at - at % 300 + 300


def without_window(answer):
    """A read's (status, document) without its window (covered_seconds follows the clock)."""
    status, doc = answer
    if isinstance(doc, dict):
        doc.pop("window", None)
    return status, doc


def span(d):
    return {"span_id": "%016x" % (d + 1), "trace_id": TRACE % d}


class StacksRetention(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        require_servers_and_faketime()
        self.at, self.end = anchor()
        self.today = self.at // DAY
        self.c = Collector(backend="fleet", start=False)
        self.addCleanup(self.c.close)
        self.tok = self.c.create_token("collector")
        self.viewer = self.c.create_token("user", role="viewer")

    def upload(self, samples, at):
        status, doc = self.c.upload(self.tok, cpu(samples, at), "api", "cpu")
        self.assertEqual(status, 200, doc)

    def load_four_days(self):
        """Days today-3 .. today, each through a collector living on that day: a stack every day
        names, one of the day's own (linked to the day's span), and on day today-3 an upload
        dated two days later (the agent's clock ahead of the collector's). Today also brings a
        late upload dated three days back."""
        for d in (3, 2, 1, 0):
            with fake_clock.days_back(d):
                self.c.start(["--retention-days", "30", "--link-retention-hours", "720"])
            at = self.at - d * DAY
            self.upload([(["main", "serve"], 100, {}),
                         (["main", "day%d" % d], 10 + d, span(d))], at)
            if d == 3:
                self.upload([(["main", "clock_ahead"], 7, {})], self.at - DAY)
            if d == 0:
                self.upload([(["main", "late"], 5, {})], self.at - 3 * DAY)
            self.c.stop()

    def get(self, path, params):
        status, _, body = self.c.request("GET", path, self.viewer, params=params)
        self.assertEqual(status, 200, (path, body))
        return body

    def reads(self, start, end, days):
        """Every read of [start, end) and of the spans and traces of `days`."""
        window = {"service": "api", "profile_type": "cpu", "start": start, "end": end}
        out = {p: self.get("/api/apm/profiles/" + p, window).decode()
               for p in ("flamegraph", "top", "collapsed")}
        export = pprof_py.parse(gzip.decompress(self.get("/api/apm/profiles/export", window)))
        out["export"] = sorted((s.root_first, tuple(s.values)) for s in export.samples)
        for d in days:
            out["span%d" % d] = self.get("/api/apm/profiles/flamegraph",
                                         dict(window, span_id=span(d)["span_id"])).decode()
            trace = self.get("/api/apm/traces/%s/profile" % (TRACE % d),
                             {"service": "api", "start": start, "end": end}).decode()
            # the answer names --link-retention-hours, which the tests change between reads
            out["trace%d" % d] = re.sub(r'"link_retention_hours":\d+,', "", trace)
        return out

    def retention(self, args, gone_before):
        """Restarts the collector with retention args (the job runs at start) and waits until
        the stacks partitions before day gone_before are dropped."""
        self.c.start(args)
        deadline = time.time() + 30
        while (min(self.stacks_days() + self.stacks_days("series")) < gone_before
               and time.time() < deadline):
            time.sleep(0.2)
        self.assertGreaterEqual(min(self.stacks_days()), gone_before, self.c.log()[-2000:])
        self.assertGreaterEqual(min(self.stacks_days("series")), gone_before)

    def stacks_days(self, table="stacks"):
        """The active partitions of the stacks dictionary (or of the series one, schema v7)."""
        out = self.c.clickhouse("SELECT DISTINCT toUInt32(partition) FROM {parts} WHERE"
                                " database = '{db}' AND table = '%s{local}' AND active" % table)
        return sorted(int(x) for x in out.split())

    def stored_frames(self):
        out = self.c.clickhouse("SELECT DISTINCT replaceAll(frames, '\\n', ';') FROM {db}.stacks")
        return set(out.split())

    def dangling(self):
        """Rows of rollups, its tiers and span_links naming a stack the dictionary lacks, and
        rows of rollups, its tiers and uploads naming a series the series dictionary lacks."""
        out = {t: int(self.c.clickhouse(
            "SELECT count() FROM {db}.%s WHERE stack_hash != toFixedString('', 16)"
            " AND stack_hash NOT IN"
            " (SELECT stack_hash FROM {db}.stacks)" % t))
            for t in ("rollups", "rollups_hour", "rollups_day", "span_links")}
        out.update({"series of " + t: int(self.c.clickhouse(
            "SELECT count() FROM {db}.%s WHERE series_id NOT IN"
            " (SELECT series_id FROM {db}.series)" % t))
            for t in ("rollups", "rollups_hour", "rollups_day", "uploads")})
        return out

    def test_retention_drops_the_stacks_only_dropped_days_named(self):
        self.load_four_days()
        self.assertEqual(self.stacks_days(), [self.today - 3, self.today - 2, self.today - 1,
                                              self.today])
        self.assertEqual(self.stacks_days("series"), self.stacks_days())
        kept = ((self.today - 1) * DAY, self.end)
        with fake_clock.days_back(0):
            self.c.start(["--retention-days", "30", "--link-retention-hours", "720"])
        before = self.reads(*kept, days=(1, 0))
        self.c.stop()
        self.assertEqual(before["collapsed"],
                         "main;serve 200\nmain;day1 11\nmain;day0 10\nmain;clock_ahead 7\n")
        for d in (1, 0):
            self.assertIn('"top_functions":[{"name":"day%d"' % d, before["trace%d" % d])

        self.retention(["--retention-days", "1", "--link-retention-hours", "24"],
                       gone_before=self.today - 1)
        self.assertEqual(self.reads(*kept, days=(1, 0)), before)
        self.assertEqual(self.stacks_days(), [self.today - 1, self.today])
        self.assertEqual(self.stacks_days("series"), [self.today - 1, self.today])
        frames = self.stored_frames()
        self.assertNotIn("main;day3", frames)
        self.assertNotIn("main;day2", frames)
        for kept_stack in ("main;serve", "main;day1", "main;day0", "main;clock_ahead",
                           "main;late"):  # late: its row is gone, its stack stays with today's
            self.assertIn(kept_stack, frames)
        self.assertEqual(self.dangling(), dict.fromkeys(self.dangling(), 0))

    def test_a_kept_span_link_keeps_its_stack_after_its_rollups_are_dropped(self):
        self.load_four_days()
        with fake_clock.days_back(0):
            self.c.start(["--retention-days", "30", "--link-retention-hours", "720"])
        before = self.reads((self.today - 3) * DAY, self.end, days=(3, 2))
        self.c.stop()
        # rollups keep one day, span links five: the links of days -3 and -2 still name
        # their stacks, so no stacks partition may go
        self.c.start(["--retention-days", "1", "--link-retention-hours", str(5 * 24)])
        deadline = time.time() + 30  # the rollups' retention, its stacks pruning included
        while "rollup rows older than" not in self.c.log() and time.time() < deadline:
            time.sleep(0.2)
        self.assertEqual(self.c.stored_total("api"), 100 + 11 + 100 + 10 + 7)  # today-1, today
        after = self.reads((self.today - 3) * DAY, self.end, days=(3, 2))
        for d in (3, 2):
            self.assertEqual(after["span%d" % d], before["span%d" % d])
            self.assertEqual(after["trace%d" % d], before["trace%d" % d])
            self.assertIn('"children":[{"name":"day%d","self":%d' % (d, 10 + d),
                          after["span%d" % d])
            self.assertIn('"top_functions":[{"name":"day%d"' % d, after["trace%d" % d])
        self.assertEqual(self.stacks_days(), [self.today - 3, self.today - 2, self.today - 1,
                                              self.today])
        self.assertEqual(self.dangling(), dict.fromkeys(self.dangling(), 0))


class ConcurrentRetention(unittest.TestCase):
    """Two collectors on the same stores, one a day behind (the most clock skew the invariant
    allows), ingest uploads dated today, yesterday, tomorrow and three days back (late) while
    both run retention every second; nothing locks them against each other."""
    maxDiff = None
    RETENTION = ["--retention-days", "1", "--link-retention-hours", "24",
                 "--retention-interval", "1"]
    UPLOADS = 24  # per collector

    def setUp(self):
        require_servers_and_faketime()
        self.at, _ = anchor()
        self.today = self.at // DAY
        self.a = Collector(backend="fleet", start=False)
        self.addCleanup(self.a.close)
        self.b = Collector(backend="fleet", stores=(self.a.pg_url, self.a.ch_url),
                           serve_args=self.RETENTION, start=False)
        self.addCleanup(self.b.close)
        self.tok = self.a.create_token("collector")
        self.viewer = self.a.create_token("user", role="viewer")
        for d in (3, 2):  # stacks partitions for the retention below to drop meanwhile
            with fake_clock.days_back(d):
                self.a.start()
            self.assertEqual(self.a.upload(self.tok, cpu([(["main", "shared"], 100, {})],
                                                         self.at - d * DAY), "api", "cpu")[0],
                             200)
            self.a.stop()
        self.a.start(self.RETENTION)
        with fake_clock.days_back(1):
            self.b.start()

    def send(self, c, name, sent):
        for i in range(self.UPLOADS):
            at = self.at + (0, -DAY, DAY, -3 * DAY)[i % 4]
            own = "%s%d" % (name, i)
            status, doc = c.upload(self.tok, cpu([(["main", "shared"], 100, {}),
                                                  (["main", own], 1 + i, span(i))], at),
                                   "api", "cpu")
            self.assertEqual(status, 200, doc)
            if at // DAY >= self.today - 1:  # a day retention keeps
                sent["main;shared"] = sent.get("main;shared", 0) + 100
                sent["main;" + own] = 1 + i

    def test_rows_written_while_both_prune_all_keep_their_stacks(self):
        sent_a, sent_b = {}, {}
        threads = [threading.Thread(target=self.send, args=(c, n, sent))
                   for c, n, sent in ((self.a, "a", sent_a), (self.b, "b", sent_b))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        deadline = time.time() + 30  # a's retention drops the late uploads' day
        while self.oldest_days() < (self.today - 1,) * 2 and time.time() < deadline:
            time.sleep(0.2)
        self.assertEqual(self.oldest_days(), (self.today - 1,) * 2)  # rollups, stacks
        expected = dict(sent_a, **sent_b)
        expected["main;shared"] = sent_a["main;shared"] + sent_b["main;shared"]
        status, _, body = self.a.request("GET", "/api/apm/profiles/collapsed", self.viewer,
                                         params={
                                             "service": "api", "profile_type": "cpu",
                                             "start": (self.today - 1) * DAY,
                                             "end": (self.today + 2) * DAY})
        self.assertEqual(status, 200, body)
        read = {line.rsplit(" ", 1)[0]: int(line.rsplit(" ", 1)[1])
                for line in body.decode().splitlines()}
        self.assertEqual(read, expected)
        for t in ("rollups", "rollups_hour", "rollups_day", "span_links"):
            self.assertEqual(self.a.clickhouse(
                "SELECT count() FROM {db}.%s WHERE stack_hash != toFixedString('', 16)"
                " AND stack_hash NOT IN"
                " (SELECT stack_hash FROM {db}.stacks)" % t).strip(), "0", t)
        for t in ("rollups", "rollups_hour", "rollups_day", "uploads"):  # and their series
            self.assertEqual(self.a.clickhouse(
                "SELECT count() FROM {db}.%s WHERE series_id NOT IN"
                " (SELECT series_id FROM {db}.series)" % t).strip(), "0", t)

    def oldest_days(self):
        """The oldest active partition of rollups and of stacks."""
        return tuple(int(self.a.clickhouse(
            "SELECT min(toUInt32(partition)) FROM {parts} WHERE database = '{db}'"
            " AND table = '%s{local}' AND active" % t)) for t in ("rollups", "stacks"))


SERIES = ("environment String, service String, profile_type String, deployment String,"
          " node String")
SERIES_KEY = "environment, service, profile_type, deployment, node"
NO_STACK = "toFixedString('', 16)"
# A stack's identity before schema v4: the first 8 bytes of the SHA-256 of its joined frames.
OLD_ID = "reinterpretAsUInt64(substring(SHA256(frames), 1, 8))"


# Schema v7's series dictionary as a join's right side: a series id -> its five strings.
SERIES_OF = (" ANY INNER JOIN (SELECT series_id, any(environment) AS environment, any(service)"
             " AS service, any(profile_type) AS profile_type, any(deployment) AS deployment,"
             " any(node) AS node FROM {db}.series GROUP BY series_id) USING series_id")


def v6_store_sql():
    """What a store at schema version 6 had (the five series strings on every row of the
    rollups, the tiers and the upload counts; no series dictionary), made from the current
    tables with v6's DDL: each table made again under its v6 shape and its rows copied with
    their series' strings."""
    v6 = {"rollups": (SERIES + ", bucket UInt32, stack_hash FixedString(16), value Int64,"
                      " period Int64, received_at UInt32", "SummingMergeTree(value)",
                      "bucket, stack_hash, value, period, received_at",
                      "(" + SERIES_KEY + ", bucket, stack_hash)"),
          "uploads": (SERIES + ", bucket UInt32, uploads AggregateFunction(sum, Int64),"
                      " last_upload AggregateFunction(max, UInt32), period"
                      " AggregateFunction(argMax, Int64, UInt32)", "AggregatingMergeTree",
                      "bucket, uploads, last_upload, period", "(" + SERIES_KEY + ", bucket)")}
    for t in ("rollups_hour", "rollups_day"):
        v6[t] = (SERIES + ", bucket UInt32, stack_hash FixedString(16), value Int64",
                 "SummingMergeTree(value)", "bucket, stack_hash, value",
                 "(" + SERIES_KEY + ", bucket, stack_hash)")
    sql = ["DROP TABLE {db}.uploads_mv"]
    for t, (columns, engine, copied, key) in v6.items():
        sql += ["CREATE TABLE {db}.%s_v6(%s) ENGINE = %s PARTITION BY intDiv(bucket, 86400)"
                " ORDER BY %s" % (t, columns, engine, key),
                "INSERT INTO {db}.%s_v6 SELECT %s, %s FROM {db}.%s%s"
                % (t, SERIES_KEY, copied, t, SERIES_OF),
                "DROP TABLE {db}.%s" % t, "RENAME TABLE {db}.%s_v6 TO {db}.%s" % (t, t)]
    for t in ("rollups_hour_staging", "rollups_day_staging"):
        sql += ["DROP TABLE {db}.%s" % t,
                "CREATE TABLE {db}.%s AS {db}.%s" % (t, t[:-len("_staging")])]
    sql += ["CREATE MATERIALIZED VIEW {db}.uploads_mv TO {db}.uploads AS SELECT " + SERIES_KEY +
            ", bucket, sumState(value) AS uploads, maxState(received_at) AS last_upload,"
            " argMaxState(period, received_at) AS period FROM {db}.rollups WHERE stack_hash = "
            + NO_STACK + " GROUP BY " + SERIES_KEY + ", bucket",
            "DROP TABLE {db}.series", "DROP TABLE {db}.schema_migrations",
            "CREATE TABLE {db}.schema_migrations(version UInt32, applied_at UInt32)"
            " ENGINE = TinyLog",
            "INSERT INTO {db}.schema_migrations VALUES " +
            ", ".join("(%d, %d)" % (v, v) for v in range(1, 7))]
    return sql


def old_store_sql(version):
    """What a store at schema version 2 or 3 had, made from v6's tables (v6_store_sql() first):
    every stack named by its old identity, the views as those versions made them."""
    tier = ("CREATE TABLE {db}.%s_old(" + SERIES + ", bucket UInt32, stack_hash UInt64,"
            " value Int64) ENGINE = SummingMergeTree(value) PARTITION BY intDiv(bucket, 86400)"
            " ORDER BY (" + SERIES_KEY + ", bucket, stack_hash)")
    old = "if(stack_hash = %s, toUInt64(0), old)" % NO_STACK
    joined = " ANY LEFT JOIN (SELECT new AS stack_hash, old FROM {db}.idmap) USING stack_hash"
    stacks = ("CREATE TABLE {db}.stacks_old(stack_hash UInt64, frames String, day UInt32)"
              " ENGINE = ReplacingMergeTree PARTITION BY day ORDER BY stack_hash"
              if version == 3 else
              "CREATE TABLE {db}.stacks_old(stack_hash UInt64, frames String)"
              " ENGINE = ReplacingMergeTree ORDER BY stack_hash")
    sql = ["CREATE TABLE {db}.idmap ENGINE = Memory AS SELECT stack_hash AS new, %s AS old"
           " FROM (SELECT stack_hash, any(frames) AS frames FROM {db}.stacks"
           " GROUP BY stack_hash)" % OLD_ID]
    sql += ["DROP TABLE {db}.%s" % v for v in (
        "uploads_mv", "span_traces_mv", "span_roots_mv", "span_names_mv",
        "rollups_hour_staging", "rollups_day_staging")]
    sql += [stacks,
            "INSERT INTO {db}.stacks_old SELECT %s, any(frames)%s FROM {db}.stacks GROUP BY"
            " stack_hash" % (OLD_ID.replace("frames", "any(frames)"),
                             ", any(day)" if version == 3 else ""),
            "CREATE TABLE {db}.rollups_old(" + SERIES + ", bucket UInt32, stack_hash UInt64,"
            " value Int64, period Int64, received_at UInt32) ENGINE = SummingMergeTree(value)"
            " PARTITION BY intDiv(bucket, 86400) ORDER BY (" + SERIES_KEY + ", bucket,"
            " stack_hash)",
            "INSERT INTO {db}.rollups_old SELECT " + SERIES_KEY + ", bucket, " + old +
            ", value, period, received_at FROM {db}.rollups" + joined,
            # the tiers as those versions' views filled them: every row, at ingest
            tier % "rollups_hour",
            "INSERT INTO {db}.rollups_hour_old SELECT " + SERIES_KEY + ", toUInt32(intDiv("
            "bucket, 3600) * 3600), " + old + ", value FROM {db}.rollups" + joined +
            " WHERE stack_hash != " + NO_STACK,
            tier % "rollups_day",
            "INSERT INTO {db}.rollups_day_old SELECT " + SERIES_KEY + ", toUInt32(intDiv("
            "bucket, 86400) * 86400), " + old + ", value FROM {db}.rollups" + joined +
            " WHERE stack_hash != " + NO_STACK,
            "CREATE TABLE {db}.span_links_old(environment String, time UInt32, service String,"
            " profile_type String, trace_id String, span_id String, parent_span_id String,"
            " root_span_id String, span_name String, node String, stack_hash UInt64,"
            " value Int64, samples Int64) ENGINE = MergeTree PARTITION BY intDiv(time, 86400)"
            " ORDER BY (environment, span_id, time) SETTINGS index_granularity = 1024",
            "INSERT INTO {db}.span_links_old SELECT environment, time, service, profile_type,"
            " trace_id, span_id, parent_span_id, root_span_id, span_name, node, " + old +
            ", value, samples FROM {db}.span_links" + joined]
    for t in ("stacks", "rollups", "rollups_hour", "rollups_day", "span_links"):
        sql += ["DROP TABLE {db}.%s" % t, "RENAME TABLE {db}.%s_old TO {db}.%s" % (t, t)]
    for t, unit in (("rollups_hour", 3600), ("rollups_day", 86400)):
        sql.append("CREATE MATERIALIZED VIEW {db}.%s_mv TO {db}.%s AS SELECT %s,"
                   " toUInt32(intDiv(bucket, %d) * %d) AS bucket, stack_hash, value"
                   " FROM {db}.rollups WHERE stack_hash != 0" % (t, t, SERIES_KEY, unit, unit))
    sql.append("CREATE MATERIALIZED VIEW {db}.uploads_mv TO {db}.uploads AS SELECT " +
               SERIES_KEY + ", bucket, sumState(value) AS uploads, maxState(received_at) AS"
               " last_upload, argMaxState(period, received_at) AS period FROM {db}.rollups"
               " WHERE stack_hash = 0 GROUP BY " + SERIES_KEY + ", bucket")
    for t, key in (("span_traces", "trace_id"), ("span_roots", "root_span_id"),
                   ("span_names", "span_name")):
        sql.append("CREATE MATERIALIZED VIEW {db}.%s_mv TO {db}.%s AS SELECT environment, %s,"
                   " time, span_id FROM {db}.span_links WHERE %s != ''" % (t, t, key, key))
    sql += ["DROP TABLE {db}.idmap", "DROP TABLE {db}.profile_lines",  # v5's
            "DROP TABLE {db}.schema_migrations",
            "CREATE TABLE {db}.schema_migrations(version UInt32, applied_at UInt32)"
            " ENGINE = TinyLog",
            "INSERT INTO {db}.schema_migrations VALUES " +
            ", ".join("(%d, %d)" % (v, v) for v in range(1, version + 1))]
    return sql


class SchemaUpgrade(unittest.TestCase):
    """A store written at schema version 2 or 3 (stacks named by their old 64-bit identity),
    migrated to v4 (128-bit identities): every read answers as before, and uploads after the
    upgrade (the same stacks under their new identity) add up with the old rows exactly as in
    a store that only ever had v4."""
    maxDiff = None

    def setUp(self):
        require_servers_and_faketime()
        if fleet_servers.cluster_shape():
            self.skipTest("builds a version 2 or 3 store by hand on one server; a cluster"
                          " starts at version 4 (migrate --cluster)")
        self.c = Collector(backend="fleet", start=False)
        self.addCleanup(self.c.close)
        self.now = int(time.time())
        self.window = {"service": "api", "profile_type": "cpu", "start": self.now - 3 * DAY,
                       "end": self.now + 3 * DAY}

    def upload_days(self, c, tok):
        for i, at in enumerate((self.now - 2 * DAY, self.now - DAY, self.now,
                                self.now + 2 * DAY)):
            status, doc = c.upload(tok, cpu([(["main", "serve"], 100, {}),
                                             (["main", "only%d" % i], 10 + i, span(i))],
                                            at), "api", "cpu")
            self.assertEqual(status, 200, doc)

    def reads(self, c, viewer):
        out = [without_window(c.get_json("/api/apm/profiles/" + p, viewer, params=self.window))
               for p in ("flamegraph", "top")]
        out += [c.get_json("/api/apm/traces/%s/profile" % (TRACE % i), viewer,
                           params={"service": "api", "start": self.window["start"],
                                   "end": self.window["end"]}) for i in range(4)]
        status, _, body = c.request("GET", "/api/apm/profiles/collapsed", viewer,
                                    params=self.window)
        out.append((status, sorted(body.decode().splitlines())))
        status, _, body = c.request("GET", "/api/apm/profiles/export", viewer, params=self.window)
        export = pprof_py.parse(gzip.decompress(body))  # one sample per stack
        out.append((status, sorted((s.root_first, tuple(s.values)) for s in export.samples)))
        return out

    def stacks(self):
        return sorted(self.c.clickhouse("SELECT DISTINCT replaceAll(frames, '\\n', ';')"
                                        " FROM {db}.stacks").split())

    def old_rows(self):
        """Rows of rollups naming a stack by its old identity (the last 8 bytes zero)."""
        return int(self.c.clickhouse(
            "SELECT count() FROM {db}.rollups WHERE stack_hash != %s AND"
            " reinterpretAsUInt64(substring(stack_hash, 9, 8)) = 0" % NO_STACK))

    def migrate(self, version):
        self.c.stop()
        for sql in v6_store_sql() + old_store_sql(version):
            self.c.clickhouse(sql)
        with self.assertRaises(RuntimeError) as refused:
            self.c.start()
        self.assertIn("migrate", str(refused.exception))
        r = subprocess.run([self.c.binary, "migrate", "--control-store", self.c.pg_url,
                            "--profile-store", self.c.ch_url], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ClickHouse): schema version %d -> 7" % version, r.stderr)
        self.assertEqual(self.c.clickhouse("EXISTS TABLE {db}.rollups_v3").strip(), "0")
        self.c.start()

    def test_a_version_2_store_migrated_answers_the_same(self):
        tok = self.c.create_token("collector")
        viewer = self.c.create_token("user", role="viewer")
        self.c.start()
        self.upload_days(self.c, tok)
        before, stacks = self.reads(self.c, viewer), self.stacks()
        self.migrate(2)
        self.assertEqual(self.stacks(), stacks)
        # every stack in the partition of the latest day a row names: the upload 2 days ahead
        self.assertEqual(self.c.clickhouse("SELECT DISTINCT day FROM {db}.stacks").split(),
                         [str(self.now // DAY + 2)])
        self.assertEqual(self.c.clickhouse("EXISTS TABLE {db}.stacks_v1").strip(), "0")
        self.assertGreater(self.old_rows(), 0)
        self.assertEqual(self.reads(self.c, viewer), before)

    def test_a_version_3_store_migrated_answers_the_same_and_adds_up_new_uploads(self):
        tok = self.c.create_token("collector")
        viewer = self.c.create_token("user", role="viewer")
        self.c.start()
        self.upload_days(self.c, tok)
        before = self.reads(self.c, viewer)
        self.migrate(3)
        self.assertGreater(self.old_rows(), 0)
        self.assertEqual(self.reads(self.c, viewer), before)
        # The same stacks again, now under their new identity: summed with the old rows.
        self.upload_days(self.c, tok)
        with Collector(backend="fleet") as fresh:
            fresh_tok = fresh.create_token("collector")
            self.upload_days(fresh, fresh_tok)
            self.upload_days(fresh, fresh_tok)
            expected = self.reads(fresh, fresh.create_token("user", role="viewer"))
        got = self.reads(self.c, viewer)
        self.assertNotEqual(got, before)
        self.assertEqual(got, expected)


if __name__ == "__main__":
    harness.main()
