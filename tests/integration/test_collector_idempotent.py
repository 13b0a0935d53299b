# SPDX-License-Identifier: Apache-2.0
# Idempotent ingest on the real collector: an upload re-sent with the same upload_id (its
# answer was lost) is stored once, also across a kill -9 restart and when the copies race;
# another environment's identical id is another upload; uploads without an id add up.
import threading
import time
import unittest

import harness
import pprof_py
from collector_fixture import Collector


def wall(value):
    return pprof_py.build([(["main", "serve"], value)], sample_types=[("wall", "nanoseconds")],
                          time_nanos=time.time_ns())


class UploadId(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Collector()
        cls.addClassCleanup(cls.c.close)
        cls.tok = cls.c.create_token("collector")

    def upload(self, service, value, upload_id=None, token=None, headers=None):
        params = {"upload_id": upload_id} if upload_id is not None else None
        return self.c.upload(token or self.tok, wall(value), service, "wall", params=params,
                             headers=headers)

    def test_same_upload_id_twice_is_stored_once(self):
        status, first = self.upload("twice", 700, "node-1/123-abc-1")
        self.assertEqual((status, first["duplicate"]), (200, False), first)
        before = self.c.metrics().get("roottrace_uploads_duplicate_total", 0)
        status, again = self.upload("twice", 700, "node-1/123-abc-1")
        self.assertEqual(status, 200, again)
        self.assertTrue(again["duplicate"], again)
        self.assertTrue(again["stored"], again)
        self.assertEqual(self.c.stored_total("twice", "wall"), 700)
        uploads = sum(n for (n,) in self.c.bucket_uploads("twice"))
        self.assertEqual(uploads, 1)  # heap averages divide by this: a duplicate is not one
        self.assertEqual(self.c.metrics()["roottrace_uploads_duplicate_total"], before + 1)

    def test_header_and_query_name_the_same_id(self):
        self.upload("hdr", 5, headers={"X-RootTrace-Upload-Id": "sdk-42"})
        status, doc = self.upload("hdr", 5, "sdk-42")
        self.assertEqual((status, doc["duplicate"]), (200, True), doc)
        self.assertEqual(self.c.stored_total("hdr", "wall"), 5)

    def test_different_ids_and_no_id_all_add_up(self):
        for upload_id in ("a-1", "a-2", None, None):
            status, doc = self.upload("distinct", 10, upload_id)
            self.assertEqual((status, doc["duplicate"]), (200, False), doc)
        self.assertEqual(self.c.stored_total("distinct", "wall"), 40)

    def test_same_id_in_two_environments_is_stored_in_both(self):
        staging = self.c.create_token("collector", environment="staging")
        for tok in (self.tok, staging, self.tok, staging):
            self.assertEqual(self.upload("envs", 3, "shared-id-1", token=tok)[0], 200)
        self.assertEqual(self.c.stored_total("envs", "wall", environment="production"), 3)
        self.assertEqual(self.c.stored_total("envs", "wall", environment="staging"), 3)

    def test_concurrent_copies_merge_once(self):
        # Copies racing into the same group commit (or neighbouring ones): exactly one merges.
        results = []

        def send():
            results.append(self.upload("race", 11, "race-id-1"))

        threads = [threading.Thread(target=send) for _ in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual([s for s, _ in results], [200] * 12, results)
        self.assertEqual(sorted(d["duplicate"] for _, d in results), [False] + [True] * 11)
        self.assertEqual(self.c.stored_total("race", "wall"), 11)

    def test_bad_upload_id_is_refused_and_nothing_stored(self):
        for bad in ("", "x" * 256, "a\tb"):
            status, doc = self.upload("badid", 9, bad)
            self.assertEqual(status, 400, (bad, doc))
            self.assertIn("upload_id", doc["detail"])
        self.assertEqual(self.c.stored_total("badid", "wall"), 0)
        self.assertEqual(self.upload("badid", 9, "x" * 255)[0], 200)


class UploadIdDurability(unittest.TestCase):
    def test_id_remembered_across_kill9(self):
        with Collector() as c:
            tok = c.create_token("collector")
            params = {"upload_id": "node-1/99-1"}
            status, doc = c.upload(tok, wall(1234), "durable", "wall", params=params)
            self.assertEqual((status, doc["duplicate"]), (200, False), doc)
            c.kill()  # the answer may as well have been lost: the agent retries
            c.start()
            status, doc = c.upload(tok, wall(1234), "durable", "wall", params=params)
            self.assertEqual((status, doc["duplicate"]), (200, True), doc)
            self.assertEqual(c.stored_total("durable", "wall"), 1234)


if __name__ == "__main__":
    harness.main()
