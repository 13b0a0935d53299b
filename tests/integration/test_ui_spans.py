# SPDX-License-Identifier: Apache-2.0
# From a slow span to its frames in the web UI: a deep link to a trace (Go's pprof.Do spans
# and OTLP links, uploaded for real) lists the trace's spans after sign-in, and a span's view
# draws the flame graph of the function that span ran; a wall-clock span is labelled wall with
# no cost; "Compare with its endpoint" ranks the span's function first; the Spans tab lists a
# service's slowest linked spans; an unknown trace gets an empty state naming the link
# retention; the token is never in a URL or the history; the page stays within its budget.
# Real collector, real headless Chromium. Screenshots go to $ROOTTRACE_BUILD/ui-screenshots/.
import os
import subprocess
import time
import urllib.parse

import harness
import otlp_py
import pprof_py
from collector_fixture import build_dir
from test_collector_ingest import build_go_profiler
from ui_case import UiCase

SEC = 1_000_000_000
PERIOD = 10_000_000
NOW = int(time.time())
BUDGET = 150 * 1024
SHOTS = os.path.join(build_dir(), "ui-screenshots")
TRACE = "4a1f00000000000000000000000009c2"
HASH_SPAN, FIB_SPAN = "00000000000000a1", "00000000000000b2"
GATEWAY_SPAN = "00000000000000c3"
DIFF_TRACE = "d1ff0000000000000000000000000001"
UNKNOWN = "ffffffffffffffffffffffffffffffff"
TREE_TRACE = "7ee00000000000000000000000000001"


def gateway_request():
    """OTLP, service gateway: span c3 of TRACE ran db.acquire on CPU (3 samples of 10 ms) and
    waited 1.9 s in it (wall)."""
    r = otlp_py.Request()
    t = NOW * SEC
    stack = r.stack([r.location(["db.acquire"]), r.location(["gateway.route"]),
                     r.location(["main"])])  # leaf first
    link = r.link(TRACE, GATEWAY_SPAN)
    res = r.resource({"service.name": "gateway"})
    res.profile(("samples", "count"), period_type=("cpu", "nanoseconds"), period=PERIOD,
                time_nanos=t, samples=[{"stack": stack, "link": link,
                                        "timestamps": [t, t + PERIOD, t + 2 * PERIOD]}])
    res.profile(("wall", "nanoseconds"), time_nanos=t,
                samples=[{"stack": stack, "values": [1_900_000_000], "link": link}])
    return r.protobuf()


def endpoint_profiles():
    """diff-svc's endpoint GET /x: an hour of spans mostly in db, then a slow span (2, in
    DIFF_TRACE) mostly in json: json is the mover."""
    t = NOW - 600

    def span(sid, db, js, at, extra):
        labels = dict(span_id=sid, span_name="GET /x", **extra)
        return pprof_py.build([(["main", "handler", "db"], db, labels),
                               (["main", "handler", "json"], js, labels)], time_nanos=at * SEC)
    return [span("1", 90_000_000, 10_000_000, t - 1200, {}),
            span("2", 10_000_000, 90_000_000, t, {"trace_id": DIFF_TRACE})]


class SpansUi(UiCase):
    @classmethod
    def seed(cls, col):
        cls.viewer = cls.fx.create_token("user", role="viewer", name="viewer-span")
        path = os.path.join(cls.fx.tmp, "spans.pprof")
        subprocess.run([build_go_profiler(), path, "1", TRACE, HASH_SPAN, FIB_SPAN], check=True,
                       capture_output=True, timeout=120)
        with open(path, "rb") as f:
            status, body = cls.fx.upload(col, f.read(), "go-spans", "cpu")
        assert status == 200 and body["links"]["stored"] > 0, body
        status, _, body = cls.fx.request("POST", "/v1development/profiles", col,
                                         body=gateway_request(),
                                         content_type="application/x-protobuf")
        assert status == 200, body
        for pb in endpoint_profiles():
            status, body = cls.fx.upload(col, pb, "diff-svc", "cpu")
            assert status == 200, body
        tree = pprof_py.build([  # a span whose child names it as its parent: resolvable
            (["main", "serve"], PERIOD, {"span_id": "0a", "trace_id": TREE_TRACE,
                                         "span_name": "GET /tree"}),
            (["main", "serve", "query"], 4 * PERIOD, {"span_id": "0b", "parent_span_id": "0a",
                                                      "trace_id": TREE_TRACE,
                                                      "span_name": "db.query"})])
        status, body = cls.fx.upload(col, tree, "tree-svc", "cpu")
        assert status == 200, body
        status, body = cls.fx.upload(col, pprof_py.build([(["main", "idle"], PERIOD, {})]),
                                     "plain", "cpu")  # no span links
        assert status == 200, body
        cls.pages = []

    # ---- helpers ---------------------------------------------------------------------------
    def open(self, fragment):
        """A fresh tab at the deep link `fragment`, signed in as the viewer, first render done."""
        page = self.browser.new_page()
        self.pages.append(page)
        page.goto(self.origin + "/#" + fragment)
        page.wait_for("!document.getElementById('login').hidden", what="the sign-in form")
        page.type("#login-token", self.viewer)
        page.click_selector("#login-form button[type=submit]")
        page.wait_for("window.__rt && window.__rt.rendered >= 1", what="the first render")
        self.assertEqual(page.eval("document.getElementById('error').textContent"), "")
        return page

    def text(self, page, selector):
        return page.eval("document.querySelector(%r).textContent" % selector)

    def rows(self, page, table):
        return page.eval("[...document.querySelectorAll('#%s tbody tr')].map(r =>"
                         " [...r.cells].map(c => c.textContent))" % table)

    def span_drawn(self, page):
        """Waits for the span view's flame graph; returns the names drawn."""
        page.wait_for("!document.getElementById('span-head').hidden &&"
                      " window.__rt.flame.lastDraw && window.__rt.flame.lastDraw.bars > 0 &&"
                      " window.__rt.flameData && window.__rt.flameData.span_id",
                      what="the span's flame graph")
        return page.eval("window.__rt.flame.lastDraw.names")

    # ---- trace -----------------------------------------------------------------------------
    def test_deep_link_to_a_trace_lists_its_spans_and_a_span_draws_its_function(self):
        page = self.open("view=trace&trace_id=" + TRACE)
        page.wait_for("document.querySelectorAll('#trace-spans tbody tr').length === 4",
                      what="the trace's four spans")
        rows = {(r[0], r[1], r[3]): r for r in self.rows(page, "trace-spans")}
        self.assertEqual(set(rows), {("go-spans", "GET /hash", "cpu"),
                                     ("go-spans", "GET /fib", "cpu"),
                                     ("gateway", "(no name)", "cpu"),
                                     ("gateway", "(no name)", "wall")})
        wall = rows[("gateway", "(no name)", "wall")]
        self.assertEqual(wall[4], "1.90 s")
        self.assertEqual(wall[5], "100.00%")  # wall is its own total, never added to CPU
        self.assertEqual(rows[("gateway", "(no name)", "cpu")][4], "30.0 ms")
        cpu_shares = sum(float(r[5].rstrip("%")) for k, r in rows.items() if k[2] == "cpu")
        self.assertAlmostEqual(cpu_shares, 100.0, places=1)
        # pprof.Do and OTLP links name no parent: with children is said to be unknown, in words
        self.assertEqual({r[6] for r in rows.values()}, {"–"})
        self.assertIn("cannot be found", self.text(page, "#trace-note"))
        self.assertEqual(page.eval("document.getElementById('trace-box').value"), TRACE)
        page.screenshot(os.path.join(SHOTS, "trace.png"))

        page.eval("document.querySelector('#trace-spans tbody tr[data-span=\"%s\"]').click()"
                  % HASH_SPAN)
        names = self.span_drawn(page)
        self.assertIn("main.hashLoop", names)
        self.assertNotIn("main.fibLoop", names)
        self.assertIn("span_id=" + HASH_SPAN, page.eval("location.hash"))
        title = self.text(page, "#span-title")
        self.assertIn("Linked · Trace 4a1f…9c2 · GET /hash", title)
        caption = self.text(page, "#caption")
        self.assertIn("CPU time of go-spans in nanoseconds", caption)
        self.assertIn("whole 5-minute buckets", caption)
        self.assertIn("samples linked to span " + HASH_SPAN, caption)
        top = [r[0] for r in self.rows(page, "top")]
        self.assertIn("main.hashLoop", top)
        self.assertNotIn("main.fib", top)
        page.screenshot(os.path.join(SHOTS, "span.png"))
        page.click_selector("#span-title a")  # back up to the trace
        page.wait_for("!document.getElementById('view-trace').hidden &&"
                      " document.querySelectorAll('#trace-spans tbody tr').length === 4",
                      what="the trace from the span's head")
        self.assertEqual(page.console_errors(), [])

    def test_children_resolved_from_parent_ids_are_added(self):
        page = self.open("view=trace&trace_id=" + TREE_TRACE)
        page.wait_for("document.querySelectorAll('#trace-spans tbody tr').length === 2")
        rows = {r[1]: r for r in self.rows(page, "trace-spans")}
        self.assertEqual((rows["GET /tree"][4], rows["GET /tree"][6]), ("10.0 ms", "50.0 ms"))
        self.assertEqual(rows["db.query"][6], "40.0 ms")
        self.assertEqual(self.text(page, "#trace-note"), "")  # every span resolved
        page.eval("document.querySelector('#trace-spans tbody tr').click()")
        self.assertNotIn("query", self.span_drawn(page))  # the span alone first
        page.click_selector("#span-kids")
        page.wait_for("window.__rt.flameData.include_children &&"
                      " window.__rt.flame.lastDraw.names.includes('query')",
                      what="the span with its child")
        self.assertEqual(page.eval("window.__rt.flameData.total"), 5 * PERIOD)
        self.assertIn("With its child spans: 2 span(s) merged", self.text(page, "#span-note"))
        self.assertIn("kids=1", page.eval("location.hash"))

    def test_wall_span_is_labelled_wall_and_has_no_cost(self):
        # the link names the type only: the span is found by id, its wall row chosen
        page = self.open("view=span&span_id=%s&type=wall" % GATEWAY_SPAN)
        self.assertIn("db.acquire", self.span_drawn(page))
        self.assertEqual(self.text(page, "#span-title .tag"), "wall")
        self.assertIn("1.90 s", self.text(page, "#span-title"))
        self.assertIn("no CPU cost", self.text(page, "#span-note"))
        self.assertIn("wall-clock time of gateway", self.text(page, "#caption"))
        self.assertEqual({r[3] for r in self.rows(page, "top")}, {"n/a"})
        self.assertFalse([u for u in page.requested_urls() if "/profiles/cost" in u])
        self.assertIn("also linked: gateway cpu 30.0 ms", self.text(page, "#span-other"))
        # the flame graph tab then shows the span's service and measurement, window and all
        page.click_selector("#tabs a[data-view=flame]")
        page.wait_for("window.__rt.flameData && !window.__rt.flameData.span_id &&"
                      " window.__rt.flame.lastDraw.bars > 0", what="the service's flame graph")
        self.assertEqual(page.eval("[document.getElementById('service').value,"
                                   " document.getElementById('ptype').value]"),
                         ["gateway", "wall"])
        self.assertNotIn("span_id", page.eval("location.hash"))

    def test_unknown_trace_shows_the_empty_state_with_the_link_retention(self):
        page = self.open("view=trace&trace_id=" + UNKNOWN)
        page.wait_for("!document.getElementById('trace-empty').hidden", what="the empty state")
        empty = self.text(page, "#trace-empty")
        self.assertIn("No samples are linked to trace " + UNKNOWN, empty)
        self.assertIn("no uploaded sample carried this trace's span ids", empty)
        self.assertIn("Span links are kept for 72 hours", empty)
        self.assertTrue(page.eval("document.getElementById('trace-spans').hidden"))
        page.screenshot(os.path.join(SHOTS, "trace-unknown.png"))
        # a link that says when the trace ran (time=), past the retention: said so
        page = self.open("view=trace&trace_id=%s&time=%d" % (UNKNOWN, NOW - 4 * 86400))
        page.wait_for("!document.getElementById('trace-empty').hidden", what="the empty state")
        self.assertIn("more than 72 hours ago: its links have been deleted",
                      self.text(page, "#trace-empty"))
        page = self.open("view=trace&trace_id=not-hex")
        page.wait_for("!document.getElementById('trace-empty').hidden", what="the empty state")
        self.assertIn("is not a trace id", self.text(page, "#trace-empty"))

    def test_trace_id_pasted_in_the_header_opens_the_trace(self):
        page = self.open("view=flame&service=go-spans&type=cpu&range=1h")
        page.wait_for("window.__rt.flame.lastDraw && window.__rt.flame.lastDraw.bars > 0")
        page.type("#trace-box", TRACE.upper())
        page.click_selector("#trace-form button")
        page.wait_for("document.querySelectorAll('#trace-spans tbody tr').length === 4",
                      what="the pasted trace's spans")
        self.assertIn("view=trace", page.eval("location.hash"))

    def test_deep_link_to_a_span_alone_finds_its_service_and_trace(self):
        page = self.open("view=span&span_id=" + FIB_SPAN.lstrip("0").upper())
        names = self.span_drawn(page)
        self.assertIn("main.fibLoop", names)
        self.assertNotIn("main.hashLoop", names)
        self.assertIn("Trace 4a1f…9c2 · GET /fib", self.text(page, "#span-title"))
        self.assertIn("trace_id=" + TRACE, page.eval("location.hash"))
        page = self.open("view=span&span_id=00000000000000ee")
        page.wait_for("!document.getElementById('span-empty').hidden &&"
                      " document.getElementById('span-empty').textContent", what="the empty state")
        empty = self.text(page, "#span-empty")
        self.assertIn("No samples are linked to span 00000000000000ee", empty)
        self.assertIn("Span links are kept for 72 hours", empty)
        self.assertTrue(page.eval("document.getElementById('view-flame').hidden"))

    # ---- spans tab -------------------------------------------------------------------------
    def test_spans_tab_lists_the_slowest_linked_spans_and_opens_one(self):
        page = self.open("view=spans&service=go-spans&type=cpu&range=1h")
        page.wait_for("document.querySelectorAll('#spans-list tbody tr').length === 2",
                      what="the two spans")
        rows = self.rows(page, "spans-list")
        doc = self.fx.get_json("/api/apm/spans", self.viewer, params={
            "service": "go-spans", "profile_type": "cpu", "time_range": "1h"})[1]
        self.assertEqual([r[1] for r in rows], [s["span_id"] for s in doc["spans"]])
        self.assertGreaterEqual(doc["spans"][0]["value"], doc["spans"][1]["value"])
        self.assertEqual({r[0] for r in rows}, {"GET /hash", "GET /fib"})
        self.assertEqual({r[2] for r in rows}, {TRACE})
        self.assertIn("Slowest linked spans of go-spans", self.text(page, "#caption"))
        page.screenshot(os.path.join(SHOTS, "spans.png"))
        page.eval("document.querySelector('#spans-list tbody tr[data-span=\"%s\"]').click()"
                  % FIB_SPAN)
        self.assertIn("main.fibLoop", self.span_drawn(page))
        page.eval("history.back()")
        page.wait_for("document.querySelectorAll('#spans-list tbody tr').length === 2",
                      what="back to the spans")
        page = self.open("view=spans&service=plain&type=cpu&range=1h")
        page.wait_for("!document.getElementById('spans-empty').hidden", what="the empty state")
        self.assertIn("No span links for plain (cpu) in this window", self.text(page, "#spans-empty"))
        self.assertIn("kept for 72 hours", self.text(page, "#spans-empty"))

    # ---- span diff -------------------------------------------------------------------------
    def test_compare_with_its_endpoint_shows_the_span_function_as_top_mover(self):
        page = self.open("view=span&trace_id=%s&span_id=2" % DIFF_TRACE)
        self.assertIn("json", self.span_drawn(page))
        page.click_selector("#span-compare")
        page.wait_for("document.querySelectorAll('#span-movers tbody tr').length > 0",
                      what="the movers")
        first = self.rows(page, "span-movers")[0]
        self.assertEqual(first, ["json", "10.00%", "90.00%", "+80.00 pts"])
        self.assertIn("its endpoint “GET /x”", self.text(page, "#span-diff-summary"))
        self.assertIn("cmp=1", page.eval("location.hash"))
        self.assertTrue(page.eval("document.getElementById('top').hidden"))
        page.screenshot(os.path.join(SHOTS, "span-compare.png"))

    # ---- token and weight ------------------------------------------------------------------
    def test_zz_token_is_never_in_a_url_or_the_history(self):
        # Runs after the others (zz): every tab they opened, plus a walk through the views.
        page = self.open("view=trace&trace_id=" + TRACE)
        page.wait_for("document.querySelectorAll('#trace-spans tbody tr').length === 4")
        page.eval("document.querySelector('#trace-spans tbody tr').click()")
        self.span_drawn(page)
        page.click_selector("#span-compare")
        page.wait_for("document.querySelectorAll('#span-movers tbody tr').length > 0")
        page.eval("history.back()")
        page.wait_for("!document.getElementById('top').hidden")
        history = page.send("Page.getNavigationHistory")["entries"]
        self.assertGreater(len(history), 2)
        seen = [e["url"] for e in history] + [page.eval("location.href")]
        seen += [u for p in self.pages for u in p.requested_urls()]
        self.assertTrue(any("/api/apm/traces/" + TRACE in u for u in seen))
        self.assertEqual([u for u in seen if self.viewer in u
                          or urllib.parse.quote(self.viewer) in u], [])
        self.assertNotIn(self.viewer, page.eval("document.body.innerHTML"))
        outside = [u for u in seen if not u.startswith(self.origin + "/")
                   and not u.startswith(("data:", "blob:", "about:"))]
        self.assertEqual(outside, [])

    def test_page_weight_stays_within_the_budget(self):
        page = self.open("view=trace&trace_id=" + TRACE)
        page.wait_for("document.querySelectorAll('#trace-spans tbody tr').length === 4")
        ids = {p["requestId"]: p["request"]["url"]
               for p in page.events("Network.requestWillBeSent")}
        ui = [p for p in page.events("Network.responseReceived")
              if urllib.parse.urlsplit(ids.get(p["requestId"], "")).path == "/"
              or "/ui/" in ids.get(p["requestId"], "")]
        loaded = {ids[p["requestId"]]: {k.lower(): v for k, v in p["response"]["headers"].items()}
                  ["content-length"] for p in ui}
        weight = sum(int(v) for v in loaded.values())
        self.assertTrue(any(u.endswith("/ui/spans.js") for u in loaded), loaded)
        self.assertTrue(any(u.endswith("/ui/trace.js") for u in loaded), loaded)
        src = os.path.join(os.environ.get("ROOTTRACE_SRC", os.getcwd()), "ui")
        on_disk = sum(os.path.getsize(os.path.join(src, n)) for n in os.listdir(src))
        self.assertEqual(weight, on_disk)  # every file of ui/ is loaded, each once
        self.assertLessEqual(weight, BUDGET, "the page weighs %d bytes" % weight)
        print("page weight: %d bytes of %d" % (weight, BUDGET))


if __name__ == "__main__":
    harness.main()
