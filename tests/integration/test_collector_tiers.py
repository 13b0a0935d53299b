# SPDX-License-Identifier: Apache-2.0
# Hour and day rollup tiers: folded periods stay exact when backdated uploads land in them,
# a database without tiers is back-filled on open, and retention cuts tiers where it cuts
# the five-minute rows. Every total is checked against hand sums of what was uploaded.
import json
import sqlite3
import time
import unittest

import harness
import pprof_py
from collector_fixture import Collector

SEC = 10**9
HOUR = 3600
DAY = 86400


def cpu(stacks, at):
    return pprof_py.build_gz([(k.split(";"), v) for k, v in stacks.items()],
                             sample_types=(("cpu", "nanoseconds"),),
                             period_type=("cpu", "nanoseconds"), period=10000000,
                             time_nanos=at * SEC, duration_nanos=60 * SEC)


def bucket(t):
    return t - t % 300


def in_window(at, lo, hi):
    """The collector's rule: a bucket belongs to [lo, hi) when it overlaps it."""
    return bucket(lo) <= bucket(at) < -(-hi // 300) * 300


class Tiers(unittest.TestCase):
    def setUp(self):
        self.c = Collector()
        self.addCleanup(self.c.close)
        self.tok = self.c.create_token("collector")
        self.viewer = self.c.create_token("user", role="viewer")
        self.sent = []  # (at, value) of every upload of service "t"

    def send(self, at, value, stack="main;work"):
        status, body = self.c.upload(self.tok, cpu({stack: value}, at), "t", "cpu")
        self.assertEqual(status, 200, body)
        self.sent.append((at, value))

    def total(self, lo, hi):
        status, _, body = self.c.request("GET", "/api/apm/profiles/top", self.viewer,
                                         params={"service": "t", "profile_type": "cpu",
                                                 "start": str(lo), "end": str(hi),
                                                 "limit": "1000"})
        self.assertEqual(status, 200, body[:300])
        return json.loads(body)["total"]

    def check_windows(self, windows):
        for lo, hi in windows:
            want = sum(v for at, v in self.sent if in_window(at, lo, hi))
            self.assertEqual(self.total(lo, hi), want, (lo, hi))

    def marks(self):
        with self.c.db() as db:
            return db.execute("SELECT hour_done, day_done FROM tier_marks m JOIN series s"
                              " ON s.id = m.series_id WHERE s.service = 't'").fetchone()

    def tier_sum(self, table, lo, hi):
        with self.c.db() as db:
            return db.execute("SELECT coalesce(sum(value), 0) FROM %s WHERE bucket >= ?"
                              " AND bucket < ?" % table, (lo, hi)).fetchone()[0]

    def load_days(self, start, days):
        for i in range(days * 24):  # one upload every hour, 7 s past the hour's 10th minute
            self.send(start + i * HOUR + 607, 1000 + i, "main;a" if i % 2 else "main;b")

    def windows(self, start):
        return ((start, start + 3 * DAY), (start + 300, start + 3 * DAY - 300),
                (start + 3599, start + 2 * DAY + 1), (start + DAY, start + 2 * DAY),
                (start + DAY - 1, start + 2 * DAY + 1), (start + 5000, start + 5 * HOUR + 17),
                (start + DAY + 600, start + DAY + 601), (start - DAY, start + 4 * DAY))

    def test_backdated_uploads_into_folded_hours_and_days_are_counted(self):
        start = (int(time.time()) // DAY - 5) * DAY
        self.load_days(start, 3)
        hour_done, day_done = self.marks()
        self.assertGreaterEqual(day_done, start + 2 * DAY)  # the tiers are in use
        self.send_late(start)
        self.assertEqual(self.marks()[1], day_done)
        self.check_windows(self.windows(start))
        self.check_tier_sums(start)

    def send_late(self, start):
        """Late arrivals into folded periods: on and off hour and day edges, new stacks too."""
        for at, v in ((start + DAY + 5, 7), (start + DAY + 1800, 11), (start + 3599, 13),
                      (start + 2 * DAY - 1, 17), (start + 10 * 60 + 7, 19)):
            self.send(at, v, "main;late")

    def check_tier_sums(self, start):
        """The tier rows themselves equal the five-minute rows of their periods."""
        for lo, hi in ((start, start + DAY), (start + DAY, start + 2 * DAY)):
            self.assertEqual(self.tier_sum("rollups_day", lo, hi),
                             self.tier_sum("rollups", lo, hi))
            self.assertEqual(self.tier_sum("rollups_hour", lo, hi),
                             self.tier_sum("rollups", lo, hi))

    def test_database_without_tiers_is_backfilled_on_open(self):
        start = (int(time.time()) // DAY - 5) * DAY
        self.load_days(start, 3)
        self.c.stop()
        with sqlite3.connect(self.c.data + "/roottrace.db") as db:
            db.executescript("DROP TABLE rollups_hour; DROP TABLE rollups_day;"
                             " DROP TABLE tier_marks;")
        self.c.start()
        self.assertGreaterEqual(self.marks()[1], start + 2 * DAY)
        self.check_windows(self.windows(start))

    def test_retention_cuts_tiers_where_it_cuts_five_minute_rows(self):
        cutoff = int(time.time()) - 30 * DAY  # about where the job will cut, give or take
        for at, v in ((cutoff - 3 * HOUR, 1), (cutoff - 20 * 60, 2), (cutoff + 20 * 60, 4),
                      (cutoff + 2 * HOUR, 8), (cutoff + DAY, 16), (cutoff + 2 * DAY, 32)):
            self.send(at, v)
        self.assertGreater(self.marks()[1], cutoff)  # the cut day was folded
        self.c.restart(["--retention-days", "30"])  # the job runs at start
        deadline = time.time() + 10
        while self.c.stored_total("t") != 60 and time.time() < deadline:
            time.sleep(0.1)
        self.assertEqual(self.c.stored_total("t"), 60)
        self.sent = [(at, v) for at, v in self.sent if at > cutoff]
        day = cutoff - cutoff % DAY
        self.check_windows(((cutoff - DAY, cutoff + 3 * DAY), (day, day + DAY),
                            (day - DAY, day + 2 * DAY), (cutoff - 3 * HOUR, cutoff + 3 * HOUR)))
        self.assertEqual(self.tier_sum("rollups_day", 0, day + DAY),
                         sum(v for at, v in self.sent if at - at % DAY == day))


if __name__ == "__main__":
    harness.main()
