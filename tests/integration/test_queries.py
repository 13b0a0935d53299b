# SPDX-License-Identifier: Apache-2.0
# Collector read side against the real collector on 127.0.0.1: hand-computed answers through
# HTTP, measurements never mixed, cost only for CPU, export that go tool pprof opens and that
# re-ingests to identical answers, an anchored diff across a deploy marker, and a read right
# after an upload on a bucket's first second (the collector's clock stopped there).
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

import fake_clock
import harness
import pprof_py

from collector_fixture import Collector, collector_binary, default_backend

SEC = 1000000000
HOUR = 3600
# A whole hour two days ago: explicit windows stay clear of "now" and of each other.
BASE = (int(time.time()) // 86400 - 2) * 86400


def cpu(stacks, at, period=10000000):
    """stacks: {"a;b;c": value_ns}; one cpu pprof stamped at unix second `at`."""
    return pprof_py.build_gz([(k.split(";"), v) for k, v in stacks.items()],
                             sample_types=(("cpu", "nanoseconds"),),
                             period_type=("cpu", "nanoseconds"), period=period,
                             time_nanos=at * SEC, duration_nanos=60 * SEC)


def wall(stacks, at):
    return pprof_py.build_gz([(k.split(";"), v) for k, v in stacks.items()],
                             sample_types=(("wall", "nanoseconds"),),
                             period_type=("wall", "nanoseconds"), period=10000000,
                             time_nanos=at * SEC, duration_nanos=60 * SEC)


def heap(stacks, at):
    return pprof_py.build_gz([(k.split(";"), v) for k, v in stacks.items()],
                             sample_types=(("inuse_space", "bytes"),),
                             period_type=("space", "bytes"), period=524288,
                             time_nanos=at * SEC, duration_nanos=0)


class QueryTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fx = Collector()
        cls.addClassCleanup(cls.fx.close)
        cls.collector_token = cls.fx.create_token("collector")
        cls.viewer_token = cls.fx.create_token("user", role="viewer")

    # ---- HTTP helpers -------------------------------------------------------------------
    def request(self, method, path, params=None, body=None, token=None):
        status, headers, body = self.fx.request(
            method, path, token or self.viewer_token, body=body,
            params={k: str(v) for k, v in (params or {}).items()} or None,
            content_type="application/json" if body is not None else None)
        return status, body, headers

    def get(self, path, expect=200, **params):
        status, body, _ = self.request("GET", path, params)
        self.assertEqual(status, expect, body[:400])
        if expect == 200 and path.endswith(("export", "collapsed")):
            return body
        return json.loads(body)

    def upload(self, service, profile_type, pb, deployment=None):
        status, body = self.fx.upload(self.collector_token, pb, service, profile_type,
                                      deployment=deployment)
        self.assertEqual(status, 200, body)
        return body

    def deploy(self, service, version, at):
        status, body = self.fx.post_json("/api/apm/deployments", self.collector_token,
                                         {"service": service, "version": version, "time": at})
        self.assertIn(status, (200, 201), body)

    def window(self, start, end):
        return {"start": str(start), "end": str(end)}

    def top(self, service, ptype, start, end, **extra):
        return self.get("/api/apm/profiles/top", service=service, profile_type=ptype,
                        limit=1000, **self.window(start, end), **extra)

    # ---- tests --------------------------------------------------------------------------
    def test_every_answer_names_measurement_unit_window_and_total(self):
        self.upload("names", "cpu", cpu({"main;work": 5 * SEC}, BASE + 10))
        for path in ("flamegraph", "top", "cost"):
            r = self.get("/api/apm/profiles/" + path, service="names", profile_type="cpu",
                         **self.window(BASE, BASE + HOUR))
            self.assertEqual(r["measurement"], "cpu", path)
            self.assertEqual(r["unit"], "nanoseconds", path)
            self.assertEqual(r["window"], {"start": BASE, "end": BASE + HOUR, "seconds": HOUR,
                                           "covered_seconds": HOUR})
            self.assertEqual(r["total"], 5 * SEC, path)

    def test_top_shares_and_recursion_by_hand(self):
        self.upload("tophand", "cpu", cpu({"main;f;g;f": 30, "main;f": 10, "main;h": 60},
                                          BASE + 20))
        r = self.top("tophand", "cpu", BASE, BASE + HOUR)
        funcs = {f["name"]: f for f in r["functions"]}
        self.assertEqual(r["total"], 100)
        self.assertEqual([f["name"] for f in r["functions"]][:2], ["h", "f"])
        self.assertEqual(funcs["f"]["self"], 40)
        self.assertEqual(funcs["f"]["total"], 40)  # recursion counts once per stack
        self.assertAlmostEqual(funcs["f"]["self_share"], 40.0)
        self.assertEqual(funcs["g"]["self"], 0)
        self.assertEqual(funcs["g"]["total"], 30)
        self.assertAlmostEqual(funcs["main"]["total_share"], 100.0)

    def test_missing_mixed_or_unknown_profile_type_is_refused(self):
        self.upload("refuse", "cpu", cpu({"main": 1}, BASE))
        for ptype in (None, "cpu,wall", "cpu+wall", "cpuwall", ""):
            params = {"service": "refuse", **self.window(BASE, BASE + HOUR)}
            if ptype is not None:
                params["profile_type"] = ptype
            for path in ("flamegraph", "top", "diff", "cost", "export", "collapsed"):
                status, body, _ = self.request("GET", "/api/apm/profiles/" + path, params)
                self.assertEqual(status, 400, (path, ptype, body[:200]))
                err = json.loads(body)
                self.assertIn("profile_type", err["detail"], (path, ptype))

    def test_repeated_profile_type_is_refused_not_read_as_the_first(self):
        self.upload("repeat", "cpu", cpu({"main": 1}, BASE))
        query = "service=repeat&start=%d&end=%d" % (BASE, BASE + HOUR)
        for path in ("flamegraph", "top", "diff", "cost", "export", "collapsed"):
            for dup in ("profile_type=cpu&profile_type=wall", "profile_type=cpu&profile_type=cpu"):
                status, _, body = self.fx.request("GET", "/api/apm/profiles/%s?%s&%s"
                                                  % (path, query, dup), self.viewer_token)
                self.assertEqual(status, 400, (path, dup, body[:200]))
                self.assertIn("more than once", json.loads(body)["detail"], (path, dup))

    def test_cpu_query_never_sees_wall_data_of_the_same_service(self):
        self.upload("mixed", "cpu", cpu({"main;compute": 7 * SEC}, BASE + 30))
        self.upload("mixed", "wall", wall({"main;sleep": 50 * SEC, "main;compute": 8 * SEC},
                                          BASE + 30))
        c = self.top("mixed", "cpu", BASE, BASE + HOUR)
        w = self.top("mixed", "wall", BASE, BASE + HOUR)
        self.assertEqual(c["total"], 7 * SEC)
        self.assertEqual(c["measurement"], "cpu")
        self.assertNotIn("sleep", [f["name"] for f in c["functions"]])
        self.assertEqual(w["total"], 58 * SEC)
        self.assertEqual(w["measurement"], "wall")
        fg = self.get("/api/apm/profiles/flamegraph", service="mixed", profile_type="cpu",
                      **self.window(BASE, BASE + HOUR))
        self.assertEqual(fg["root"]["total"], 7 * SEC)

    def test_cost_by_hand_and_null_for_wall(self):
        # 3,600 CPU-seconds of one function in a one-hour window: 1 vCPU, 730 vCPU-h/month
        self.upload("costly", "cpu", cpu({"main;work": 3000 * SEC}, BASE + 100))
        self.upload("costly", "cpu", cpu({"main;work": 600 * SEC, "main;gc": 360 * SEC},
                                         BASE + 2000))
        self.upload("costly", "wall", wall({"main;work": 9000 * SEC}, BASE + 100))
        r = self.get("/api/apm/profiles/cost", service="costly", profile_type="cpu",
                     **self.window(BASE, BASE + HOUR))
        work = [f for f in r["cost"]["functions"] if f["name"] == "work"][0]
        self.assertAlmostEqual(work["cpu_seconds"], 3600.0)
        self.assertAlmostEqual(work["avg_vcpus"], 1.0)
        self.assertAlmostEqual(work["vcpu_hours_per_month"], 730.0)
        self.assertAlmostEqual(r["cost"]["service"]["cpu_seconds"], 3960.0)
        self.assertAlmostEqual(r["cost"]["service"]["vcpu_hours_per_month"], 803.0)
        w = self.get("/api/apm/profiles/cost", service="costly", profile_type="wall",
                     **self.window(BASE, BASE + HOUR))
        self.assertIn("cost", w)
        self.assertIsNone(w["cost"])
        self.assertTrue(w["reason"])
        self.assertEqual(w["measurement"], "wall")

    def test_heap_is_averaged_over_uploads_not_summed(self):
        for i in range(12):  # twelve snapshots of 1 GB in one hour
            self.upload("heapy", "heap", heap({"main;cache": 1 << 30}, BASE + i * 300 + 5))
        r = self.top("heapy", "heap", BASE, BASE + HOUR)
        self.assertEqual(r["unit"], "bytes")
        self.assertEqual(r["total"], 1 << 30)
        c = self.get("/api/apm/profiles/cost", service="heapy", profile_type="heap",
                     **self.window(BASE, BASE + HOUR))
        self.assertIsNone(c["cost"])

    def test_flamegraph_root_equals_top_total_and_folding_adds_up(self):
        stacks = {"main;a;b": 100, "main;a;c": 50, "main;d": 30, "main;e;f;g": 20, "x": 7}
        self.upload("tree", "cpu", cpu(stacks, BASE + 40))
        top = self.top("tree", "cpu", BASE, BASE + HOUR)
        full = self.get("/api/apm/profiles/flamegraph", service="tree", profile_type="cpu",
                        **self.window(BASE, BASE + HOUR))
        self.assertEqual(full["root"]["total"], top["total"])
        self.assertEqual(full["root"]["total"], 207)
        self.assertFalse(full["folded"])
        folded = self.get("/api/apm/profiles/flamegraph", service="tree", profile_type="cpu",
                          max_nodes=4, **self.window(BASE, BASE + HOUR))
        self.assertTrue(folded["folded"])
        self.assertEqual(folded["root"]["total"], 207)
        count = self.check_tree(folded["root"])
        self.assertLessEqual(count, 4)
        self.assertEqual(count, folded["nodes"])
        names = [c["name"] for c in folded["root"]["children"]]
        self.assertIn("other", names + [g["name"] for c in folded["root"]["children"]
                                        for g in c["children"]])
        status, body, _ = self.request("GET", "/api/apm/profiles/flamegraph",
                                       {"service": "tree", "profile_type": "cpu",
                                        "max_nodes": "1"})
        self.assertEqual(status, 400)

    def check_tree(self, node):
        """self + children totals == total, no child wider than its parent; node count."""
        count, total = 1, node["self"]
        for c in node["children"]:
            self.assertLessEqual(c["total"], node["total"])
            count += self.check_tree(c)
            total += c["total"]
        self.assertEqual(total, node["total"], node["name"])
        return count

    def test_collapsed_lines(self):
        self.upload("folded", "cpu", cpu({"main;a;b": 100, "main;c": 5}, BASE + 50))
        body = self.get("/api/apm/profiles/collapsed", service="folded", profile_type="cpu",
                        **self.window(BASE, BASE + HOUR))
        self.assertEqual(body.decode().splitlines(), ["main;a;b 100", "main;c 5"])

    def test_collapsed_and_export_name_their_measurement_in_headers(self):
        self.upload("named", "heap", heap({"main;alloc": 4096}, BASE + 50))
        self.upload("named", "cpu", cpu({"main;spin": 7}, BASE + 50))
        win = self.window(BASE, BASE + HOUR)
        for path in ("collapsed", "export"):
            for profile_type, unit in (("heap", "bytes"), ("cpu", "nanoseconds")):
                status, body, headers = self.request(
                    "GET", "/api/apm/profiles/" + path,
                    {"service": "named", "profile_type": profile_type, **win})
                self.assertEqual(status, 200, body[:200])
                self.assertEqual(headers.get("X-RootTrace-Measurement"), profile_type, path)
                self.assertEqual(headers.get("X-RootTrace-Unit"), unit, path)
        # an error is JSON and names nothing in headers
        status, body, headers = self.request("GET", "/api/apm/profiles/collapsed",
                                             {"service": "named", **win})
        self.assertEqual(status, 400, body)
        self.assertNotIn("X-RootTrace-Measurement", headers)

    def test_export_matches_top_opens_in_go_pprof_and_reingests_identically(self):
        stacks = {"main;serve;render": 4 * SEC, "main;serve;render;decode": 3 * SEC,
                  "main;serve;render;decode;malloc": 2 * SEC, "main;gc": SEC}
        self.upload("exp", "cpu", cpu(stacks, BASE + 60))
        self.upload("exp", "cpu", cpu({"main;gc": SEC, "main;serve": SEC // 2}, BASE + 1900))
        win = self.window(BASE, BASE + HOUR)
        top = self.top("exp", "cpu", BASE, BASE + HOUR)
        ours = {f["name"]: f["self"] for f in top["functions"] if f["self"]}
        status, pb, headers = self.request("GET", "/api/apm/profiles/export",
                                           {"service": "exp", "profile_type": "cpu", **win})
        self.assertEqual(status, 200, pb[:200])
        self.assertEqual(pb[:2], b"\x1f\x8b")
        prof = pprof_py.parse(pb)
        self.assertEqual(prof.sample_types, [("cpu", "nanoseconds")])
        self.assertEqual(prof.period, 10000000)
        self.assertEqual(prof.time_nanos, BASE * SEC)
        self.assertEqual(prof.duration_nanos, HOUR * SEC)
        leaf = {}
        for smp in prof.samples:
            leaf[smp.stack[0]] = leaf.get(smp.stack[0], 0) + smp.values[0]
        self.assertEqual(leaf, ours)
        self.assertEqual(self.go_pprof_flat(pb), ours)
        # re-ingested under another service: the same answers
        self.upload("exp-copy", "cpu", pb)
        again = self.top("exp-copy", "cpu", BASE, BASE + HOUR)
        self.assertEqual(again["total"], top["total"])
        self.assertEqual(again["functions"], top["functions"])

    def go_pprof_flat(self, pb):
        go = shutil.which("go")
        if not go:
            self.skipTest("go not installed")
        tmp = tempfile.mkdtemp(prefix="rt-export-")
        try:
            path = os.path.join(tmp, "cpu.pb.gz")
            with open(path, "wb") as f:
                f.write(pb)
            env = dict(os.environ, GOFLAGS="-mod=mod", GOPROXY="off", GOTOOLCHAIN="local",
                       GOCACHE=os.path.join(tmp, "gocache"), HOME=tmp)
            out = subprocess.run([go, "tool", "pprof", "-top", "-symbolize=none", "-unit=ns",
                                  "-nodecount=1000", "-nodefraction=0", "-edgefraction=0",
                                  path], env=env, capture_output=True, text=True, timeout=120)
            self.assertEqual(out.returncode, 0, out.stderr)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        flat = {}
        for line in out.stdout.splitlines():
            m = re.match(r"\s*(\d+)ns\s+[\d.]+%\s+[\d.]+%\s+\d+ns\s+[\d.]+%\s+(.+)$", line)
            if m and int(m.group(1)):
                flat[m.group(2).strip()] = int(m.group(1))
        return flat

    def test_product_docs_diff_through_the_api(self):
        before = {"main;serve;api/serialize.renderPayload": 1123200000,
                  "main;serve;api/serialize.renderPayload;encoding/json.Decode": 631800000,
                  "main;serve;api/serialize.renderPayload;encoding/json.Decode;"
                  "runtime.mallocgc": 421200000,
                  "main;serve;handleOther": 4843800000}
        after = {"main;serve;api/serialize.renderPayload": 1298880000,
                 "main;serve;api/serialize.renderPayload;encoding/json.Decode": 2103300000,
                 "main;serve;api/serialize.renderPayload;encoding/json.Decode;"
                 "runtime.mallocgc": 885600000,
                 "main;serve;handleOther": 3092220000}
        self.upload("docs", "cpu", cpu(before, BASE + 100))
        self.upload("docs", "cpu", cpu(after, BASE + HOUR + 100))
        r = self.get("/api/apm/profiles/diff", service="docs", profile_type="cpu",
                     before_start=BASE, before_end=BASE + HOUR, after_start=BASE + HOUR,
                     after_end=BASE + 2 * HOUR)
        self.assertEqual(r["mode"], "explicit")
        self.assertEqual(r["before"]["total"], 7020000000)
        self.assertEqual(r["after"]["total"], 7380000000)
        self.assertAlmostEqual(r["total_change_pct"], 360 * 100 / 7020, places=6)
        movers = {m["name"]: m for m in r["movers"]}
        self.assertEqual(r["movers"][0]["name"], "encoding/json.Decode")
        self.assertAlmostEqual(r["movers"][0]["delta_pts"], 19.5, places=6)
        rp = movers["api/serialize.renderPayload"]
        dec = movers["encoding/json.Decode"]
        for got, want in ((rp["before_self_share"], 16.0), (rp["before_total_share"], 31.0),
                          (rp["after_self_share"], 17.6), (rp["after_total_share"], 58.1),
                          (dec["before_self_share"], 9.0), (dec["before_total_share"], 15.0),
                          (dec["after_self_share"], 28.5), (dec["after_total_share"], 40.5)):
            self.assertAlmostEqual(got, want, places=6)

    def test_diff_normalises_twice_the_traffic(self):
        shape = {"main;a": 300, "main;b;c": 500, "main;d": 200}
        self.upload("traffic", "cpu", cpu(shape, BASE + 100))
        self.upload("traffic", "cpu", cpu({k: 2 * v for k, v in shape.items()},
                                          BASE + HOUR + 100))
        r = self.get("/api/apm/profiles/diff", service="traffic", profile_type="cpu",
                     before_start=BASE, before_end=BASE + HOUR, after_start=BASE + HOUR,
                     after_end=BASE + 2 * HOUR)
        self.assertAlmostEqual(r["total_change_pct"], 100.0)
        self.assertTrue(r["movers"])
        for m in r["movers"]:
            self.assertLessEqual(abs(m["delta_pts"]), 0.1, m)

    def test_anchored_diff_over_a_deploy_marker_ranks_the_changed_function_first(self):
        t = BASE + 12 * 300 + 120  # a deploy in the middle of a bucket
        for i in range(-3, 0):  # 15 minutes before: parse is hot
            self.upload("anch", "cpu", cpu({"main;handle;parse": 8 * SEC,
                                            "main;handle;render": 2 * SEC}, t + i * 300))
        self.deploy("anch", "v2", t)
        for i in range(1, 4):  # 15 minutes after: render is hot
            self.upload("anch", "cpu", cpu({"main;handle;parse": 3 * SEC,
                                            "main;handle;render": 9 * SEC}, t + i * 300))
        r = self.get("/api/apm/profiles/diff", service="anch", profile_type="cpu",
                     anchor=str(t), window="15m")
        self.assertEqual(r["mode"], "anchor")
        self.assertEqual(r["movers"][0]["name"], "render")
        self.assertGreater(r["movers"][0]["delta_pts"], 50)
        self.assertEqual(r["movers"][-1]["name"], "parse")
        self.assertEqual(r["before"]["window"]["seconds"], 900)
        self.assertEqual(r["after"]["window"]["seconds"], 900)
        self.assertLessEqual(r["before"]["window"]["end"], t)
        self.assertGreaterEqual(r["after"]["window"]["start"], t)
        self.assertEqual([d["version"] for d in r["deployments"]], ["v2"])
        dl = self.get("/api/apm/deployments", service="anch",
                      **self.window(BASE, BASE + 2 * HOUR))
        self.assertEqual([(d["version"], d["time"]) for d in dl["deployments"]], [("v2", t)])

    def test_deployment_mode_diff_uses_each_deployments_data(self):
        self.upload("depl", "cpu", cpu({"main;old": 9, "main;same": 1}, BASE + 10),
                    deployment="v1")
        self.upload("depl", "cpu", cpu({"main;new": 9, "main;same": 1}, BASE + 10),
                    deployment="v2")
        r = self.get("/api/apm/profiles/diff", service="depl", profile_type="cpu",
                     base_deployment="v1", deployment="v2", **self.window(BASE, BASE + HOUR))
        self.assertEqual(r["mode"], "deployment")
        self.assertEqual(r["before"]["total"], 10)
        self.assertEqual(r["after"]["total"], 10)
        self.assertEqual(r["movers"][0]["name"], "new")
        self.assertAlmostEqual(r["movers"][0]["before_self_share"], 0.0)
        self.assertEqual(r["movers"][-1]["name"], "old")
        self.assertAlmostEqual(r["movers"][-1]["after_self_share"], 0.0)
        only_v1 = self.top("depl", "cpu", BASE, BASE + HOUR, deployment="v1")
        self.assertNotIn("new", [f["name"] for f in only_v1["functions"]])
        status, body, _ = self.request("GET", "/api/apm/profiles/diff",
                                       {"service": "depl", "profile_type": "cpu"})
        self.assertEqual(status, 400, body)

    def test_services_lists_profile_types_and_last_upload(self):
        self.upload("svc-list", "cpu", cpu({"main": 1}, BASE + 5))
        self.upload("svc-list", "wall", wall({"main": 1}, BASE + 65))
        r = self.get("/api/apm/services")
        svc = [s for s in r["services"] if s["name"] == "svc-list"][0]
        self.assertEqual(sorted(p["profile_type"] for p in svc["profile_types"]),
                         ["cpu", "wall"])
        self.assertIsNotNone(svc["last_upload"])
        self.assertIn("coverage", r)
        self.assertIn("share_pct", r["coverage"])

    def test_long_windows_add_up_exactly_across_buckets_hours_and_days(self):
        # One upload every 55 minutes over 3 days before BASE; windows with edges on and off
        # bucket, hour and day boundaries must each see exactly the uploads inside them.
        start = BASE - 3 * 86400
        uploads = [(start + i * 3300 + 7, 1000 + i) for i in range(78)]
        for at, v in uploads:
            self.upload("longwin", "cpu", cpu({"main;tick": v}, at))
        for lo, hi in ((start, BASE), (start + 300, BASE - 300), (start + 3599, BASE - 3601),
                       (start + 86400, start + 2 * 86400), (start + 86399, start + 86401 * 2),
                       (start + 5000, start + 5 * 3600 + 17), (start + 7, start + 8)):
            want = sum(v for at, v in uploads
                       if lo - lo % 300 <= at - at % 300 < -(-hi // 300) * 300)
            r = self.top("longwin", "cpu", lo, hi)
            self.assertEqual(r["total"], want, (lo - start, hi - start))

    def test_services_coverage_and_agent_overhead(self):
        engineer = self.fx.create_token("user", role="engineer")
        for svc in ("cov-a", "cov-b"):
            status, body = self.fx.put_json("/api/apm/config", engineer,
                                            {"service": svc, "enabled": True})
            self.assertEqual(status, 200, body)
        report = {"agent_id": "node-1/abc", "node": "node-1", "agent_version": "0.1.0",
                  "window_s": "60", "cpu_s": "0.3", "bpf_s": "0.06", "lost_samples": "2",
                  "unknown_frames": "5", "processes": "7"}
        status, body = self.fx.upload(self.collector_token, cpu({"main": 1}, int(time.time())),
                                      "cov-a", "cpu", params=report)
        self.assertEqual(status, 200, body)
        r = self.get("/api/apm/services")
        self.assertEqual(r["coverage"]["enabled_services"], 2)  # nothing else is enabled
        self.assertEqual(r["coverage"]["reporting"], 1)
        self.assertAlmostEqual(r["coverage"]["share_pct"], 50.0)
        svcs = {s["name"]: s for s in r["services"]}
        self.assertTrue(svcs["cov-a"]["reporting"])
        self.assertFalse(svcs["cov-b"]["reporting"])
        self.assertEqual(svcs["cov-b"]["agents"], [])
        agent = svcs["cov-a"]["agents"][0]
        self.assertEqual(agent["agent_id"], "node-1/abc")
        self.assertAlmostEqual(agent["overhead_pct"], 0.6)
        self.assertEqual(agent["lost_samples"], 2)
        self.assertFalse(svcs.get("names", {"enabled": False})["enabled"])

    def test_bad_windows_are_400_with_detail(self):
        for params in ({"time_range": "2h"}, {"start": "yesterday", "end": "1"},
                       {"start": "100", "end": "50"}, {"start": "100"}):
            status, body, _ = self.request("GET", "/api/apm/profiles/top",
                                           {"service": "x", "profile_type": "cpu", **params})
            self.assertEqual(status, 400, params)
            self.assertTrue(json.loads(body)["detail"])


class ReadOnABucketEdge(unittest.TestCase):
    """A read right after an acknowledged upload sees it, on a five-minute bucket's first
    second too: the collector's clock stands still on an edge, where a window ending now ended
    before the bucket the upload went in (test_profile_lines' GperftoolsHeap read {} so)."""

    @classmethod
    def setUpClass(cls):
        fake_clock.require(collector_binary())
        cls.edge = int(time.time()) // 300 * 300
        if default_backend() == "fleet":
            import fleet_servers
            fleet_servers.servers()  # the servers keep the real clock
        with fake_clock.stopped_at(cls.edge):
            cls.fx = Collector()
            cls.addClassCleanup(cls.fx.close)  # a failed create_token below stops it too
            cls.collector_token = cls.fx.create_token("collector")
            cls.viewer_token = cls.fx.create_token("user", role="viewer")

    def test_an_upload_stamped_on_the_edge_is_in_the_window_ending_now(self):
        status, ack = self.fx.upload(self.collector_token, heap({"main;edge_alloc": 4096},
                                                                self.edge), "edge", "heap")
        self.assertEqual(status, 200, ack)
        self.assertEqual(ack["bucket"], self.edge)
        for window in ({"time_range": "1h"}, {}):  # a preset, and the default last hour
            status, doc = self.fx.get_json("/api/apm/profiles/top", self.viewer_token, params={
                "service": "edge", "profile_type": "heap", **window})
            self.assertEqual(status, 200, doc)
            self.assertEqual({f["name"]: f["self"] for f in doc["functions"]},
                             {"edge_alloc": 4096, "main": 0}, window)
            self.assertEqual(doc["window"]["end"], self.edge + 300, window)


if __name__ == "__main__":
    harness.main()
