# SPDX-License-Identifier: Apache-2.0
# A unittest case with a private temporary directory and a list of cleanups run last-first
# (best effort: a failing cleanup does not stop the others), then the dir removed: after each
# test, and also when a subclass's setUp raises after starting something (unittest runs
# addCleanup's functions then, never tearDown).
import shutil
import tempfile
import unittest


class CleanupTestCase(unittest.TestCase):
    tmp_prefix = "rt-test-"  # subclasses name their temporary directories

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix=self.tmp_prefix)
        self.cleanups = []
        self.addCleanup(self._run_cleanups)

    def _run_cleanups(self):
        for fn in reversed(self.cleanups):
            try:
                fn()
            except Exception:  # noqa: BLE001 - best-effort cleanup
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)
