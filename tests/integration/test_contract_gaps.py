# SPDX-License-Identifier: Apache-2.0
# What the product documents promise and the collector got wrong (issue 15), through the HTTP
# API of the real collector: coverage from any upload with its history, unmeasured figures
# null with a reason, per-service settings the node agent does not apply said so, time sample
# types in any unit, cost over the seconds that happened, the anchored diff's mixed bucket and
# anchor=last_deploy, settings readable with user tokens, and window/deployment/total where
# docs/api.md says they are.
import gzip
import json
import os
import re
import time
import unittest

import harness
import pprof_py

from collector_fixture import Collector

SEC = 1000000000
ROOT = os.environ.get("ROOTTRACE_SRC", os.getcwd())


def profile(stacks, types, at=None, period=10000000):
    """stacks: {"a;b": value or [values]}; one pprof stamped at unix second `at` (now)."""
    return pprof_py.build_gz([(k.split(";"), v) for k, v in stacks.items()],
                             sample_types=types, period_type=types[0], period=period,
                             time_nanos=(at or int(time.time())) * SEC,
                             duration_nanos=60 * SEC)


def cpu(stacks, at=None):
    return profile(stacks, (("cpu", "nanoseconds"),), at)


class ContractGapsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fx = Collector()
        cls.addClassCleanup(cls.fx.close)
        cls.tok = cls.fx.create_token("collector")
        cls.viewer = cls.fx.create_token("user", role="viewer")
        cls.engineer = cls.fx.create_token("user", role="engineer")

    def upload(self, service, profile_type, pb, **params):
        status, body = self.fx.upload(self.tok, pb, service, profile_type,
                                      params={k: str(v) for k, v in params.items()})
        self.assertEqual(status, 200, body)
        return body

    def get(self, path, token=None, expect=200, **params):
        status, doc = self.fx.get_json(path, token or self.viewer,
                                       params={k: str(v) for k, v in params.items()})
        self.assertEqual(status, expect, doc)
        return doc

    def put_config(self, **doc):
        status, body = self.fx.put_json("/api/apm/config", self.engineer, doc)
        self.assertEqual(status, 200, body)

    def services(self, **params):
        doc = self.get("/api/apm/services", **params)
        return doc, {s["name"]: s for s in doc["services"]}

    # ---- 1. coverage ----------------------------------------------------------------------
    def test_coverage_counts_sdk_uploads_and_keeps_a_history(self):
        """An SDK upload (no agent_id) covers its service; coverage has a per-bucket history."""
        env = "cov-env"
        tok = self.fx.create_token("collector", environment=env)
        eng = self.fx.create_token("user", environment=env, role="engineer")
        viewer = self.fx.create_token("user", environment=env, role="viewer")
        for svc in ("sdk-php", "agent-go", "dark"):
            status, body = self.fx.put_json("/api/apm/config", eng,
                                            {"service": svc, "enabled": True})
            self.assertEqual(status, 200, body)
        status, body = self.fx.upload(tok, cpu({"main;php": 5 * SEC}), "sdk-php", "cpu")
        self.assertEqual(status, 200, body)
        status, body = self.fx.upload(tok, cpu({"main;go": 5 * SEC}), "agent-go", "cpu",
                                      params={"agent_id": "node-1/a", "window_s": "60",
                                              "cpu_s": "0.1", "bpf_s": "0.01"})
        self.assertEqual(status, 200, body)
        status, doc = self.fx.get_json("/api/apm/services", viewer,
                                       params={"time_range": "1h"})
        self.assertEqual(status, 200, doc)
        cov = doc["coverage"]
        self.assertEqual(cov["enabled_services"], 3, cov)
        self.assertEqual(cov["covered"], 2, cov)  # the SDK's service counts
        self.assertAlmostEqual(cov["share_pct"], 200.0 / 3, places=3)
        svcs = {s["name"]: s for s in doc["services"]}
        self.assertTrue(svcs["sdk-php"]["covered"])
        self.assertFalse(svcs["sdk-php"]["reporting"])  # no agent reports for it
        self.assertFalse(svcs["dark"]["covered"])
        hist = cov["history"]
        self.assertEqual(hist[0]["bucket"], doc["window"]["start"])
        self.assertGreaterEqual(len(hist), 12, hist)  # one per five-minute bucket of the hour
        last = [h for h in hist if h["bucket"] <= time.time()][-1]
        self.assertEqual((last["enabled_services"], last["covered"]), (3, 2), hist)
        self.assertEqual(hist[0]["covered"], 0, hist)  # an hour ago nothing had arrived

    # ---- 2. unmeasured is null --------------------------------------------------------------
    def test_unmeasured_cpu_and_bpf_time_are_null_with_a_reason(self):
        self.upload("unmeasured", "cpu", cpu({"main": SEC}), agent_id="node-2/u",
                    window_s=60)
        self.upload("bpf-off", "cpu", cpu({"main": SEC}), agent_id="node-2/b", window_s=60,
                    cpu_s="0.3")
        _, svcs = self.services()
        a = svcs["unmeasured"]["agents"][0]
        self.assertIsNone(a["cpu_s"], a)
        self.assertIsNone(a["bpf_s"], a)
        self.assertIsNone(a["overhead_pct"], a)
        self.assertIn("not measured", a["overhead_reason"])
        for key in ("lost_samples", "unknown_frames", "processes"):  # not sent either
            self.assertIsNone(a[key], (key, a))
        b = svcs["bpf-off"]["agents"][0]
        self.assertEqual(b["cpu_s"], 0.3)
        self.assertIsNone(b["bpf_s"], b)
        self.assertIsNone(b["overhead_pct"], b)
        self.assertIn("bpf_stats_enabled", b["overhead_reason"])
        # stored as NULL, not 0
        with self.fx.db() as db:
            row = db.execute("SELECT cpu_s, bpf_s, processes FROM agents"
                             " WHERE agent_id = 'node-2/u'")
            self.assertEqual(row.fetchone(), (None, None, None))
        self.upload("measured", "cpu", cpu({"main": SEC}), agent_id="node-2/m", window_s=60,
                    cpu_s="0.3", bpf_s="0.3", lost_samples=0, processes=4)
        _, svcs = self.services()
        m = svcs["measured"]["agents"][0]
        self.assertAlmostEqual(m["overhead_pct"], 1.0)
        self.assertIsNone(m["overhead_reason"])
        self.assertEqual((m["lost_samples"], m["processes"]), (0, 4))  # real zeros stay 0

    # ---- 3. per-service settings the node agent does not apply --------------------------------
    def test_per_service_rate_and_interval_are_reported_as_not_applied(self):
        self.put_config(enabled=True)
        self.put_config(service="slow-rate", sample_rate_hz=20, upload_interval_s=300)
        self.put_config(service="plain", enabled=True)
        doc = self.get("/api/apm/config", self.tok, service="slow-rate")
        self.assertIn("node agent", doc["not_applied"]["sample_rate_hz"])
        self.assertIn("node agent", doc["not_applied"]["upload_interval_s"])
        self.assertIsNone(doc["services"]["plain"]["not_applied"])
        self.assertIn("sample_rate_hz", doc["services"]["slow-rate"]["not_applied"])
        _, svcs = self.services()
        self.assertIn("upload_interval_s", svcs["slow-rate"]["not_applied"])
        self.assertIsNone(svcs["plain"]["not_applied"])

    # ---- 4. time units ----------------------------------------------------------------------
    def test_time_sample_types_in_any_unit_become_nanoseconds(self):
        cases = [("cpu", ("cpu", "microseconds"), 1000), ("cpu", ("cpu", "milliseconds"),
                                                           1000000),
                 ("cpu", ("time", "nanoseconds"), 1), ("wall", ("wall", "microseconds"), 1000),
                 ("cpu", ("cpu", "seconds"), SEC), ("lock", ("delay", "microseconds"), 1000)]
        for i, (ptype, st, scale) in enumerate(cases):
            svc = "units-%d" % i
            ack = self.upload(svc, ptype, profile({"main;work": 7}, (st,)))
            self.assertEqual(ack["sample_type"], "%s/%s" % st)
            self.assertEqual(ack["total"], 7 * scale, ack)
            top = self.get("/api/apm/profiles/top", service=svc, profile_type=ptype,
                           time_range="15m")
            self.assertEqual(top["unit"], "nanoseconds")
            self.assertEqual(top["total"], 7 * scale, (st, top))
        status, body = self.fx.upload(self.tok, profile({"a": 1}, (("cpu", "furlongs"),)),
                                      "units-bad", "cpu")
        self.assertEqual(status, 422, body)
        self.assertIn("cpu/furlongs", body["detail"])

    def test_alloc_profile_keeps_object_counts(self):
        types = (("alloc_objects", "count"), ("alloc_space", "bytes"))
        ack = self.upload("allocs", "alloc", profile({"main;new": [3, 4096],
                                                      "main;make": [5, 80]}, types))
        self.assertEqual(ack["total"], 4176)
        self.assertEqual(ack["alloc_objects"], 8)
        objects = self.get("/api/apm/profiles/top", service="allocs",
                           profile_type="alloc_objects", time_range="15m")
        self.assertEqual(objects["unit"], "count")
        self.assertEqual(objects["total"], 8)
        self.assertEqual({f["name"]: f["self"] for f in objects["functions"] if f["self"]},
                         {"new": 3, "make": 5})
        space = self.get("/api/apm/profiles/top", service="allocs", profile_type="alloc",
                         time_range="15m")
        self.assertEqual(space["total"], 4176)

    # ---- 5. cost over the seconds that happened -----------------------------------------------
    def test_cost_divides_by_the_seconds_the_window_covers(self):
        self.upload("costly", "cpu", cpu({"main;burn": 600 * SEC}))
        doc = self.get("/api/apm/profiles/cost", service="costly", profile_type="cpu",
                       time_range="15m")
        w = doc["window"]
        covered = w["covered_seconds"]
        self.assertLess(covered, w["seconds"])  # the current bucket has not ended
        self.assertGreaterEqual(covered, 900)
        svc = doc["cost"]["service"]
        # 600 CPU-seconds over the covered seconds (±1 s for the clock moving between the
        # answer and this check), never over the widened 1,200 s
        self.assertGreater(svc["avg_vcpus"], 600.0 / (covered + 2))
        self.assertLessEqual(svc["avg_vcpus"], 600.0 / (covered - 2))
        self.assertEqual(doc["cost"]["seconds"], covered)
        # a window that has not begun has nothing to divide by: null with a reason, not 0
        future = (int(time.time()) // 300 + 2) * 300
        doc = self.get("/api/apm/profiles/cost", service="costly", profile_type="cpu",
                       start=future, end=future + 900)
        self.assertEqual(doc["window"]["covered_seconds"], 0)
        self.assertIsNone(doc["cost"])
        self.assertIn("not started", doc["reason"])

    # ---- 6. anchored diff ---------------------------------------------------------------------
    def test_anchored_diff_returns_the_mixed_bucket_and_last_deploy(self):
        base = (int(time.time()) // 86400 - 3) * 86400
        self.upload("anchored", "cpu", cpu({"main;old": 10 * SEC}, base - 600))
        self.upload("anchored", "cpu", cpu({"main;new": 10 * SEC}, base + 300))
        self.upload("anchored", "cpu", cpu({"main;mixed": 3 * SEC, "main;old": SEC}, base))
        doc = self.get("/api/apm/profiles/diff", service="anchored", profile_type="cpu",
                       anchor=base + 120, window="15m")
        self.assertEqual(doc["mixed"]["window"]["start"], base)
        self.assertEqual(doc["mixed"]["window"]["end"], base + 300)
        self.assertEqual(doc["mixed"]["total"], 4 * SEC)
        movers = {m["name"]: m for m in doc["movers"]}
        self.assertAlmostEqual(movers["old"]["mixed_self_share"], 25.0)
        self.assertAlmostEqual(movers["new"]["mixed_self_share"], 0.0)
        # on a bucket edge there is no mixed bucket
        edge = self.get("/api/apm/profiles/diff", service="anchored", profile_type="cpu",
                        anchor=base, window="15m")
        self.assertIsNone(edge["mixed"])
        self.assertIsNone(edge["movers"][0]["mixed_self_share"])
        # anchor=last_deploy: since the newest marker against the same length before it
        status, body = self.fx.post_json("/api/apm/deployments", self.tok,
                                         {"service": "anchored", "version": "v2",
                                          "time": base + 150})
        self.assertEqual(status, 201, body)
        last = self.get("/api/apm/profiles/diff", service="anchored", profile_type="cpu",
                        anchor="last_deploy")
        self.assertEqual(last["mode"], "last_deploy")
        self.assertEqual(last["after"]["window"]["start"], base + 300)
        self.assertGreaterEqual(last["after"]["window"]["end"], int(time.time()))
        self.assertEqual(last["before"]["window"]["end"], base)
        self.assertEqual(last["before"]["window"]["seconds"], last["after"]["window"]["seconds"])
        self.assertEqual([d["version"] for d in last["deployments"]], ["v2"])
        self.get("/api/apm/profiles/diff", expect=404, service="no-deploys", profile_type="cpu",
                 anchor="last_deploy")

    # ---- 7. host comparison -------------------------------------------------------------------
    def test_one_host_compared_with_a_healthy_one(self):
        now = int(time.time())
        self.upload("hosts", "cpu", cpu({"main;serve": 8 * SEC, "main;gc": 2 * SEC}, now),
                    node="node-a", agent_id="node-a/1", window_s=60, cpu_s="0.1", bpf_s="0.1")
        self.upload("hosts", "cpu", cpu({"main;serve": 5 * SEC, "main;gc": 5 * SEC}, now),
                    node="node-b")  # an SDK upload that names its node
        _, svcs = self.services()
        self.assertEqual([n["node"] for n in svcs["hosts"]["nodes"]], ["node-a", "node-b"])
        common = {"service": "hosts", "profile_type": "cpu", "time_range": "15m"}
        for route in ("flamegraph", "top", "cost"):
            doc = self.get("/api/apm/profiles/" + route, node="node-b", **common)
            self.assertEqual(doc["node"], "node-b", route)
            self.assertEqual(doc["total"], 10 * SEC, route)
        top = self.get("/api/apm/profiles/top", **common)
        self.assertIsNone(top["node"])
        self.assertEqual(top["total"], 20 * SEC)  # every node without node=
        status, _, body = self.fx.request("GET", "/api/apm/profiles/collapsed", self.viewer,
                                          params=dict(common, node="node-a"))
        self.assertEqual(status, 200)
        self.assertEqual(sorted(body.decode().splitlines()),
                         ["main;gc 2000000000", "main;serve 8000000000"])
        status, _, body = self.fx.request("GET", "/api/apm/profiles/export", self.viewer,
                                          params=dict(common, node="node-zzz"))
        self.assertEqual(status, 200)
        self.assertEqual(pprof_py.parse(gzip.decompress(body)).samples, [])
        diff = self.get("/api/apm/profiles/diff", base_node="node-a", node="node-b", **common)
        self.assertEqual(diff["mode"], "node")
        self.assertEqual((diff["before"]["node"], diff["after"]["node"]), ("node-a", "node-b"))
        movers = {m["name"]: m for m in diff["movers"]}
        self.assertAlmostEqual(movers["gc"]["delta_pts"], 30.0)
        self.get("/api/apm/profiles/diff", expect=400, base_node="node-a", **common)

    def test_node_adds_no_rollup_rows_for_a_service_on_one_node(self):
        now = int(time.time())
        for i in range(3):
            self.upload("one-node", "cpu", cpu({"main;a": SEC, "main;b": SEC}, now), node="n1")
        self.upload("no-node", "cpu", cpu({"main;a": SEC, "main;b": SEC}, now))
        self.assertEqual(len(self.fx.stored_rows(service="one-node")),
                         len(self.fx.stored_rows(service="no-node")))
        with self.fx.db() as db:
            n = db.execute("SELECT count(*) FROM series WHERE service = 'one-node'").fetchone()
        self.assertEqual(n[0], 1)

    def test_a_database_from_before_nodes_is_migrated(self):
        fx = Collector()
        try:
            tok = fx.create_token("collector")
            viewer = fx.create_token("user", role="viewer")
            status, _ = fx.upload(tok, cpu({"main;old": SEC}), "legacy", "cpu")
            self.assertEqual(status, 200)
            fx.stop()
            import sqlite3
            db = sqlite3.connect(os.path.join(fx.data, "roottrace.db"))
            db.executescript(
                "CREATE TABLE old_series(id INTEGER PRIMARY KEY, environment TEXT NOT NULL,"
                " service TEXT NOT NULL, profile_type TEXT NOT NULL, deployment TEXT NOT NULL,"
                " UNIQUE(environment, service, profile_type, deployment));"
                "INSERT INTO old_series SELECT id, environment, service, profile_type,"
                " deployment FROM series; DROP TABLE series;"
                "ALTER TABLE old_series RENAME TO series;")
            db.close()
            fx.start()
            status, _ = fx.upload(tok, cpu({"main;new": SEC}), "legacy", "cpu",
                                  params={"node": "n2"})
            self.assertEqual(status, 200)
            status, doc = fx.get_json("/api/apm/profiles/top", viewer,
                                      params={"service": "legacy", "profile_type": "cpu",
                                              "time_range": "15m"})
            self.assertEqual(status, 200, doc)
            self.assertEqual(doc["total"], 2 * SEC)
            status, doc = fx.get_json("/api/apm/profiles/top", viewer,
                                      params={"service": "legacy", "profile_type": "cpu",
                                              "time_range": "15m", "node": "n2"})
            self.assertEqual(doc["total"], SEC)
        finally:
            fx.close()

    # ---- 8. settings readable with user tokens -------------------------------------------------
    def test_settings_are_readable_with_every_user_role(self):
        self.put_config(service="readable", sample_rate_hz=50)
        for role in ("viewer", "engineer", "admin"):
            tok = self.fx.create_token("user", role=role)
            doc = self.get("/api/apm/config", tok, service="readable")
            self.assertEqual(doc["sample_rate_hz"], 50, role)
            self.assertEqual(doc["limits"]["sample_rate_hz"], {"min": 10, "max": 200})
            self.assertEqual(doc["limits"]["upload_interval_s"], {"min": 10, "max": 3600})
            self.assertEqual(doc["limits"]["poll_interval_s"], {"min": 5, "max": 60})
        other = self.fx.create_token("user", environment="elsewhere", role="viewer")
        status, _ = self.fx.get_json("/api/apm/config", other,
                                     params={"environment": "production"})
        self.assertEqual(status, 403)

    # ---- 9. window / deployment / total where the document says ------------------------------
    def test_every_json_read_answer_carries_what_the_api_document_says(self):
        self.upload("doc-check", "cpu", cpu({"main": SEC}))
        with open(os.path.join(ROOT, "docs", "api.md")) as f:
            text = f.read()
        m = re.search(r"Every JSON answer\s+except\s+`diff`\s+carries\s(.*?)\.", text, re.S)
        self.assertTrue(m, "docs/api.md states which answers carry window/deployment/total")
        keys = re.findall(r"`(\w+)`", m.group(1))
        for key in ("window", "deployment", "total"):
            self.assertIn(key, keys)
        common = {"service": "doc-check", "profile_type": "cpu", "time_range": "1h"}
        for route in ("flamegraph", "top", "cost"):
            doc = self.get("/api/apm/profiles/" + route, **common)
            for key in keys:
                self.assertIn(key, doc, (route, key))
        side = re.search(r"`diff`\s+answers\s+carry\s(.*?)\sin\s+each\s+of", text, re.S)
        self.assertTrue(side, "docs/api.md says where diff carries them")
        diff = self.get("/api/apm/profiles/diff", service="doc-check", profile_type="cpu",
                        base_deployment="a", deployment="b")
        for part in ("before", "after"):
            for key in ("window", "deployment", "total"):
                self.assertIn(key, diff[part], (part, key))
        for key in ("window", "deployment", "total"):
            self.assertNotIn(key, diff)


if __name__ == "__main__":
    harness.main()
