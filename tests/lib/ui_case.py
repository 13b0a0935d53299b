# SPDX-License-Identifier: Apache-2.0
# The base of the web UI tests: per test class, the real collector (cls.fx, cls.origin, a
# collector token) and one headless Chromium (cls.browser); skipped where Chromium is not
# installed. A subclass uploads what it needs in seed(collector_token).
import os
import unittest

from chromium import CHROMIUM, Chromium
from collector_fixture import Collector


@unittest.skipUnless(os.access(CHROMIUM, os.X_OK), "no %s (scripts/install-deps.sh installs it)"
                     % CHROMIUM)
class UiCase(unittest.TestCase):
    serve_args = ()  # the collector's extra `serve` arguments

    @classmethod
    def setUpClass(cls):
        cls.fx = Collector(serve_args=cls.serve_args)
        cls.origin = "http://127.0.0.1:%d" % cls.fx.port
        try:
            cls.seed(cls.fx.create_token("collector"))
            cls.browser = Chromium()
        except BaseException:
            cls.fx.close()
            raise

    @classmethod
    def seed(cls, col):
        """Tokens and uploads of the subclass's cases."""

    @classmethod
    def tearDownClass(cls):
        cls.browser.close()
        cls.fx.close()
