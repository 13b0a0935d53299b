# SPDX-License-Identifier: Apache-2.0
# Why a fleet store refuses, with the real servers' real errors (fleet_servers.py; the tests run
# as root): a ClickHouse database whose data directory is a small tmpfs, filled up and then
# remounted read-only; a ClickHouse whose default profile turns readonly; a PostgreSQL whose
# tables sit in a tablespace on a small tmpfs, filled up; a PostgreSQL made read-only
# (default_transaction_read_only, what a hot standby answers).
# Each time the upload is 503 store_unavailable naming the cause, /healthz is degraded with it,
# /metrics counts it, nothing acknowledged is lost, and ingest resumes without a restart once
# the cause is gone. (Servers stopped: test_collector_fleet.py ServersDown.)
import os
import pwd
import subprocess
import time
import unittest

import fleet_servers
import harness
import pprof_py
from collector_fixture import Collector

FAILURES = 'roottrace_store_failures_total{backend="%s",cause="%s"}'
FAULT = 'roottrace_store_fault{backend="%s",cause="%s"}'
LONG_ID = "x" * 240  # upload ids this long fill a ledger page within a few dozen uploads


def skip_without_servers():
    why = fleet_servers.available()
    if why:  # make check installs them: a missing server fails, never skips
        raise RuntimeError(why)


def profile(i):
    return pprof_py.build([(["main", "serve", "handler%d" % i], 10 + i)],
                          sample_types=[("cpu", "nanoseconds")], time_nanos=time.time_ns())


def mount_tmpfs(path, size, user):
    os.makedirs(path)
    pw = pwd.getpwnam(user)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,uid=%d,gid=%d,mode=0700"
                    % (size, pw.pw_uid, pw.pw_gid), "tmpfs", path], check=True)


def fill(path):
    """Writes path until its file system is full."""
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError:
            pass


class FleetFault:
    """The checks every fault shares, for a collector c whose backend is refusing."""
    backend = store = None

    def upload(self, c, tok, i, upload_id=None):
        return c.upload(tok, profile(i), "faults", "cpu",
                        params={"upload_id": upload_id or "up-%d" % i})

    def upload_until_refused(self, c, tok, first, prefix=""):
        """New uploads until one is refused: (acknowledged total, its i, its answer)."""
        acked = 0
        for i in range(first, first + 150):
            status, doc = self.upload(c, tok, i, "%s%d" % (prefix, i))
            if status != 200:
                return acked, i, (status, doc)
            acked += 10 + i
        self.fail("150 uploads went through a full file system")

    def assert_named(self, c, doc, cause, text, before):
        self.assertEqual(doc["error"], "store_unavailable", doc)
        self.assertIn("%s (%s: " % (text, self.backend), doc["detail"])
        status, health = c.get_json("/healthz")
        self.assertEqual((status, health["status"], health["stores"][self.store]),
                         (200, "degraded", cause), health)
        fault = health["faults"][self.store]
        self.assertEqual((fault["backend"], fault["cause"]), (self.backend, cause))
        self.assertLessEqual(abs(fault["since"] - time.time()), 60)
        m = c.metrics()
        self.assertGreater(m[FAILURES % (self.backend, cause)],
                           before[FAILURES % (self.backend, cause)])
        self.assertEqual((m[FAULT % (self.backend, cause)],
                          m[FAULT % (self.backend, "refused")]), (1, 0))
        return fault

    def assert_resumed(self, c, tok, i, upload_id, acked, cause):
        """The refused upload goes through on the same collector; everything acknowledged is
        stored once."""
        status, doc = self.upload(c, tok, i, upload_id)
        self.assertEqual((status, doc.get("duplicate")), (200, False), doc)
        health = c.get_json("/healthz")[1]
        self.assertEqual((health["status"], health["faults"]), ("ok", {}))
        self.assertEqual(c.metrics()[FAULT % (self.backend, cause)], 0)
        self.assertEqual(c.stored_total("faults", "cpu"), acked + 10 + i)


class ClickHouseDisk(FleetFault, unittest.TestCase):
    """The profile store's database directory on an 8 MiB tmpfs: 18.16 answers a failed write
    (code 75, errno 28) when it is full, a Poco file error (1000, errno 30) when read-only."""
    backend, store = "clickhouse", "profiles"

    def setUp(self):
        skip_without_servers()
        self.ch = fleet_servers.servers().ch
        self.pg_url, self.ch_url = fleet_servers.fresh_databases()
        self.db = self.ch_url.rsplit("/", 1)[1]
        # Before migrate creates the database: its tables' parts all land on the tmpfs.
        self.mnt = os.path.join(self.ch.dir, "data", "data", self.db)
        mount_tmpfs(self.mnt, "8m", "clickhouse")
        self.addCleanup(self.drop_database_and_tmpfs)  # a failed start below unmounts too
        self.c = Collector(backend="fleet", stores=(self.pg_url, self.ch_url), start=False)
        self.addCleanup(self.c.close)
        self.c.cli("init", "--data", os.path.join(self.c.tmp, "init"), "--environment",
                   self.c.environment, *self.c.server_args())
        self.c.start()
        self.tok = self.c.create_token("collector")

    def drop_database_and_tmpfs(self):
        subprocess.run(["mount", "-o", "remount,rw", self.mnt], check=False)
        try:
            # Drops the tables and forgets the database; removing its directory, the mount
            # point, fails (EBUSY) until the tmpfs is gone.
            self.ch.query("DROP DATABASE %s" % self.db)
        except OSError:
            pass
        subprocess.run(["umount", "-l", self.mnt], check=False)
        self.ch.query("DROP DATABASE IF EXISTS %s" % self.db)

    def test_disk_full_is_named_then_ingest_resumes_without_restart(self):
        c, tok = self.c, self.tok
        self.assertEqual(self.upload(c, tok, 0)[0], 200)
        before = c.metrics()
        filler = os.path.join(self.mnt, "filler")
        fill(filler)
        status, doc = self.upload(c, tok, 1)
        self.assertEqual(status, 503, doc)
        fault = self.assert_named(c, doc, "disk_full", "disk full", before)
        self.assertIn("errno: 28", fault["detail"])
        os.unlink(filler)
        self.assert_resumed(c, tok, 1, "up-1", 10, "disk_full")

    def test_read_only_file_system_is_named_then_ingest_resumes(self):
        c, tok = self.c, self.tok
        self.assertEqual(self.upload(c, tok, 0)[0], 200)
        before = c.metrics()
        subprocess.run(["mount", "-o", "remount,ro", self.mnt], check=True)
        status, doc = self.upload(c, tok, 1)
        self.assertEqual(status, 503, doc)
        fault = self.assert_named(c, doc, "read_only", "read-only file system or database",
                                  before)
        self.assertIn("read-only", fault["detail"])
        subprocess.run(["mount", "-o", "remount,rw", self.mnt], check=True)
        self.assert_resumed(c, tok, 1, "up-1", 10, "read_only")


class ClickHouseReadOnlyProfile(FleetFault, unittest.TestCase):
    """The server's default profile made readonly (users config, reloaded while it runs):
    every write is READONLY (164)."""
    backend, store = "clickhouse", "profiles"
    PROFILE = "<profiles><default></default>"
    READ_ONLY = "<profiles><default><readonly>1</readonly></default>"

    def setUp(self):
        skip_without_servers()
        self.ch = fleet_servers.servers().ch
        self.config = os.path.join(self.ch.dir, "config.xml")
        self.c = Collector(backend="fleet")
        self.addCleanup(self.c.close)

    def set_profile(self, old, new, readonly):
        """Rewrites the default profile and has the server reload it now (as the admin user,
        whose profile stays writable): never a wait on its own file watcher."""
        with open(self.config) as f:
            text = f.read()
        self.assertIn(old, text)
        with open(self.config, "w") as f:
            f.write(text.replace(old, new))
        self.ch.reload_config()
        self.assertEqual(self.ch.query("SELECT value FROM system.settings"
                                       " WHERE name = 'readonly'").strip(), readonly)

    def test_read_only_profile_is_named_then_ingest_resumes(self):
        c = self.c
        tok = c.create_token("collector")
        self.assertEqual(self.upload(c, tok, 0)[0], 200)
        before = c.metrics()
        try:
            # In the try: a failure leaves no readonly server to the tests after this one.
            self.set_profile(self.PROFILE, self.READ_ONLY, "1")
            status, doc = self.upload(c, tok, 1)
            self.assertEqual(status, 503, doc)
            fault = self.assert_named(c, doc, "read_only", "read-only file system or database",
                                      before)
            self.assertIn("Code: 164", fault["detail"])
        finally:
            with open(self.config) as f:
                if self.READ_ONLY in f.read():
                    self.set_profile(self.READ_ONLY, self.PROFILE, "0")
        self.assert_resumed(c, tok, 1, "up-1", 10, "read_only")


class PostgreSQLFaults(FleetFault, unittest.TestCase):
    backend, store = "postgresql", "control"

    def setUp(self):
        skip_without_servers()
        self.pg = fleet_servers.servers().pg
        self.c = Collector(backend="fleet", start=False)
        self.addCleanup(self.c.close)
        self.db = self.c.pg_url.rsplit("/", 1)[1]

    def test_disk_full_is_named_then_ingest_resumes_without_restart(self):
        """The database's tables and indexes moved to a tablespace on a 1 MiB tmpfs: extending
        one on the full file system is SQLSTATE 53100. (WAL stays on the data directory's
        disk: a full WAL disk stops the server, which then reads as unreachable.)"""
        mnt = os.path.join(self.pg.dir, "ts-" + self.db)
        mount_tmpfs(mnt, "1m", "postgres")
        try:
            self.pg.psql("CREATE TABLESPACE ts_%s LOCATION '%s'" % (self.db, mnt))
            for kind in ("TABLE", "INDEX"):
                self.pg.psql("ALTER %s ALL IN TABLESPACE pg_default SET TABLESPACE ts_%s"
                             % (kind, self.db), db=self.db)
            c = self.c.start()
            tok = c.create_token("collector")
            self.assertEqual(self.upload(c, tok, 0)[0], 200)
            before = c.metrics()
            filler = os.path.join(mnt, "filler")
            fill(filler)
            acked, refused, (status, doc) = self.upload_until_refused(c, tok, 1, LONG_ID)
            self.assertEqual(status, 503, doc)
            fault = self.assert_named(c, doc, "disk_full", "disk full", before)
            self.assertIn("No space left on device", fault["detail"])
            os.unlink(filler)
            self.assert_resumed(c, tok, refused, LONG_ID + str(refused), 10 + acked,
                                "disk_full")
        finally:
            self.c.close()
            self.pg.psql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % self.db)
            self.pg.psql("DROP TABLESPACE IF EXISTS ts_%s" % self.db)
            subprocess.run(["umount", "-l", mnt], check=False)

    def test_read_only_server_is_named_then_ingest_resumes(self):
        """default_transaction_read_only on the server, reloaded into every open session: a
        write is SQLSTATE 25006, as on a hot standby."""
        c = self.c.start()
        tok = c.create_token("collector")
        self.assertEqual(self.upload(c, tok, 0)[0], 200)
        before = c.metrics()
        self.pg.psql("ALTER SYSTEM SET default_transaction_read_only = on")
        try:
            self.pg.psql("SELECT pg_reload_conf()")
            # Each session reads the reloaded file before its next command: the first
            # refusal ends the run.
            acked, refused, (status, doc) = self.upload_until_refused(c, tok, 1, "ro-")
            self.assertEqual(status, 503, doc)
            fault = self.assert_named(c, doc, "read_only", "read-only file system or database",
                                      before)
            self.assertIn("read-only transaction", fault["detail"])
        finally:
            self.pg.psql("ALTER SYSTEM RESET default_transaction_read_only")
            self.pg.psql("SELECT pg_reload_conf()")
        self.assert_resumed(c, tok, refused, "ro-%d" % refused, 10 + acked, "read_only")


if __name__ == "__main__":
    harness.main()
