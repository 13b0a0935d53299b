# SPDX-License-Identifier: Apache-2.0
# A unittest case with a private temporary directory and a list of cleanups that tearDown runs
# last-first (best effort: a failing cleanup does not stop the others), then removes the dir.
import shutil
import tempfile
import unittest


class CleanupTestCase(unittest.TestCase):
    tmp_prefix = "rt-test-"  # subclasses name their temporary directories

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix=self.tmp_prefix)
        self.cleanups = []

    def tearDown(self):
        for fn in reversed(self.cleanups):
            try:
                fn()
            except Exception:  # noqa: BLE001 - best-effort cleanup
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)
