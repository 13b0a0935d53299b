# SPDX-License-Identifier: Apache-2.0
# The web UI's lines view (issue 32), in headless Chromium against the real collector: "Lines"
# on a selected top-table row, or on the flame graph frame zoomed to, shows that function's
# self time by file and line as GET /api/apm/profiles/lines answers it, with the source line
# from the collector's --source-dir, and the share with no line and why; the URL keeps it.
import os
import time

import harness
import pprof_py
from collector_fixture import build_dir
from ui_case import UiCase

SEC = 1000000000
NOW = int(time.time())
SRC_DIR = os.path.join(build_dir(), "tests", "ui-lines-src")
HOT = "app/render.Page"
SOURCE = "package render\n\nfunc Page() {\n\tfor i := range rows {\n\t\tout = append(out, fmt(i))\n\t}\n}\n"


def profile():
    samples = [(["main", "serve", (HOT, "/ci/build/app/render/page.go", 5)], 6 * SEC),
               (["main", "serve", (HOT, "/ci/build/app/render/page.go", 4)], 2 * SEC),
               (["main", "serve", HOT], 2 * SEC),  # no line: 20 %
               (["main", ("serve", "/ci/build/app/serve.go", 9)], 1 * SEC)]
    return pprof_py.build(samples, sample_types=(("cpu", "nanoseconds"),),
                          period_type=("cpu", "nanoseconds"), period=10000000,
                          time_nanos=(NOW - 60) * SEC)


class LinesUi(UiCase):
    serve_args = ("--source-dir", SRC_DIR)

    @classmethod
    def seed(cls, col):
        os.makedirs(os.path.join(SRC_DIR, "app", "render"), exist_ok=True)
        with open(os.path.join(SRC_DIR, "app", "render", "page.go"), "w") as f:
            f.write(SOURCE)
        cls.viewer = cls.fx.create_token("user", role="viewer")
        status, body = cls.fx.upload(col, profile(), "web", "cpu")
        assert status == 200, body

    def open(self):
        page = self.browser.new_page()
        page.goto(self.origin + "/#service=web&type=cpu&range=1h")
        page.wait_for("!document.getElementById('login').hidden", what="the sign-in form")
        page.type("#login-token", self.viewer)
        page.click_selector("#login-form button[type=submit]")
        # the whole first render (the timeline below the pickers comes last and moves the
        # page down): coordinates read before it would miss
        page.wait_for("window.__rt && window.__rt.rendered >= 1", what="the first render")
        page.wait_for("window.__rt.flame.lastDraw.bars > 0", what="bars drawn")
        return page

    def shown_rows(self, page):
        page.wait_for("window.__rt.linesShown > 0 && !document.getElementById('lines').hidden",
                      what="the lines view")
        return page.eval("[...document.querySelectorAll('#lines-table tbody tr')]"
                         ".map(tr => [...tr.cells].map(td => td.textContent))")

    def test_lines_of_a_top_table_row_with_source_text_and_the_no_line_share(self):
        page = self.open()
        self.assertTrue(page.eval("document.getElementById('lines-toggle').disabled"))
        page.click_selector("#top tbody tr[data-name='%s']" % HOT)
        page.click_selector("#lines-toggle")
        rows = self.shown_rows(page)
        self.assertEqual(rows, [
            ["/ci/build/app/render/page.go:5", "6.00 s · 60.00%", "\t\tout = append(out, fmt(i))"],
            ["/ci/build/app/render/page.go:4", "2.00 s · 20.00%", "\tfor i := range rows {"]])
        status, api = self.fx.get_json("/api/apm/profiles/lines", self.viewer, params={
            "service": "web", "profile_type": "cpu", "time_range": "1h", "function": HOT})
        self.assertEqual(status, 200, api)
        self.assertEqual([(l["line"], l["self"]) for l in api["lines"]], [(5, 6 * SEC), (4, 2 * SEC)])
        note = page.eval("document.getElementById('lines-note').textContent")
        self.assertIn("20.00% upload carried no lines", note)
        self.assertIn("ln=app%2Frender.Page", page.eval("location.hash"))
        self.assertTrue(page.eval("document.getElementById('graph-pane').hidden"))
        page.screenshot(os.path.join(build_dir(), "ui-screenshots", "lines.png"))
        page.click_selector("#lines-toggle")  # back to the flame graph
        page.wait_for("!document.getElementById('graph-pane').hidden")
        self.assertTrue(page.eval("document.getElementById('lines').hidden"))
        self.assertEqual(page.console_errors(), [])

    def test_lines_of_the_zoomed_flame_graph_frame(self):
        page = self.open()
        xy = page.eval("(() => { const f = window.__rt.flame; const r = f.lastDraw.rects.find("
                       "b => f.nodes[b.i].name === 'serve'); const c = f.canvas"
                       ".getBoundingClientRect(); return [c.x + r.x + Math.min(r.w / 2, 40),"
                       " c.y + r.y + 9]; })()")
        page.click(*xy)
        page.wait_for("!document.getElementById('lines-toggle').disabled", what="a zoomed frame")
        page.click_selector("#lines-toggle")
        rows = self.shown_rows(page)
        self.assertEqual([r[0] for r in rows], ["/ci/build/app/serve.go:9"])
        self.assertEqual(rows[0][2], "")  # serve.go is not under the source dir
        self.assertIn("ln=serve", page.eval("location.hash"))

    def test_a_deep_link_opens_the_lines_view(self):
        page = self.browser.new_page()
        page.goto(self.origin + "/#service=web&type=cpu&range=1h&ln=" + HOT.replace("/", "%2F"))
        page.wait_for("!document.getElementById('login').hidden", what="the sign-in form")
        page.type("#login-token", self.viewer)
        page.click_selector("#login-form button[type=submit]")
        rows = self.shown_rows(page)
        self.assertEqual(len(rows), 2)


harness.main()
