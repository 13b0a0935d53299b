# SPDX-License-Identifier: Apache-2.0
# Why a store refuses, on the embedded store: its data on a 4 MiB tmpfs filled up (the tests
# run as root). The upload is answered 503 store_unavailable naming the full disk, /healthz is
# degraded with the cause, /metrics counts it, nothing acknowledged is lost, and ingest resumes
# without a restart once space returns. (Fleet servers stopped: test_collector_fleet.py,
# ServersDown.)
import os
import subprocess
import tempfile
import time
import unittest

import harness
import pprof_py
from collector_fixture import Collector

FAILURES = 'roottrace_store_failures_total{backend="sqlite",cause="%s"}'
FAULT = 'roottrace_store_fault{backend="sqlite",cause="%s"}'


def distinct_stacks(i, n=400):
    """Upload i: n stacks of function names no other upload has, so that each upload grows the
    database (its functions and stacks dictionaries) and the disk fills within a few."""
    return [(["main", "upload%d_handler%d_%s" % (i, k, "x" * 40), "leaf%d_%d" % (i, k)], 10 + k)
            for k in range(n)]


def profile(i):
    return pprof_py.build(distinct_stacks(i), sample_types=[("cpu", "nanoseconds")],
                          time_nanos=time.time_ns())


def total(i):
    return sum(v for _, v in distinct_stacks(i))


def fill(path, leave):
    """Writes path until the file system is full, then gives back `leave` bytes: the next
    uploads fit, and one runs out of space in the middle of its transaction."""
    chunk = b"\0" * 65536
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                f.write(chunk)
        except OSError:
            pass
        f.truncate(max(0, f.tell() - leave))


class DiskFull(unittest.TestCase):
    def setUp(self):
        self.mnt = tempfile.mkdtemp(prefix="rt-tmpfs-")
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", self.mnt], check=True)

    def tearDown(self):
        subprocess.run(["umount", "-l", self.mnt], check=False)
        os.rmdir(self.mnt)

    def upload_until_refused(self, c, tok, first):
        """Uploads new profiles until one is refused: (acknowledged total, next i, answer)."""
        acked = 0
        for i in range(first, first + 100):
            status, doc = c.upload(tok, profile(i), "disk", "cpu",
                                   params={"upload_id": "up-%d" % i})
            if status != 200:
                return acked, i, (status, doc)
            acked += total(i)
        self.fail("100 uploads of distinct stacks fit on a full 4 MiB file system")

    def test_disk_full_is_named_then_ingest_resumes_without_restart(self):
        with Collector(backend="sqlite", data=os.path.join(self.mnt, "data")) as c:
            tok = c.create_token("collector")
            status, doc = c.upload(tok, profile(0), "disk", "cpu", params={"upload_id": "up-0"})
            self.assertEqual(status, 200, doc)
            acked = total(0)
            self.assertEqual(c.get_json("/healthz")[1]["status"], "ok")
            filler = os.path.join(self.mnt, "filler")
            fill(filler, leave=512 * 1024)
            more, refused, (status, doc) = self.upload_until_refused(c, tok, 1)
            self.assertGreater(refused, 1, "no upload fitted in the space left")
            acked += more
            self.assertEqual((status, doc["error"]), (503, "store_unavailable"), doc)
            self.assertIn("disk full (sqlite: database or disk is full)", doc["detail"])

            status, health = c.get_json("/healthz")
            self.assertEqual((status, health["status"], health["stores"]),
                             (200, "degraded", {"control": "disk_full", "profiles": "disk_full"}))
            fault = health["faults"]["profiles"]
            self.assertEqual((fault["backend"], fault["cause"]), ("sqlite", "disk_full"))
            self.assertIn("full", fault["detail"])
            self.assertLessEqual(abs(fault["since"] - time.time()), 60)
            m = c.metrics()
            self.assertGreaterEqual(m[FAILURES % "disk_full"], 1)
            self.assertEqual((m[FAULT % "disk_full"], m[FAULT % "unreachable"]), (1, 0))

            # Space returns: the same collector takes the refused upload, and every
            # acknowledged one is there, once.
            os.unlink(filler)
            status, doc = c.upload(tok, profile(refused), "disk", "cpu",
                                   params={"upload_id": "up-%d" % refused})
            self.assertEqual((status, doc.get("duplicate")), (200, False), doc)
            acked += total(refused)
            status, health = c.get_json("/healthz")
            self.assertEqual((health["status"], health["stores"], health["faults"]),
                             ("ok", {"control": "ok", "profiles": "ok"}, {}))
            self.assertEqual(c.metrics()[FAULT % "disk_full"], 0)
            self.assertEqual(c.stored_total("disk", "cpu"), acked)


if __name__ == "__main__":
    harness.main()
