# SPDX-License-Identifier: Apache-2.0
# Fleet mode: retention prunes ClickHouse's stacks dictionary (partitioned by day, schema v3)
# without losing a stack that a kept rollup or span link names. Days pass for real: each day's
# uploads go through a collector whose clock libfaketime sets that many days back, so that it
# stores its stacks in that day's partition, as a fleet's collectors do over a week. After
# retention every read of the kept days (flame graph, top, collapsed, export, span and trace
# reads) answers exactly as before, and the stacks only dropped days named are gone; two
# collectors (one a day behind) ingesting while both prune leave no row without its stack. A
# store at schema version 2 with data, migrated, answers the same and keeps every stack hash.
import contextlib
import gzip
import os
import subprocess
import threading
import time
import unittest

import fleet_servers
import harness
import pprof_py
from collector_fixture import Collector

DAY = 86400
FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
TRACE = "0af7651916cd43dd8448eb211c8031%02x"


def require_servers_and_faketime():
    """make check installs both servers and libfaketime (scripts/install-deps.sh): a missing
    one fails the suite rather than skip it."""
    why = fleet_servers.available()
    if why:
        raise RuntimeError(why)
    if not os.path.exists(FAKETIME):
        raise RuntimeError("libfaketime is not installed (scripts/install-deps.sh)")


@contextlib.contextmanager
def clock_days_back(days):
    """Processes started inside see a clock `days` days behind (libfaketime), none when 0."""
    saved = {k: os.environ.get(k) for k in ("LD_PRELOAD", "FAKETIME")}
    if days:
        os.environ["LD_PRELOAD"] = FAKETIME
        os.environ["FAKETIME"] = "-%dd" % days
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


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
        self.tok = self.c.create_token("collector")
        self.viewer = self.c.create_token("user", role="viewer")

    def tearDown(self):
        self.c.close()

    def upload(self, samples, at):
        status, doc = self.c.upload(self.tok, cpu(samples, at), "api", "cpu")
        self.assertEqual(status, 200, doc)

    def load_four_days(self):
        """Days today-3 .. today, each through a collector living on that day: a stack every day
        names, one of the day's own (linked to the day's span), and on day today-3 an upload
        dated two days later (the agent's clock ahead of the collector's). Today also brings a
        late upload dated three days back."""
        for d in (3, 2, 1, 0):
            with clock_days_back(d):
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
            out["trace%d" % d] = self.get("/api/apm/traces/%s/profile" % (TRACE % d),
                                          {"service": "api", "start": start, "end": end}).decode()
        return out

    def retention(self, args, gone_before):
        """Restarts the collector with retention args (the job runs at start) and waits until
        the stacks partitions before day gone_before are dropped."""
        self.c.start(args)
        deadline = time.time() + 30
        while min(self.stacks_days()) < gone_before and time.time() < deadline:
            time.sleep(0.2)
        self.assertGreaterEqual(min(self.stacks_days()), gone_before, self.c.log()[-2000:])

    def stacks_days(self):
        out = self.c.clickhouse("SELECT DISTINCT toUInt32(partition) FROM system.parts WHERE"
                                " database = '{db}' AND table = 'stacks' AND active")
        return sorted(int(x) for x in out.split())

    def stored_frames(self):
        out = self.c.clickhouse("SELECT DISTINCT replaceAll(frames, '\\n', ';') FROM {db}.stacks")
        return set(out.split())

    def dangling(self):
        """Rows of rollups, its tiers and span_links naming a stack the dictionary lacks."""
        return {t: int(self.c.clickhouse(
            "SELECT count() FROM {db}.%s WHERE stack_hash != 0 AND stack_hash NOT IN"
            " (SELECT stack_hash FROM {db}.stacks)" % t))
            for t in ("rollups", "rollups_hour", "rollups_day", "span_links")}

    def test_retention_drops_the_stacks_only_dropped_days_named(self):
        self.load_four_days()
        self.assertEqual(self.stacks_days(), [self.today - 3, self.today - 2, self.today - 1,
                                              self.today])
        kept = ((self.today - 1) * DAY, self.end)
        with clock_days_back(0):
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
        frames = self.stored_frames()
        self.assertNotIn("main;day3", frames)
        self.assertNotIn("main;day2", frames)
        for kept_stack in ("main;serve", "main;day1", "main;day0", "main;clock_ahead",
                           "main;late"):  # late: its row is gone, its stack stays with today's
            self.assertIn(kept_stack, frames)
        self.assertEqual(self.dangling(), dict.fromkeys(self.dangling(), 0))

    def test_a_kept_span_link_keeps_its_stack_after_its_rollups_are_dropped(self):
        self.load_four_days()
        with clock_days_back(0):
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
        self.b = Collector(backend="fleet", stores=(self.a.pg_url, self.a.ch_url),
                           serve_args=self.RETENTION, start=False)
        self.tok = self.a.create_token("collector")
        self.viewer = self.a.create_token("user", role="viewer")
        for d in (3, 2):  # stacks partitions for the retention below to drop meanwhile
            with clock_days_back(d):
                self.a.start()
            self.assertEqual(self.a.upload(self.tok, cpu([(["main", "shared"], 100, {})],
                                                         self.at - d * DAY), "api", "cpu")[0],
                             200)
            self.a.stop()
        self.a.start(self.RETENTION)
        with clock_days_back(1):
            self.b.start()

    def tearDown(self):
        self.b.close()
        self.a.close()

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
                "SELECT count() FROM {db}.%s WHERE stack_hash != 0 AND stack_hash NOT IN"
                " (SELECT stack_hash FROM {db}.stacks)" % t).strip(), "0", t)

    def oldest_days(self):
        """The oldest active partition of rollups and of stacks."""
        return tuple(int(self.a.clickhouse(
            "SELECT min(toUInt32(partition)) FROM system.parts WHERE database = '{db}'"
            " AND table = '%s' AND active" % t)) for t in ("rollups", "stacks"))


class SchemaUpgrade(unittest.TestCase):
    """A store at ClickHouse schema version 2 (one unpartitioned stacks table) with data:
    migrate copies every stack into the v3 table, and the reads answer the same."""
    maxDiff = None

    def setUp(self):
        require_servers_and_faketime()
        self.c = Collector(backend="fleet", start=False)

    def tearDown(self):
        self.c.close()

    def stack_hashes(self):
        return sorted(self.c.clickhouse("SELECT DISTINCT stack_hash FROM {db}.stacks").split())

    def to_version_2(self):
        """The v3 database made what version 2 left: v1's stacks table, versions 1 and 2."""
        for sql in (
                "CREATE TABLE {db}.stacks_old(stack_hash UInt64, frames String)"
                " ENGINE = ReplacingMergeTree ORDER BY stack_hash",
                "INSERT INTO {db}.stacks_old SELECT stack_hash, frames FROM {db}.stacks",
                "DROP TABLE {db}.stacks",
                "RENAME TABLE {db}.stacks_old TO {db}.stacks",
                "DROP TABLE {db}.schema_migrations",
                "CREATE TABLE {db}.schema_migrations(version UInt32, applied_at UInt32)"
                " ENGINE = TinyLog",
                "INSERT INTO {db}.schema_migrations VALUES (1, 1), (2, 2)"):
            self.c.clickhouse(sql)

    def test_a_version_2_store_migrated_answers_the_same(self):
        tok = self.c.create_token("collector")
        viewer = self.c.create_token("user", role="viewer")
        now = int(time.time())
        self.c.start()
        for i, at in enumerate((now - 2 * DAY, now - DAY, now, now + 2 * DAY)):
            status, doc = self.c.upload(tok, cpu([(["main", "serve"], 100, {}),
                                                  (["main", "only%d" % i], 10 + i, span(i))],
                                                 at), "api", "cpu")
            self.assertEqual(status, 200, doc)
        window = {"service": "api", "profile_type": "cpu", "start": now - 3 * DAY,
                  "end": now + 3 * DAY}

        def reads():
            out = [without_window(self.c.get_json("/api/apm/profiles/" + p, viewer,
                                                  params=window))
                   for p in ("flamegraph", "top")]
            out += [self.c.get_json("/api/apm/traces/%s/profile" % (TRACE % i), viewer,
                                    params={"service": "api", "start": window["start"],
                                            "end": window["end"]}) for i in range(4)]
            return out

        before = reads()
        hashes = self.stack_hashes()
        self.c.stop()
        self.to_version_2()
        with self.assertRaises(RuntimeError) as refused:
            self.c.start()
        self.assertIn("migrate", str(refused.exception))
        r = subprocess.run([self.c.binary, "migrate", "--control-store", self.c.pg_url,
                            "--profile-store", self.c.ch_url], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ClickHouse): schema version 2 -> 3", r.stderr)
        self.assertEqual(self.stack_hashes(), hashes)
        # every stack in the partition of the latest day a row names: the upload 2 days ahead
        self.assertEqual(self.c.clickhouse("SELECT DISTINCT day FROM {db}.stacks").split(),
                         [str(now // DAY + 2)])
        self.assertEqual(self.c.clickhouse("EXISTS TABLE {db}.stacks_v1").strip(), "0")
        self.c.start()
        self.assertEqual(reads(), before)


if __name__ == "__main__":
    harness.main()
