# SPDX-License-Identifier: Apache-2.0
# A real language SDK: Pyroscope's Node.js SDK (@pyroscope/nodejs, installed pinned into
# build/node by `make node-sdk`, part of `make check`) profiles a small Node app with a known hot
# function and uploads its wall-clock and heap profiles to a real collector's POST /ingest,
# authenticated with a collector token as the Basic password. Checked through the query API.
import os
import subprocess
import unittest

import harness
from collector_fixture import Collector, build_dir

SRC = os.environ.get("ROOTTRACE_SRC", os.getcwd())
APP = os.path.join(SRC, "tests", "helpers", "pyroscope-nodejs", "app.js")
NODE_MODULES = os.path.join(build_dir(), "node", "node_modules")
HOT = "rootTraceHotFunction"
RUN_SECONDS = 12  # three 4 s flushes and the one at stop


def run_app(collector, token, app_name, seconds, version=None):
    """Runs the SDK-instrumented app to its end; returns the finished process."""
    sdk = os.path.join(NODE_MODULES, "@pyroscope", "nodejs", "package.json")
    if not os.path.exists(sdk):
        raise AssertionError("%s is missing: run `make node-sdk` (make check does)" % sdk)
    env = dict(os.environ, NODE_PATH=NODE_MODULES, DEBUG="pyroscope")
    args = ["node", APP, "http://127.0.0.1:%d" % collector.port, token, app_name, str(seconds)]
    r = subprocess.run(args + ([version] if version else []), env=env, capture_output=True,
                       text=True, timeout=seconds + 60)
    if r.returncode != 0:
        raise AssertionError("node app exited %d: %s" % (r.returncode, r.stderr[-2000:]))
    return r


class NodeSdkUploads(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Collector()
        cls.addClassCleanup(cls.c.close)
        cls.tok = cls.c.create_token("collector")
        cls.viewer = cls.c.create_token("user", role="viewer")
        cls.app = run_app(cls.c, cls.tok, "checkout", RUN_SECONDS, version="2.7.1")

    def query(self, route, profile_type, **params):
        params.update(service="checkout", profile_type=profile_type, time_range="1h")
        status, body = self.c.get_json("/api/apm/profiles/" + route, self.viewer, params=params)
        self.assertEqual(status, 200, body)
        return body

    def uploads(self):
        status, body = self.c.get_json("/api/apm/services", self.viewer)
        self.assertEqual(status, 200, body)
        return {s["name"]: {t["profile_type"]: t["uploads"] for t in s["profile_types"]}
                for s in body["services"]}

    def test_wall_profile_is_stored_as_wall_with_the_hot_function_on_top(self):
        top = self.query("top", "wall", limit=5)
        self.assertEqual(top["service"], "checkout")
        self.assertEqual(top["unit"], "nanoseconds")
        self.assertIn(HOT, top["functions"][0]["name"], top["functions"])
        # the app burns its whole run in the loop: most of the wall time, not a sliver
        self.assertGreater(top["functions"][0]["self_share"], 40.0, top["functions"][:3])
        self.assertGreaterEqual(self.uploads()["checkout"]["wall"], 2)

    def test_wall_profile_is_never_stored_as_cpu(self):
        self.assertEqual(self.c.stored_rows(profile_type="cpu"), [])
        self.assertEqual(self.query("top", "cpu")["total"], 0)
        self.assertNotIn("cpu", self.uploads()["checkout"])

    def test_heap_profile_is_stored_as_heap_and_averaged_over_uploads(self):
        uploads = self.uploads()["checkout"]["heap"]
        self.assertGreaterEqual(uploads, 2)
        rows = self.c.stored_rows(service="checkout", profile_type="heap")
        stored = sum(r[-1] for r in rows)
        self.assertGreater(stored, 0)
        flame = self.query("flamegraph", "heap")
        self.assertEqual(flame["unit"], "bytes")
        # a gauge: the window shows the average heap, not the sum of every snapshot
        self.assertLessEqual(abs(flame["total"] - stored / uploads), len(rows), (stored, uploads))
        self.assertLess(flame["total"], stored)

    def test_cost_is_null_for_wall_and_heap(self):
        for profile_type in ("wall", "heap"):
            body = self.query("cost", profile_type)
            self.assertIsNone(body["cost"], body)
            self.assertTrue(body["reason"])

    def test_deployment_comes_from_the_service_version_tag(self):
        rows = self.c.stored_rows(service="checkout")
        self.assertTrue(rows)
        self.assertEqual({r[2] for r in rows}, {"2.7.1"})
        self.assertEqual(self.query("top", "wall", deployment="2.7.1")["functions"][0]["name"],
                         self.query("top", "wall")["functions"][0]["name"])

    def test_sdk_tags_create_no_services_or_series(self):
        self.assertEqual(list(self.uploads()), ["checkout"])
        with self.c.db() as db:
            series = db.execute("SELECT environment, service, deployment, profile_type"
                                " FROM series ORDER BY profile_type").fetchall()
        self.assertEqual(series, [("production", "checkout", "2.7.1", "heap"),
                                  ("production", "checkout", "2.7.1", "wall")])

    def test_the_sdk_gets_200_for_every_upload(self):
        self.assertNotIn("Server rejected", self.app.stderr)
        self.assertNotIn("Error sending", self.app.stderr)
        m = self.c.metrics()
        self.assertEqual(m.get('roottrace_uploads_accepted_total'),
                         sum(self.uploads()["checkout"].values()))

    def test_a_wrong_token_gets_401_and_stores_nothing(self):
        before = self.c.metrics()['roottrace_rejects_total{reason="unauthorized"}']
        r = run_app(self.c, "rtc_" + "0" * 64, "intruder", 5)
        self.assertIn("HTTP 401", r.stderr)
        self.assertGreater(self.c.metrics()['roottrace_rejects_total{reason="unauthorized"}'],
                           before)
        self.assertEqual(self.c.stored_rows(service="intruder"), [])
        self.assertNotIn("intruder", self.uploads())


if __name__ == "__main__":
    harness.main()
