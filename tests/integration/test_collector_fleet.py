# SPDX-License-Identifier: Apache-2.0
# Fleet mode on real servers: two collector processes sharing one PostgreSQL control plane and
# one ClickHouse profile store (throwaway servers of fleet_servers.py). Settings written through
# one are served by the other, uploads through both merge into the same rollups and read the
# same from either (and the same as a SQLite collector given the same uploads), an upload id is
# exactly-once across collectors, migrate is versioned, migrate --from copies an embedded store
# into the servers with the same answers, and ClickHouse down answers 503 without
# acknowledging, then recovers without a restart.
import os
import subprocess
import threading
import time
import unittest

import fleet_servers
import harness
import pprof_py
import test_collector_hardening as sqlite_hardening
import test_collector_tiers as sqlite_tiers
from collector_fixture import Collector

DAY = 86400


def skip_without_servers():
    """make check installs both servers (scripts/install-deps.sh): missing ones fail the
    suite rather than skip it, so a broken install cannot pass as green."""
    why = fleet_servers.available()
    if why:
        raise RuntimeError(why)


def cpu(stacks, at):
    return pprof_py.build(stacks, sample_types=[("samples", "count"), ("cpu", "nanoseconds")],
                          period_type=("cpu", "nanoseconds"), period=10000000, time_nanos=at)


def wall(value, at=None):
    return pprof_py.build([(["main", "serve"], value)], sample_types=[("wall", "nanoseconds")],
                          time_nanos=at or time.time_ns())


def stacks_for(i):
    """Upload i's stacks: overlapping across uploads so that values merge."""
    return [(["main", "handle", "parse"], [1, 1000 * (i + 1)]),
            (["main", "handle", "render%d" % (i % 3)], [1, 700]),
            (["main", "gc"], [1, 50 + i])]


class TwoCollectors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        skip_without_servers()
        cls.a = Collector(backend="fleet")
        cls.addClassCleanup(cls.a.close)
        cls.b = Collector(backend="fleet", stores=(cls.a.pg_url, cls.a.ch_url))
        cls.addClassCleanup(cls.b.close)
        cls.col = cls.a.create_token("collector")
        cls.eng = cls.a.create_token("user", role="engineer", name="eng")
        cls.viewer = cls.a.create_token("user", role="viewer", name="viewer")

    def test_a_setting_written_through_one_is_served_by_the_other(self):
        status, doc = self.a.put_json("/api/apm/config", self.eng,
                                      {"enabled": True, "sample_rate_hz": 77})
        self.assertEqual(status, 200, doc)
        status, served = self.b.get_json("/api/apm/config", self.col)
        self.assertEqual(status, 200, served)
        self.assertEqual((served["enabled"], served["sample_rate_hz"]), (True, 77), served)
        status, audit = self.b.get_json("/api/apm/audit", self.eng)
        self.assertEqual(status, 200, audit)
        self.assertTrue(any(e.get("after", {}).get("sample_rate_hz") == 77
                            for e in audit["events"]), audit)

    def test_uploads_through_both_merge_and_read_the_same_from_either(self):
        at = (time.time_ns() // 300_000_000_000) * 300_000_000_000 - 600_000_000_000
        with Collector(backend="sqlite") as single:
            stok = single.create_token("collector")
            for i in range(8):
                fx = (self.a, self.b)[i % 2]
                pb = cpu(stacks_for(i), at + i * 1_000_000_000)
                self.assertEqual(fx.upload(self.col, pb, "merged", "cpu")[0], 200)
                self.assertEqual(single.upload(stok, pb, "merged", "cpu")[0], 200)
            # A window that ended before now: its covered_seconds does not move between reads.
            params = {"service": "merged", "profile_type": "cpu", "start": at // 10**9 - 3600,
                      "end": at // 10**9 + 300}
            answers = []
            for fx, tok in ((self.a, self.viewer), (self.b, self.viewer),
                            (single, single.admin_token)):
                status, top = fx.get_json("/api/apm/profiles/top", tok, params=params)
                self.assertEqual(status, 200, top)
                status, fg = fx.get_json("/api/apm/profiles/flamegraph", tok, params=params)
                self.assertEqual(status, 200, fg)
                answers.append((top, fg))
        self.assertEqual(answers[0], answers[1])
        self.assertEqual(answers[0], answers[2])  # fleet and SQLite give the same answer
        expected = sum(sum(v[1] for _, v in stacks_for(i)) for i in range(8))
        self.assertEqual(self.a.stored_total("merged", "cpu"), expected)

    def test_an_upload_id_is_stored_once_across_collectors(self):
        params = {"upload_id": "node-7/1-1"}
        status, first = self.a.upload(self.col, wall(500), "once", "wall", params=params)
        self.assertEqual((status, first["duplicate"]), (200, False), first)
        status, again = self.b.upload(self.col, wall(500), "once", "wall", params=params)
        self.assertEqual((status, again["duplicate"]), (200, True), again)
        self.assertEqual(self.a.stored_total("once", "wall"), 500)

    def test_racing_copies_through_both_collectors_merge_once(self):
        results = []

        def send(fx):
            results.append(fx.upload(self.col, wall(13), "race", "wall",
                                     params={"upload_id": "race-across-1"}))

        threads = [threading.Thread(target=send, args=((self.a, self.b)[i % 2],))
                   for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual([s for s, _ in results], [200] * 8, results)
        self.assertEqual(sorted(d["duplicate"] for _, d in results), [False] + [True] * 7)
        self.assertEqual(self.b.stored_total("race", "wall"), 13)

    def test_a_token_made_through_one_collector_authenticates_on_the_other(self):
        tok = self.b.create_token("collector", name="made-on-b")
        self.assertEqual(self.a.get_json("/api/apm/config", tok)[0], 200)


class Migrations(unittest.TestCase):
    def setUp(self):
        skip_without_servers()
        if fleet_servers.cluster_shape():
            self.skipTest("one server's migrations: on a cluster, fresh_databases() migrates"
                          " (test_fleet_cluster.py checks migrate --cluster)")
        self.pg, self.ch = fleet_servers.fresh_databases()
        self.c = Collector(backend="sqlite", start=False)  # for cli() and the binary
        self.addCleanup(self.c.close)

    def migrate(self, *stores):
        args = ["migrate"]
        if "pg" in stores:
            args += ["--control-store", self.pg]
        if "ch" in stores:
            args += ["--profile-store", self.ch]
        r = self.c.cli(*args, check=False)
        return r

    def test_serve_refuses_an_unmigrated_store_and_names_migrate(self):
        with self.assertRaises(RuntimeError) as e:
            self.c.cli("serve", "--control-store", self.pg, "--profile-store", self.ch,
                       "--data", self.c.data, "--listen", "127.0.0.1:0")
        self.assertIn("migrate", str(e.exception))

    def test_migrate_applies_each_version_once(self):
        import subprocess
        first = subprocess.run([self.c.binary, "migrate", "--control-store", self.pg,
                                "--profile-store", self.ch], capture_output=True, text=True)
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertIn("PostgreSQL): schema version 0 -> 3", first.stderr)  # 3: upload_line_tries
        self.assertIn("ClickHouse): schema version 0 -> 7", first.stderr)  # 7: series ids
        again = subprocess.run([self.c.binary, "migrate", "--control-store", self.pg,
                                "--profile-store", self.ch], capture_output=True, text=True)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn("schema version 7 -> 7", again.stderr)

    def test_a_password_in_the_clickhouse_url_is_refused(self):
        import subprocess
        url = self.ch.replace("http://", "http://default:secret@")
        r = subprocess.run([self.c.binary, "migrate", "--profile-store", url,
                            "--control-store", self.pg], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("password in the URL is refused", r.stderr)

    def test_clickhouse_without_postgresql_is_refused(self):
        import subprocess
        r = subprocess.run([self.c.binary, "serve", "--profile-store", self.ch, "--data",
                            self.c.data],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("needs --control-store", r.stderr)

    def test_config_file_names_the_stores(self):
        import os
        import subprocess
        path = os.path.join(self.c.tmp, "fleet.conf")
        with open(path, "w") as f:
            f.write("# fleet\ncontrol_store = %s\nprofile_store = %s\n" % (self.pg, self.ch))
        r = subprocess.run([self.c.binary, "migrate", "--config", path], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ClickHouse): schema version 0 -> 7", r.stderr)


class FleetTiers(sqlite_tiers.Tiers):
    """The SQLite tier cases on ClickHouse, whose hour and day tiers are built after ingest
    (`tiers build` here, the collectors' builder below), and whose retention drops whole
    days. Every window is checked before the tiers are built, after, and after late uploads
    into built periods (which make them incomplete until built again)."""

    def setUp(self):
        skip_without_servers()
        self.c = Collector(backend="fleet", serve_args=["--tier-build-interval-ms", "0"])
        self.addCleanup(self.c.close)
        self.tok = self.c.create_token("collector")
        self.viewer = self.c.create_token("user", role="viewer")
        self.sent = []

    def tier_sum(self, table, lo, hi):
        return int(self.c.clickhouse(
            "SELECT sum(value) FROM {db}.%s WHERE stack_hash != toFixedString('', 16)"
            " AND bucket >= %d"
            " AND bucket < %d" % (table, lo, hi)))

    def build(self):
        out = self.c.cli("tiers", "build", *self.c.server_args(), "--delay-s", "0")
        return int(out.split(":")[1])

    def test_ingest_writes_only_five_minute_rows(self):
        start = (int(time.time()) // DAY - 5) * DAY
        self.load_days(start, 1)
        self.assertEqual(self.tier_sum("rollups", 0, 2**32 - 1), sum(v for _, v in self.sent))
        for table in ("rollups_hour", "rollups_day"):
            self.assertEqual(int(self.c.clickhouse("SELECT count() FROM {db}.%s" % table)), 0)
        views = self.c.clickhouse("SELECT name FROM system.tables WHERE database = '{db}'"
                                  " AND name LIKE '%_mv'").split()
        self.assertEqual(sorted(views), ["span_names_mv", "span_roots_mv", "span_traces_mv",
                                         "uploads_mv"])

    def test_backdated_uploads_into_folded_hours_and_days_are_counted(self):
        start = (int(time.time()) // DAY - 5) * DAY
        self.load_days(start, 3)
        self.check_windows(self.windows(start))  # nothing built: five-minute rows
        self.assertEqual(self.build(), 3)
        self.check_tier_sums(start)
        self.check_windows(self.windows(start))
        self.assertEqual(self.build(), 0)  # idempotent: nothing left to build
        self.send_late(start)
        self.check_windows(self.windows(start))  # built periods now incomplete
        self.assertEqual(self.build(), 2)  # the late days' tiers built again, not added to
        self.check_windows(self.windows(start))
        self.check_tier_sums(start)

    def test_database_without_tiers_is_backfilled_on_open(self):
        self.skipTest("SQLite only: the ClickHouse tiers exist from the first migration")

    def test_retention_cuts_tiers_where_it_cuts_five_minute_rows(self):
        cutoff = int(time.time()) - 30 * DAY
        day = cutoff - cutoff % DAY  # days before this one are dropped whole
        for at, v in ((day - DAY + 3600, 1), (day - 600, 2), (day + 600, 4),
                      (cutoff + 2 * 3600, 8), (cutoff + DAY, 16), (cutoff + 2 * DAY, 32)):
            self.send(at, v)
        self.c.cli("tiers", "build", *self.c.server_args(), "--delay-s", "0", "--days", "32")
        self.assertEqual(self.tier_sum("rollups_day", 0, day), 3)  # built, then cut
        self.c.restart(["--retention-days", "30"])  # the job runs at start
        deadline = time.time() + 30

        def dropped():  # the job drops the tiers' days after the five-minute rows' days
            return (self.c.stored_total("t") == 60 and self.tier_sum("rollups_day", 0, day) == 0
                    and self.tier_sum("rollups_hour", 0, day) == 0)
        while not dropped() and time.time() < deadline:
            time.sleep(0.2)
        self.assertEqual(self.c.stored_total("t"), 60)
        self.sent = [(at, v) for at, v in self.sent if at >= day]
        self.check_windows(((day - DAY, cutoff + 3 * DAY), (day, day + DAY)))
        self.assertEqual(self.tier_sum("rollups_day", 0, day), 0)
        self.assertEqual(self.tier_sum("rollups_hour", 0, day), 0)


class TierBuilds(unittest.TestCase):
    """The collectors' tier builder: reads racing builds answer the same as before any build,
    and a build killed (kill -9 of its collector) between filling its staging partition and
    replacing the tier's is redone by another collector, nothing doubled."""

    def setUp(self):
        skip_without_servers()
        self.a = Collector(backend="fleet", serve_args=["--tier-build-interval-ms", "0"])
        self.addCleanup(self.a.close)
        self.others = []
        self.addCleanup(self.close_others)
        self.tok = self.a.create_token("collector")
        self.viewer = self.a.create_token("user", role="viewer")

    def close_others(self):
        for c in self.others:
            c.close()

    def builder(self, *extra):
        c = Collector(backend="fleet", stores=(self.a.pg_url, self.a.ch_url),
                      serve_args=["--tier-build-interval-ms", "100", "--tier-build-delay-s", "0"]
                      + list(extra))
        self.others.append(c)
        return c

    def load(self, days, first):
        """Uploads into 3 hours of each of `days` days from `first` days ago, from two nodes
        and two deployments; their total."""
        today = int(time.time()) // DAY * DAY
        total = 0
        for d in range(days):
            for h, (node, deploy) in enumerate((("n1", "v1"), ("n2", "v1"), ("n1", "v2"))):
                at = today - (first - d) * DAY + (3 + 5 * h) * 3600 + 17 * 60
                stacks = [(["main", "work", "f%d" % (d % 3)], [1, 100 + d]),
                          (["main", "gc"], [1, 7 + h])]
                status, body = self.a.upload(self.tok, cpu(stacks, at * 10**9), "svc", "cpu",
                                             deployment=deploy, params={"node": node})
                self.assertEqual(status, 200, body)
                total += 100 + d + 7 + h
        return total

    def requests(self, windows):
        return [(path, dict({"service": "svc", "profile_type": "cpu", "start": lo, "end": hi,
                             "limit": 100}, **extra))
                for lo, hi in windows
                for path in ("/api/apm/profiles/top", "/api/apm/profiles/flamegraph")
                for extra in ({}, {"node": "n1"}, {"deployment": "v2"})]

    def read(self, c, path, params):
        status, doc = c.get_json(path, self.viewer, params=params)
        self.assertEqual(status, 200, doc)
        doc.pop("covered_seconds", None)
        return doc

    def reads(self, c, windows):
        return [self.read(c, path, params) for path, params in self.requests(windows)]

    def tier_sum(self, table, marks=False):
        return int(self.a.clickhouse("SELECT sum(value) FROM {db}.%s WHERE stack_hash %s"
                                     " toFixedString('', 16)" % (table, "=" if marks else "!=")))

    def built_days(self):
        return int(self.a.clickhouse("SELECT uniqExact(bucket) FROM {db}.rollups_day"))

    def test_reads_racing_builds_answer_as_before_any_build(self):
        total = self.load(6, 8)
        today = int(time.time()) // DAY * DAY
        windows = ((today - 9 * DAY, today), (today - 8 * DAY + 3600, today - 3 * DAY - 1800),
                   (today - 7 * DAY, today - 6 * DAY), (today - 5 * DAY + 4 * 3600 + 300,
                                                        today - 5 * DAY + 9 * 3600))
        before = self.reads(self.a, windows)
        self.assertEqual(before[0]["total"], total)  # the five-minute rows hold everything
        seen, stop, failures = set(), threading.Event(), []

        def read_loop():
            while not stop.is_set():
                for (path, params), want in zip(self.requests(windows), before):
                    n = self.built_days()
                    seen.add(n)
                    got = self.read(self.a, path, params)
                    if got != want:
                        failures.append((n, path, params, got))

        readers = [threading.Thread(target=read_loop) for _ in range(2)]
        for t in readers:
            t.start()
        try:
            self.builder("--tier-build-pause-ms", "1200")  # 6 days, one at a time
            deadline = time.time() + 30
            while self.built_days() < 6 and time.time() < deadline:
                time.sleep(0.1)
            time.sleep(0.5)
        finally:
            stop.set()
            for t in readers:
                t.join()
        self.assertEqual(failures, [])
        self.assertEqual(self.built_days(), 6)
        self.assertTrue(len(seen - {0, 6}) >= 2, seen)  # reads ran while days were built
        self.assertEqual(self.reads(self.a, windows), before)
        self.assertEqual(self.tier_sum("rollups_day"), total)
        self.assertEqual(self.tier_sum("rollups_hour"), total)

    def test_a_build_killed_mid_way_is_redone_by_another_with_nothing_doubled(self):
        total = self.load(1, 1)  # yesterday: closed, and recent for every pass
        today = int(time.time()) // DAY * DAY
        windows = ((today - 2 * DAY, today), (today - DAY + 3600, today - 1800))
        before = self.reads(self.a, windows)
        killed = self.builder("--tier-build-pause-ms", "600000")
        deadline = time.time() + 20
        while (int(self.a.clickhouse("SELECT count() FROM {db}.rollups_hour_staging")) == 0
               and time.time() < deadline):
            time.sleep(0.05)
        staged = int(self.a.clickhouse("SELECT count() FROM {db}.rollups_hour_staging"))
        self.assertGreater(staged, 0)  # the build is between its INSERT and its REPLACE
        self.builder()  # a second collector: the day is locked, it waits its turn
        time.sleep(1.5)
        self.assertEqual(int(self.a.clickhouse("SELECT count() FROM {db}.rollups_hour")), 0)
        killed.kill()
        deadline = time.time() + 30
        while self.built_days() < 1 and time.time() < deadline:
            time.sleep(0.1)
        self.assertEqual(self.built_days(), 1)
        self.assertEqual(self.tier_sum("rollups_hour"), total)  # not doubled by the leftover
        self.assertEqual(self.tier_sum("rollups_day"), total)
        self.assertEqual(self.tier_sum("rollups_day", marks=True), 3)  # the three uploads
        self.assertEqual(int(self.a.clickhouse(
            "SELECT count() FROM {db}.rollups_hour_staging")), 0)
        self.assertEqual(self.reads(self.a, windows), before)


class FleetKillLoop(sqlite_hardening.KillLoop):
    """kill -9 of a collector during concurrent ingest, on the fleet stores: every
    acknowledged upload is in ClickHouse after the restart (fewer rounds than on SQLite)."""

    ROUNDS = 6
    KILL_AFTER_S = (0.5, 1.5)  # a ClickHouse INSERT takes tens of ms: longer rounds

    def setUp(self):
        skip_without_servers()
        self.saved = os.environ.get("ROOTTRACE_TEST_BACKEND")
        os.environ["ROOTTRACE_TEST_BACKEND"] = "fleet"

    def tearDown(self):
        if self.saved is None:
            os.environ.pop("ROOTTRACE_TEST_BACKEND", None)
        else:
            os.environ["ROOTTRACE_TEST_BACKEND"] = self.saved


def heap(value, at):
    return pprof_py.build([(["main", "alloc_buf"], [1, value])],
                          sample_types=[("inuse_objects", "count"), ("inuse_space", "bytes")],
                          time_nanos=at)


class MigrateFrom(unittest.TestCase):
    maxDiff = None
    """migrate --from DIR: a day of an embedded store, copied into empty servers, answers the
    same reads and keeps its tokens, settings, audit, deployments and upload ids."""

    def reads(self, c, tok, start, end, deploy):
        window = {"service": "api", "start": start, "end": end}
        answers = []
        for path, params in (("/api/apm/profiles/top", dict(window, profile_type="cpu")),
                             ("/api/apm/profiles/top", dict(window, profile_type="heap")),
                             ("/api/apm/profiles/cost", dict(window, profile_type="cpu")),
                             ("/api/apm/profiles/diff", {"service": "api", "profile_type": "cpu",
                                                         "anchor": deploy, "window": "6h"}),
                             ("/api/apm/deployments", {"service": "api", "start": start,
                                                       "end": end}),
                             ("/api/apm/config", {"service": "api"}),
                             ("/api/apm/audit", {})):
            status, doc = c.get_json(path, tok, params=params)
            self.assertEqual(status, 200, (path, doc))
            answers.append(doc)
        return answers

    def test_a_day_of_an_embedded_store_reads_the_same_from_the_servers(self):
        skip_without_servers()
        now = int(time.time()) // 300 * 300
        start, end = now - DAY - 3600, now - 300  # ended: covered_seconds stays put
        deploy = now - DAY // 2 // 300 * 300
        with Collector(backend="sqlite") as single:
            col = single.create_token("collector")
            eng = single.create_token("user", role="engineer", name="eng")
            self.assertEqual(single.put_json("/api/apm/config", eng, {"sample_rate_hz": 49},
                                             params={"service": "api"})[0], 200)
            self.assertEqual(single.post_json("/api/apm/deployments", eng,
                                              {"service": "api", "version": "v2",
                                               "time": deploy})[0], 201)
            for i in range(48):  # every half hour of the last day, two uploads in some
                at = (now - DAY + i * 1800 + 7) * 10**9
                self.assertEqual(single.upload(col, cpu(stacks_for(i), at), "api", "cpu",
                                               params={"upload_id": "n1/%d" % i})[0], 200)
                self.assertEqual(single.upload(col, heap(1000 + i, at), "api", "heap")[0], 200)
                if i % 5 == 0:
                    self.assertEqual(single.upload(col, cpu(stacks_for(i + 1), at + 10**9),
                                                   "api", "cpu")[0], 200)
            before = self.reads(single, eng, start, end, deploy)
            single.stop()
            pg, ch = fleet_servers.fresh_databases()
            out = subprocess.run([single.binary, "migrate", "--control-store", pg,
                                  "--profile-store", ch, "--from", single.data],
                                 capture_output=True, text=True, timeout=120)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("series production/api/cpu//: values", out.stdout)
            self.assertIn("table tokens: rows 3 -> 3: equal", out.stdout)
            self.assertTrue(out.stdout.rstrip().endswith("every total equal"), out.stdout)
            self.assertNotIn("DIFFERENT", out.stdout)
            again = subprocess.run([single.binary, "migrate", "--control-store", pg,
                                    "--profile-store", ch, "--from", single.data],
                                   capture_output=True, text=True, timeout=120)
            self.assertEqual(again.returncode, 1)
            self.assertIn("empty", again.stderr)
        with Collector(backend="fleet", stores=(pg, ch)) as fleet:
            self.assertEqual(self.reads(fleet, eng, start, end, deploy), before)
            # the same upload id is still known: the agent's retry is not stored twice
            status, doc = fleet.upload(col, cpu(stacks_for(3), (now - DAY + 3 * 1800 + 7)
                                                * 10**9), "api", "cpu",
                                       params={"upload_id": "n1/3"})
            self.assertEqual((status, doc["duplicate"]), (200, True), doc)
            # new rows get new ids after the copied ones
            self.assertEqual(fleet.post_json("/api/apm/deployments", eng,
                                             {"service": "api", "version": "v3"})[0], 201)
            self.assertTrue(fleet.create_token("collector"))


class ConnectionReuse(unittest.TestCase):
    def test_clickhouse_requests_reuse_kept_alive_connections(self):
        """Every request to ClickHouse used to open its own TCP connection; the client's
        requests now share libcurl's connection cache (ch_http.c), counted in /metrics."""
        skip_without_servers()
        with Collector(backend="fleet") as c:
            tok = c.create_token("collector")
            view = c.create_token("user", role="viewer")
            self.assertEqual(c.upload(tok, cpu(stacks_for(0), time.time_ns()), "api", "cpu")[0],
                             200)
            key = '%s{backend="clickhouse"}'
            before = c.metrics()
            for _ in range(20):
                status, _, _ = c.request("GET", "/api/apm/profiles/flamegraph", view,
                                         params={"service": "api", "profile_type": "cpu"})
                self.assertEqual(status, 200)
            after = c.metrics()
            requests = (after[key % "roottrace_backend_requests_total"] -
                        before[key % "roottrace_backend_requests_total"])
            opened = (after[key % "roottrace_backend_connections_total"] -
                      before[key % "roottrace_backend_connections_total"])
            self.assertGreaterEqual(requests, 20)
            self.assertLessEqual(opened, 2, "%d connections for %d requests" % (opened, requests))


class ServersDown(unittest.TestCase):
    """Last in the file: it stops and restarts the shared servers."""

    def test_postgresql_down_config_from_cache_writes_503_then_recovers(self):
        skip_without_servers()
        with Collector(backend="fleet") as c:
            tok = c.create_token("collector")
            eng = c.create_token("user", role="engineer", name="eng")
            self.assertEqual(c.put_json("/api/apm/config", eng, {"enabled": True})[0], 200)
            status, before = c.get_json("/api/apm/config", tok)
            self.assertEqual(status, 200, before)
            pg = fleet_servers.servers().pg
            pg.stop()
            try:
                status, health = c.get_json("/healthz")
                self.assertEqual((status, health["status"], health["stores"]),
                                 (200, "degraded", {"control": "unreachable",
                                                    "profiles": "ok"}))
                # Config reads: the answer of under a minute ago (cp_cache.h), unchanged.
                status, doc = c.get_json("/api/apm/config", tok)
                self.assertEqual((status, doc), (200, before))
                # Writes are refused, nothing acknowledged: a setting, an upload whose id
                # cannot be claimed.
                status, doc = c.put_json("/api/apm/config", eng, {"sample_rate_hz": 50})
                self.assertEqual(status, 503, doc)
                status, doc = c.upload(tok, wall(5), "pgdown", "wall",
                                       params={"upload_id": "pgdown-1"})
                self.assertEqual(status, 503, doc)
                # The cause is named: in the answer, /healthz and /metrics.
                self.assertIn("the database server is unreachable (postgresql: ",
                              doc["detail"])
                fault = c.get_json("/healthz")[1]["faults"]
                self.assertEqual((list(fault), fault["control"]["backend"],
                                  fault["control"]["cause"]),
                                 (["control"], "postgresql", "unreachable"))
                unreachable = c.metrics()[
                    'roottrace_store_failures_total{backend="postgresql",cause="unreachable"}']
                self.assertGreaterEqual(unreachable, 1)
            finally:
                pg.start_again()
            deadline = time.time() + 30  # each pooled connection retries after its backoff
            status = None
            while status != 200 and time.time() < deadline:
                status = c.put_json("/api/apm/config", eng, {"sample_rate_hz": 50})[0]
                time.sleep(0.2)
            self.assertEqual(status, 200)
            health = c.get_json("/healthz")[1]
            self.assertEqual((health["status"], health["faults"]), ("ok", {}))
            self.assertEqual(c.get_json("/api/apm/config", tok)[1]["sample_rate_hz"], 50)
            status, doc = c.upload(tok, wall(5), "pgdown", "wall",
                                   params={"upload_id": "pgdown-1"})
            self.assertEqual((status, doc["duplicate"]), (200, False), doc)
            self.assertEqual(c.stored_total("pgdown", "wall"), 5)

    def test_ingest_is_503_while_down_and_nothing_is_acknowledged(self):
        skip_without_servers()
        with Collector(backend="fleet") as c:
            tok = c.create_token("collector")
            self.assertEqual(c.upload(tok, wall(100), "down", "wall")[0], 200)
            before = c.metrics()
            batch = 'roottrace_ingest_batch_uploads_%s{backend="clickhouse"}'
            self.assertEqual((before[batch % "sum"], before[batch % "count"]), (1, 1))
            ch = fleet_servers.servers().ch
            ch.stop()
            try:
                status, doc = c.upload(tok, wall(40), "down", "wall",
                                       params={"upload_id": "retried-1"})
                self.assertEqual(status, 503, doc)
                self.assertIn("the database server is unreachable (clickhouse: ",
                              doc["detail"])
                health = c.get_json("/healthz")[1]
                self.assertEqual((health["stores"], health["backends"]),
                                 ({"control": "ok", "profiles": "unreachable"},
                                  {"control": "postgresql", "profiles": "clickhouse"}))
                self.assertEqual((health["faults"]["profiles"]["backend"],
                                  health["faults"]["profiles"]["cause"]),
                                 ("clickhouse", "unreachable"))
                after = c.metrics()
            finally:
                ch.start_again()
            errors = 'roottrace_backend_errors_total{backend="%s"}'
            failures = 'roottrace_ingest_commit_failures_total{backend="clickhouse"}'
            self.assertGreater(after[errors % "clickhouse"], before[errors % "clickhouse"])
            self.assertEqual(after[errors % "postgresql"], before[errors % "postgresql"])
            self.assertEqual(after[failures], before[failures] + 1)
            unreachable = 'roottrace_store_failures_total{backend="clickhouse",cause="unreachable"}'
            self.assertGreater(after[unreachable], before[unreachable])
            self.assertEqual(
                after['roottrace_store_fault{backend="clickhouse",cause="unreachable"}'], 1)
            status, doc = c.upload(tok, wall(40), "down", "wall",
                                   params={"upload_id": "retried-1"})
            self.assertEqual((status, doc["duplicate"]), (200, False), doc)
            self.assertEqual(c.stored_total("down", "wall"), 140)
            self.assertEqual(c.get_json("/healthz")[1]["faults"], {})


if __name__ == "__main__":
    harness.main()
