# SPDX-License-Identifier: Apache-2.0
# The web UI served by the real collector, driven in Debian's headless Chromium over the
# DevTools protocol: sign-in (token kept out of the URL), the flame graph drawn from real
# uploads, click-to-zoom with breadcrumb, URL and Esc, search's matched share, the top table
# against the API, the diff ranking the product docs' example first, settings written by an
# engineer showing in the audit trail and read-only for a viewer, off-CPU time turned on and
# off from the page, hostile function names shown
# as text, the page's headers (CSP, ETag, 304) and size budget, and no request leaving
# 127.0.0.1. Screenshots of each view go to $ROOTTRACE_BUILD/ui-screenshots/.
import json
import os
import re
import time
import urllib.request

import harness
import pprof_py
from collector_fixture import build_dir
from ui_case import UiCase

SEC = 1000000000
HOUR = 3600
BASE = (int(time.time()) // 86400 - 2) * 86400  # an hour two days ago, clear of "now"
NOW = int(time.time())
BUDGET = 150 * 1024
SRC = os.environ.get("ROOTTRACE_SRC", os.getcwd())
SHOTS = os.path.join(build_dir(), "ui-screenshots")
HOSTILE = '<img src=x onerror="window.__xss=1">'

# The product docs' diff example (docs/api.md, GET /api/apm/profiles/diff): Decode +19.5 pts.
BEFORE = {"main;serve;api/serialize.renderPayload": 1123200000,
          "main;serve;api/serialize.renderPayload;encoding/json.Decode": 631800000,
          "main;serve;api/serialize.renderPayload;encoding/json.Decode;runtime.mallocgc": 421200000,
          "main;serve;handleOther": 4843800000}
AFTER = {"main;serve;api/serialize.renderPayload": 1298880000,
         "main;serve;api/serialize.renderPayload;encoding/json.Decode": 2103300000,
         "main;serve;api/serialize.renderPayload;encoding/json.Decode;runtime.mallocgc": 885600000,
         "main;serve;handleOther": 3092220000}


def cpu(stacks, at):
    return pprof_py.build_gz([(k.split(";"), v) for k, v in stacks.items()],
                             sample_types=(("cpu", "nanoseconds"),),
                             period_type=("cpu", "nanoseconds"), period=10000000,
                             time_nanos=at * SEC, duration_nanos=60 * SEC)


class WebUi(UiCase):
    @classmethod
    def seed(cls, col):
        cls.engineer = cls.fx.create_token("user", role="engineer", name="eng-alice")
        cls.viewer = cls.fx.create_token("user", role="viewer", name="viewer-bob")
        for pb, svc in ((cpu(BEFORE, BASE + 100), "docs"), (cpu(AFTER, BASE + HOUR + 100), "docs"),
                        (cpu(AFTER, NOW - 60), "checkout"),
                        (cpu({"main;" + HOSTILE: 500000000, "main;safe": 100000000}, NOW - 60),
                         "xss")):
            status, body = cls.fx.upload(col, pb, svc, "cpu")
            assert status == 200, body
        status, body = cls.fx.post_json("/api/apm/deployments", col,
                                        {"service": "docs", "version": "v2.4.1",
                                         "time": BASE + HOUR})
        assert status == 201, body
        cls.pages = []

    # ---- helpers ---------------------------------------------------------------------------
    def open(self, token, fragment):
        """A fresh tab signed in with `token` showing `fragment`; waits for the first render."""
        page = self.browser.new_page()
        self.pages.append(page)
        page.goto(self.origin + "/#" + fragment)
        page.wait_for("!document.getElementById('login').hidden", what="the sign-in form")
        page.type("#login-token", token)
        page.click_selector("#login-form button[type=submit]")
        page.wait_for("window.__rt && window.__rt.rendered >= 1", what="the first render")
        self.assertEqual(page.eval("document.getElementById('error').textContent"), "")
        return page

    def rerendered(self, page, before):
        page.wait_for("window.__rt.rendered > %d" % before, what="a render")

    def docs_after(self):
        return "service=docs&type=cpu&range=custom&start=%d&end=%d" % (BASE + HOUR,
                                                                        BASE + 2 * HOUR)

    def open_flame(self, extra=""):
        """The docs service's after window, signed in as the viewer, its bars drawn."""
        page = self.open(self.viewer, self.docs_after() + extra)
        page.wait_for("window.__rt.flame.lastDraw.bars > 0", what="bars drawn")
        return page

    def bar_center(self, page, predicate):
        """Page coordinates of the first drawn bar whose node passes the JS predicate `n => ...`."""
        return page.eval("(() => { const f = window.__rt.flame; const r = f.lastDraw.rects.find("
                         "b => (%s)(f.nodes[b.i])); const c = f.canvas.getBoundingClientRect();"
                         " return [c.x + r.x + Math.min(r.w / 2, 40), c.y + r.y + 9]; })()"
                         % predicate)

    def crumbs(self, page):
        return page.eval("[...document.querySelectorAll('#crumbs button')]"
                         ".map(b => b.textContent)")

    def api(self, path, token, **params):
        status, body = self.fx.get_json(path, token, params=params)
        self.assertEqual(status, 200, body)
        return body

    # ---- delivery ---------------------------------------------------------------------------
    def test_page_and_assets_carry_csp_etag_and_fit_the_size_budget(self):
        files = sorted(os.listdir(os.path.join(SRC, "ui")))
        total = 0
        for name in files:
            path = "/" if name == "index.html" else "/ui/" + name
            with open(os.path.join(SRC, "ui", name), "rb") as f:
                want = f.read()
            total += len(want)
            status, headers, body = self.fx.request("GET", path)
            self.assertEqual((status, body), (200, want), path)
            csp = headers["Content-Security-Policy"]
            for directive in ("default-src 'none'", "script-src 'self'", "connect-src 'self'",
                              "frame-ancestors 'none'"):
                self.assertIn(directive, csp)
            self.assertNotIn("unsafe-inline", csp)
            self.assertNotIn("http", csp)  # no other origin allowed anywhere
            self.assertEqual(headers["X-Content-Type-Options"], "nosniff")
            etag = headers["ETag"]
            status, headers2, body = self.fx.request("GET", path, headers={"If-None-Match": etag})
            self.assertEqual((status, body), (304, b""), path)
            self.assertEqual(headers2["ETag"], etag)
        self.assertLessEqual(total, BUDGET, "the UI is %d bytes" % total)
        self.assertIn("app.js", files)
        status, _, _ = self.fx.request("GET", "/ui/missing.js")
        self.assertEqual(status, 404)

    def test_no_inline_script_or_style_in_the_page(self):
        with open(os.path.join(SRC, "ui", "index.html")) as f:
            html = f.read()
        self.assertEqual(re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", html), [])
        self.assertNotIn(" style=", html)
        self.assertNotRegex(html, r"\son[a-z]+=")  # no inline event handlers
        self.assertNotRegex(html, r"(src|href)=\"(https?:)?//")

    # ---- flame graph --------------------------------------------------------------------------
    def test_sign_in_keeps_the_token_out_of_the_url_and_draws_the_flame_graph(self):
        page = self.open_flame()
        drawn = page.eval("window.__rt.flame.lastDraw.names")
        for name in ("root", "main", "serve", "api/serialize.renderPayload",
                     "encoding/json.Decode", "runtime.mallocgc", "handleOther"):
            self.assertIn(name, drawn)
        self.assertEqual(page.eval("window.__rt.flame.lastDraw.bars"), 7)
        self.assertNotIn(self.viewer, page.eval("location.href"))
        self.assertEqual(page.eval("sessionStorage.getItem('roottrace.token')"), self.viewer)
        caption = page.eval("document.getElementById('caption').textContent")
        self.assertIn("CPU time of docs in nanoseconds", caption)
        self.assertIn("3600 s, whole 5-minute buckets", caption)
        self.assertIn("deployment all", caption)
        page.screenshot(os.path.join(SHOTS, "flame.png"))
        self.assertEqual(page.console_errors(), [])
        # Dark theme (prefers-color-scheme): page and bars follow it; a name keeps its hue.
        light = page.eval("window.__rt.flame.colour(window.__rt.flame.nodes[1], false)")
        page.send("Emulation.setEmulatedMedia",
                  {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
        page.eval("window.__rt.flame.draw()")
        self.assertEqual(page.eval("getComputedStyle(document.body).backgroundColor"),
                         "rgb(21, 23, 27)")
        dark = page.eval("window.__rt.flame.colour(window.__rt.flame.nodes[1], false)")
        self.assertNotEqual(light, dark)
        self.assertEqual(light.split(",")[0], dark.split(",")[0])  # same hue
        page.screenshot(os.path.join(SHOTS, "flame-dark.png"))

    def test_click_zooms_with_breadcrumb_and_url_and_esc_goes_back(self):
        page = self.open_flame()
        page.click(*self.bar_center(page, "n => n.name === 'encoding/json.Decode'"))
        page.wait_for("document.querySelectorAll('#crumbs button').length === 5")
        self.assertEqual(self.crumbs(page), ["root", "main", "serve",
                                             "api/serialize.renderPayload",
                                             "encoding/json.Decode"])
        zoom = page.eval("new URLSearchParams(location.hash.slice(1)).get('zoom')")
        self.assertEqual(json.loads(zoom), ["main", "serve", "api/serialize.renderPayload",
                                            "encoding/json.Decode"])
        # The zoomed node spans the width; its ancestors are drawn too (muted), full width.
        width = page.eval("window.__rt.flame.pane.clientWidth")
        rects = page.eval("window.__rt.flame.lastDraw.rects.map(r => [window.__rt.flame.nodes[r.i]"
                          ".name, Math.round(r.w)])")
        self.assertIn(["encoding/json.Decode", width], rects)
        self.assertIn(["root", width], rects)
        self.assertNotIn("handleOther", [n for n, _ in rects])  # outside the zoomed subtree
        page.screenshot(os.path.join(SHOTS, "flame-zoomed.png"))
        page.eval("window.__rt.flame.canvas.focus()")
        page.key("Escape")
        page.wait_for("document.querySelectorAll('#crumbs button').length < 5")
        self.assertEqual(self.crumbs(page)[-1], "api/serialize.renderPayload")
        # The URL reproduces the screen: a new tab opened at it shows the same zoom.
        url_fragment = page.eval("location.hash.slice(1)")
        again = self.open(self.viewer, url_fragment)
        again.wait_for("document.querySelectorAll('#crumbs button').length === 4")

    def test_search_reports_the_matched_share_of_the_total(self):
        page = self.open_flame()
        page.type("#search", "json.Decode")
        page.wait_for("document.getElementById('matched').textContent.includes('matched')")
        # Decode's total share in the after window: (2103.3 + 885.6) / 7380 ms = 40.50%.
        self.assertEqual(page.eval("document.getElementById('matched').textContent"),
                         "matched: 40.50% of total")
        rows = page.eval("[...document.querySelectorAll('#top tbody tr')].map(r => r.dataset.name)")
        self.assertEqual(rows, ["encoding/json.Decode"])
        page.eval("(() => { const s = document.getElementById('search'); s.value = '';"
                  " s.dispatchEvent(new Event('input')); })()")
        page.type("#search", "/^(runtime|main)$/")
        page.wait_for("document.getElementById('matched').textContent.includes('100.00')")
        self.assertIn("q=%2F%5E%28runtime", page.eval("location.hash"))

    def test_top_table_numbers_equal_the_api(self):
        page = self.open(self.viewer, self.docs_after())
        page.wait_for("document.querySelectorAll('#top tbody tr').length > 0")
        top = self.api("/api/apm/profiles/top", self.viewer, service="docs", profile_type="cpu",
                       start=BASE + HOUR, end=BASE + 2 * HOUR, limit=1000)
        cost = self.api("/api/apm/profiles/cost", self.viewer, service="docs",
                        profile_type="cpu", start=BASE + HOUR, end=BASE + 2 * HOUR, limit=1000)
        rows = page.eval("[...document.querySelectorAll('#top tbody tr')]"
                         ".map(r => [...r.cells].map(c => c.textContent))")
        self.assertEqual([r[0] for r in rows], [f["name"] for f in top["functions"]])
        hours = {f["name"]: f["vcpu_hours_per_month"] for f in cost["cost"]["functions"]}
        for row, f in zip(rows, top["functions"]):
            self.assertTrue(row[1].endswith(" · %.2f%%" % f["self_share"]), (row, f))
            self.assertTrue(row[2].endswith(" · %.2f%%" % f["total_share"]), (row, f))
            h = hours.get(f["name"])  # cost lists functions with self time only
            self.assertEqual(row[3], "–" if h is None else "%.1f" % h if h >= 10 else "%.3f" % h)
        # Sorting by total puts main (100%) first; a click on a row highlights its bars.
        page.click_selector("#top th[data-sort=total]")
        self.assertEqual(page.eval("document.querySelector('#top tbody tr').dataset.name"),
                         "main")
        page.click_selector("#top tbody tr[data-name='runtime.mallocgc']")
        page.wait_for("document.getElementById('matched').textContent.includes('selected')")
        self.assertIn("matched: 12.00% of total",
                      page.eval("document.getElementById('matched').textContent"))

    def test_timeline_adds_up_to_the_window_and_marks_the_deploy(self):
        page = self.open_flame()
        page.wait_for("window.__rt.timeline.points.length > 0", what="the timeline")
        points = page.eval("window.__rt.timeline.points")
        self.assertEqual(len(points), 12)  # one hour: 12 whole five-minute slices
        self.assertEqual(points[0]["start"], BASE + HOUR)
        self.assertEqual(points[-1]["end"], BASE + 2 * HOUR)
        self.assertEqual(sum(p["total"] for p in points), 7380000000)
        self.assertEqual(points[0]["total"], 7380000000)  # the upload's bucket
        self.assertEqual(page.eval("window.__rt.timeline.markers.map(m => m.version)"),
                         ["v2.4.1"])
        x, y = page.center("#timeline")
        left = page.eval("document.getElementById('timeline').getBoundingClientRect().x")
        page.click(left + 1, y)  # the marker sits at the window's start
        page.wait_for("document.querySelectorAll('#movers tbody tr').length > 0")
        self.assertIn("anchor=%d" % (BASE + HOUR), page.eval("location.hash"))

    def test_keyboard_moves_between_bars_and_enter_zooms(self):
        page = self.open_flame()
        page.eval("window.__rt.flame.canvas.focus()")
        focus = "window.__rt.flame.nodes[window.__rt.flame.focus].name"
        for key, want in (("ArrowDown", "main"), ("ArrowDown", "serve"),
                          ("ArrowDown", "api/serialize.renderPayload"),
                          ("ArrowRight", "handleOther"), ("ArrowLeft", "api/serialize.renderPayload"),
                          ("ArrowUp", "serve")):
            page.key(key)
            self.assertEqual(page.eval(focus), want, key)
        page.key("ArrowDown")
        page.key("Enter")
        page.wait_for("document.querySelectorAll('#crumbs button').length === 4")
        self.assertEqual(self.crumbs(page)[-1], "api/serialize.renderPayload")

    def test_first_paint_lays_out_only_drawable_bars_and_the_rest_on_demand(self):
        page = self.open_flame()
        r = page.eval("""(() => {
          const f = window.__rt.flame, tiny = [];
          for (let i = 0; i < 3000; i++)
            tiny.push({name: 'tiny' + i, self: 0, total: 1, children: [{name: 'leaf', self: 1, total: 1}]});
          const big = {name: 'big', self: 0, total: 1e6, children: [{name: 'bigkid', self: 1e6, total: 1e6}]};
          f.setTree({name: 'root', self: 0, total: 1e6 + 3000, children: [big, ...tiny]}, {unit: 'count'});
          f.zoomTo(0, false);
          const first = {partial: f.partial, laid: f.nodes.length, bars: f.lastDraw.bars};
          const i = f.find(['tiny7', 'leaf']);
          f.zoomTo(0, false);
          return {first, partial: f.partial, laid: f.nodes.length, name: f.nodes[i].name,
                  path: f.path(i), bars: f.lastDraw.bars};
        })()""")
        self.assertEqual(r["first"], {"partial": True, "laid": 3, "bars": 3})
        self.assertEqual([r["partial"], r["laid"], r["name"], r["path"]],
                         [False, 1 + 2 + 6000, "leaf", ["tiny7", "leaf"]])
        self.assertEqual(r["bars"], 3)  # the tiny bars stay under half a pixel: the same picture

    def test_folded_other_bar_is_labelled_and_clicking_it_fetches_more_detail(self):
        page = self.open_flame("&nodes=4")
        self.assertTrue(page.eval("window.__rt.flameData.folded"))
        self.assertIn("other", page.eval("window.__rt.flame.lastDraw.names"))
        self.assertIn("“other”", page.eval("document.getElementById('folded-note').textContent"))
        before = page.eval("window.__rt.rendered")
        page.click(*self.bar_center(page, "n => n.folded"))
        self.rerendered(page, before)
        self.assertEqual(page.eval("new URLSearchParams(location.hash.slice(1)).get('nodes')"),
                         "16")
        self.assertFalse(page.eval("window.__rt.flameData.folded"))
        self.assertEqual(page.eval("window.__rt.flame.nodes.length"), 7)

    def test_sandwich_merges_callers_and_callees_of_a_function(self):
        page = self.open(self.viewer, self.docs_after())
        page.wait_for("document.querySelectorAll('#top tbody tr').length > 0")
        page.click_selector("#top tbody tr[data-name='encoding/json.Decode']")
        page.click_selector("#sandwich-toggle")
        page.wait_for("window.__rt.sandwich.callees.lastDraw.bars > 0")
        self.assertIn("sw=encoding%2Fjson.Decode", page.eval("location.hash"))
        callers = page.eval("window.__rt.sandwich.callers.nodes.map(n => [n.name, n.total])")
        self.assertEqual([n for n, _ in callers], ["encoding/json.Decode",
                                                   "api/serialize.renderPayload", "serve",
                                                   "main", "root"])
        self.assertEqual({t for _, t in callers}, {2988900000})
        callees = page.eval("window.__rt.sandwich.callees.nodes.map(n => [n.name, n.total])")
        self.assertEqual(callees, [["encoding/json.Decode", 2988900000],
                                   ["runtime.mallocgc", 885600000]])
        self.assertFalse(page.eval("window.__rt.sandwich.callers.icicle"))  # callers above
        page.screenshot(os.path.join(SHOTS, "sandwich.png"))

    def test_speedscope_export_follows_the_file_format(self):
        page = self.open_flame()
        doc = page.eval("(async () => { const m = await import('/ui/exports.js');"
                        " const api = await import('/ui/api.js');"
                        " const p = new URLSearchParams({service: 'docs', profile_type: 'cpu',"
                        " start: '%d', end: '%d'});"
                        " const folded = await api.get('/api/apm/profiles/collapsed',"
                        " Object.fromEntries(p), {as: 'text'});"
                        " return m.speedscope(folded, 'docs.cpu', 'nanoseconds'); })()"
                        % (BASE + HOUR, BASE + 2 * HOUR))
        self.assertEqual(doc["$schema"], "https://www.speedscope.app/file-format-schema.json")
        prof = doc["profiles"][0]
        self.assertEqual((prof["type"], prof["unit"]), ("sampled", "nanoseconds"))
        self.assertEqual(sum(prof["weights"]), 7380000000)
        self.assertEqual(prof["endValue"], 7380000000)
        names = [f["name"] for f in doc["shared"]["frames"]]
        decode = [w for s, w in zip(prof["samples"], prof["weights"])
                  if names[s[-1]] == "encoding/json.Decode"]
        self.assertEqual(decode, [2103300000])

    def test_pprof_and_folded_downloads_hold_the_window_on_screen(self):
        downloads = os.path.join(self.fx.tmp, "downloads")
        os.makedirs(downloads)
        self.browser.send("Browser.setDownloadBehavior", {"behavior": "allow",
                                                          "downloadPath": downloads})
        page = self.open_flame()
        for kind, name in (("pprof", "docs.cpu.pb.gz"), ("folded", "docs.cpu.folded.txt")):
            page.click_selector("[data-export=%s]" % kind)
            path = os.path.join(downloads, name)
            deadline = time.time() + 30
            while not os.path.exists(path) and time.time() < deadline:
                time.sleep(0.1)
            self.assertTrue(os.path.exists(path), os.listdir(downloads))
        prof = pprof_py.parse(open(os.path.join(downloads, "docs.cpu.pb.gz"), "rb").read())
        self.assertEqual(prof.sample_types, [("cpu", "nanoseconds")])
        self.assertEqual(sum(s.values[0] for s in prof.samples), 7380000000)
        with open(os.path.join(downloads, "docs.cpu.folded.txt")) as f:
            lines = f.read().splitlines()
        self.assertIn("main;serve;api/serialize.renderPayload;encoding/json.Decode 2103300000",
                      lines)

    def test_hostile_function_names_are_shown_as_text(self):
        page = self.open(self.viewer, "service=xss&type=cpu&range=1h")
        page.wait_for("document.querySelectorAll('#top tbody tr').length === 3")
        names = page.eval("[...document.querySelectorAll('#top tbody td.name')]"
                          ".map(c => c.textContent)")
        self.assertIn(HOSTILE, names)
        self.assertEqual(page.eval("document.querySelectorAll('img').length"), 0)
        self.assertIsNone(page.eval("window.__xss"))
        self.assertIn(HOSTILE, page.eval("window.__rt.flame.lastDraw.names"))
        page.type("#search", HOSTILE)
        page.wait_for("document.getElementById('matched').textContent.includes('83.33')")
        self.assertIsNone(page.eval("window.__xss"))

    # ---- diff, deployments --------------------------------------------------------------------
    def test_diff_ranks_the_docs_example_first(self):
        frag = ("service=docs&type=cpu&view=diff&dmode=explicit&bs=%d&be=%d&as=%d&ae=%d"
                % (BASE, BASE + HOUR, BASE + HOUR, BASE + 2 * HOUR))
        page = self.open(self.viewer, frag)
        page.wait_for("document.querySelectorAll('#movers tbody tr').length > 0")
        first = page.eval("[...document.querySelector('#movers tbody tr').cells]"
                          ".map(c => c.textContent)")
        self.assertEqual(first, ["encoding/json.Decode", "9.00%", "28.50%", "+19.50 pts"])
        summary = page.eval("document.getElementById('diff-summary').textContent")
        self.assertIn("(+5.1%)", summary)
        self.assertIn("v2.4.1", summary)  # the deploy marker between the windows
        page.wait_for("window.__rt.diff.graph.lastDraw.bars === 7", what="the diff flame graph")
        delta = page.eval("window.__rt.diff.graph.nodes.find(n => n.name === "
                          "'encoding/json.Decode').delta")
        self.assertAlmostEqual(delta, 40.5 - 15.0, places=6)  # total share points
        page.screenshot(os.path.join(SHOTS, "diff.png"))

    def test_deployments_view_lists_the_marker_and_links_the_diff_around_it(self):
        page = self.open(self.viewer, "service=docs&type=cpu&view=deployments")
        page.wait_for("document.querySelectorAll('#deploys tbody button').length === 1")
        self.assertIn("v2.4.1", page.eval("document.querySelector('#deploys tbody').textContent"))
        page.screenshot(os.path.join(SHOTS, "deployments.png"))
        page.click_selector("#deploys tbody button")
        page.wait_for("document.querySelectorAll('#movers tbody tr').length > 0")
        self.assertIn("anchor=%d" % (BASE + HOUR), page.eval("location.hash"))

    # ---- settings -------------------------------------------------------------------------------
    def test_settings_change_by_an_engineer_shows_in_the_audit_trail(self):
        page = self.open(self.engineer, "view=settings")
        page.wait_for("document.getElementById('settings-role').textContent.includes('can change')")
        page.type("#svc-form input[name=service]", "checkout")
        page.eval("document.querySelector('#svc-form select[name=enabled]').value = 'true'")
        page.type("#svc-form input[name=sample_rate_hz]", "150")
        page.click_selector("#svc-form button[type=submit]")
        page.wait_for("document.querySelectorAll('#audit tbody tr').length === 1",
                      what="the audit event")
        row = page.eval("[...document.querySelector('#audit tbody tr').cells]"
                        ".map(c => c.textContent)")
        self.assertEqual(row[1:3], ["eng-alice", "checkout"])
        self.assertEqual(json.loads(row[4])["sample_rate_hz"], 150)
        audit = self.api("/api/apm/audit", self.engineer)["events"]
        self.assertEqual(audit[0]["after"]["sample_rate_hz"], 150)
        cfg = self.api("/api/apm/config", self.viewer, service="checkout")
        self.assertEqual((cfg["enabled"], cfg["sample_rate_hz"]), (True, 150))
        page.screenshot(os.path.join(SHOTS, "settings.png"))

    def test_settings_offcpu_time_turned_on_for_the_environment_and_a_service(self):
        """Runs after the change test (name order): audit events are counted from here."""
        page = self.open(self.engineer, "view=settings")
        page.wait_for("document.getElementById('settings-role').textContent.includes('can change')")
        self.assertFalse(page.eval("document.querySelector('#env-form input[name=offcpu_enabled]')"
                                   ".checked"))
        n = len(self.api("/api/apm/audit", self.engineer)["events"])
        page.eval("document.querySelector('#env-form input[name=offcpu_enabled]').click()")
        page.click_selector("#env-form button[type=submit]")
        page.wait_for("document.querySelectorAll('#audit tbody tr').length === %d" % (n + 1),
                      what="the environment's audit event")
        ev = self.api("/api/apm/audit", self.engineer)["events"][0]
        self.assertIsNone(ev["service"])
        self.assertFalse((ev["before"] or {}).get("offcpu_enabled"))
        self.assertIs(ev["after"]["offcpu_enabled"], True)
        self.assertIs(self.api("/api/apm/config", self.viewer)["offcpu_enabled"], True)
        self.assertTrue(page.eval("document.querySelector('#env-form input[name=offcpu_enabled]')"
                                  ".checked"))
        # a service turns it off against the environment, then back to inherit
        page.type("#svc-form input[name=service]", "search")
        page.eval("document.querySelector('#svc-form select[name=offcpu_enabled]').value = 'false'")
        page.click_selector("#svc-form button[type=submit]")
        page.wait_for("document.querySelectorAll('#audit tbody tr').length === %d" % (n + 2),
                      what="the service's audit event")
        ev = self.api("/api/apm/audit", self.engineer)["events"][0]
        self.assertEqual((ev["service"], ev["after"]["offcpu_enabled"]), ("search", False))
        cfg = self.api("/api/apm/config", self.viewer, service="search")
        self.assertIs(cfg["offcpu_enabled"], False)
        row = page.eval("[...document.querySelectorAll('#svc-settings tbody tr')].map(r =>"
                        " [...r.cells].map(c => c.textContent)).find(r => r[0] === 'search')")
        self.assertEqual(row[4], "off")
        page.eval("document.querySelector('#svc-form select[name=offcpu_enabled]').value = ''")
        page.click_selector("#svc-form button[type=submit]")
        page.wait_for("document.querySelectorAll('#audit tbody tr').length === %d" % (n + 3),
                      what="the inherit audit event")
        ev = self.api("/api/apm/audit", self.engineer)["events"][0]
        self.assertIsNone(ev["after"]["offcpu_enabled"])
        self.assertIs(self.api("/api/apm/config", self.viewer, service="search")
                      ["offcpu_enabled"], True)

    def test_settings_are_read_only_for_a_viewer(self):
        page = self.open(self.viewer, "view=settings")
        page.wait_for("document.getElementById('settings-role').textContent.includes('Read-only')")
        enabled = page.eval("[...document.querySelectorAll('#view-settings form input,"
                            " #view-settings form button')].filter(e => !e.disabled).length")
        self.assertEqual(enabled, 0)
        self.assertEqual(page.eval("document.getElementById('env-name').textContent"),
                         "production")

    # ---- network ----------------------------------------------------------------------------------
    def test_zz_no_request_left_127_0_0_1_and_no_csp_violation(self):
        # Runs last (zz): every tab the other tests opened, every request it made.
        self.assertGreater(len(self.pages), 5)
        urls = [u for p in self.pages for u in p.requested_urls()]
        self.assertTrue(any("/api/apm/profiles/flamegraph" in u for u in urls), urls)
        outside = [u for u in urls if not u.startswith(self.origin + "/")
                   and not u.startswith(("data:", "blob:", "about:"))]
        self.assertEqual(outside, [])
        self.assertFalse(any(self.viewer in u or self.engineer in u for u in urls))
        errors = [e for p in self.pages for e in p.console_errors()]
        self.assertEqual([e for e in errors if "Content Security Policy" in e], [])


if __name__ == "__main__":
    harness.main()
