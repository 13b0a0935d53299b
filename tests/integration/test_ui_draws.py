# SPDX-License-Identifier: Apache-2.0
# The web UI fetches, lays out and draws the flame graph once per user action: a page load, a
# service change, a window change and a back navigation (popstate) each make one request of
# /api/apm/profiles/flamegraph (counted from the browser's own network events), one layout
# (FlameGraph.layouts) and one paint of the flame canvas (counted by the canvas's 2D context,
# wrapped before the page's scripts run); and the answer of an older render, held back by the
# browser until a newer render has drawn, is never drawn over it. Real collector, real
# headless Chromium.
import json
import time

import harness
from chromium import CdpError
from test_ui import BASE, HOUR, NOW, cpu  # its CPU profile builder and its clock
from ui_case import UiCase
FLAMEGRAPH = "/api/apm/profiles/flamegraph?"

# Before the page's own scripts: every paint of a canvas (one clearRect per draw) by canvas id,
# and the fetches and JSON bodies still in flight. A fetch or body counts as in flight until a
# task after it settles, so the page's own continuations (the draw, the next fetches) have run
# by the time `pending` is back to 0.
PROBE = r"""(() => {
  const probe = window.__probe = { pending: 0, paints: {} };
  const track = (p) => {
    probe.pending++;
    const done = () => setTimeout(() => probe.pending--, 0);
    p.then(done, done);
    return p;
  };
  const fetch0 = window.fetch;
  window.fetch = function () { return track(fetch0.apply(this, arguments)); };
  const json0 = Response.prototype.json;
  Response.prototype.json = function () { return track(json0.call(this)); };
  const clear0 = CanvasRenderingContext2D.prototype.clearRect;
  CanvasRenderingContext2D.prototype.clearRect = function () {
    probe.paints[this.canvas.id] = (probe.paints[this.canvas.id] || 0) + 1;
    return clear0.apply(this, arguments);
  };
})();"""


def stacks(work):
    return {"main;serve;" + work: 700000000, "main;serve;" + work + ";runtime.mallocgc": 200000000,
            "main;idle": 100000000}


class FlameGraphDrawnOncePerAction(UiCase):
    @classmethod
    def seed(cls, col):
        cls.viewer = cls.fx.create_token("user", role="viewer")
        for svc in ("docs", "checkout"):
            for at in (BASE + HOUR + 100, NOW - 60):
                status, body = cls.fx.upload(col, cpu(stacks(svc + "Work"), at), svc, "cpu")
                assert status == 200, body

    # ---- helpers ---------------------------------------------------------------------------
    def open(self, fragment):
        """A fresh tab with the probe, signed in at `fragment`, settled after its first render."""
        page = self.browser.new_page()
        page.send("Page.addScriptToEvaluateOnNewDocument", {"source": PROBE})
        page.goto(self.origin + "/#" + fragment)
        page.wait_for("!document.getElementById('login').hidden", what="the sign-in form")
        page.type("#login-token", self.viewer)
        page.click_selector("#login-form button[type=submit]")
        page.wait_for("window.__rt && window.__rt.rendered >= 1", what="the first render")
        self.settle(page)
        return page

    def settle(self, page):
        """No fetch or body in flight, then two frames (a resize observer's redraw included)."""
        page.wait_for("window.__probe.pending === 0", what="no request in flight")
        page.eval("new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok)))")
        page.wait_for("window.__probe.pending === 0", what="no request in flight")

    def counts(self, page):
        c = page.eval("({paints: window.__probe.paints.flame || 0,"
                      " layouts: window.__rt.flame.layouts ?? null,"
                      " fetches: window.__rt.flameFetches ?? null,"
                      " rendered: window.__rt.rendered})")
        c["requests"] = sum(FLAMEGRAPH in u for u in page.requested_urls())
        return c

    def assert_once(self, page, before, service, what):
        after = self.counts(page)
        delta = {k: None if after[k] is None else after[k] - before.get(k, 0) for k in after}
        self.assertEqual(delta, {"requests": 1, "fetches": 1, "layouts": 1, "paints": 1,
                                 "rendered": 1}, what)
        self.assert_shows(page, service)

    def assert_shows(self, page, service):
        self.assertEqual(page.eval("window.__rt.flameData.service"), service)
        self.assertIn(service + "Work", page.eval("window.__rt.flame.lastDraw.names"))
        self.assertIn(" of %s in " % service,
                      page.eval("document.getElementById('caption').textContent"))
        self.assertEqual(page.eval("document.getElementById('error').textContent"), "")

    def change(self, page, select, value):
        page.eval("(() => { const s = document.getElementById(%s); s.value = %s;"
                  " s.dispatchEvent(new Event('change')); })()"
                  % (json.dumps(select), json.dumps(value)))

    # ---- cases -------------------------------------------------------------------------------
    def test_load_service_window_and_back_each_fetch_lay_out_and_draw_once(self):
        page = self.open("service=docs&type=cpu&range=custom&start=%d&end=%d"
                         % (BASE + HOUR, BASE + 2 * HOUR))
        self.assert_once(page, {}, "docs", "page load")
        for select, value, service in (("service", "checkout", "checkout"),
                                       ("range", "6h", "checkout")):
            before = self.counts(page)
            self.change(page, select, value)
            page.wait_for("window.__rt.rendered > %d" % before["rendered"])
            self.settle(page)
            self.assert_once(page, before, service, select + " change")
        self.assertIn("range=6h", page.eval("location.hash"))
        before = self.counts(page)
        page.eval("history.back()")  # to the custom window of checkout
        page.wait_for("window.__rt.rendered > %d" % before["rendered"])
        self.settle(page)
        self.assert_once(page, before, "checkout", "popstate")
        self.assertIn("range=custom", page.eval("location.hash"))
        self.assertEqual(page.eval("window.__rt.flameData.window.start"), BASE + HOUR)
        self.assertEqual(page.console_errors(), [])

    def test_a_window_resize_redraws_once_without_fetching(self):
        page = self.open("service=docs&type=cpu&range=1h")
        before = self.counts(page)
        page.send("Emulation.setDeviceMetricsOverride",
                  {"width": 1100, "height": 800, "deviceScaleFactor": 1, "mobile": False})
        page.wait_for("window.__probe.paints.flame > %d" % before["paints"], what="a redraw")
        self.settle(page)
        after = self.counts(page)
        self.assertEqual([after[k] - before[k] for k in ("requests", "paints")], [0, 1])
        self.assertEqual(after["layouts"], before["layouts"])
        self.assertEqual(page.eval("window.__rt.flame.canvas.width"),
                         page.eval("window.__rt.flame.pane.clientWidth"))

    def test_a_slow_older_answer_is_never_drawn_over_a_newer_one(self):
        page = self.open("service=checkout&type=cpu&range=1h")
        # The browser holds back the flame graph of docs: the older render waits on it.
        page.send("Fetch.enable", {"patterns": [{"urlPattern": "*" + FLAMEGRAPH + "service=docs&*",
                                                 "requestStage": "Request"}]})
        try:
            self.change(page, "service", "docs")
            deadline = time.time() + 30
            while not page.events("Fetch.requestPaused"):
                self.assertLess(time.time(), deadline, "the docs request was not held")
                time.sleep(0.05)
            held = page.events("Fetch.requestPaused")[0]["requestId"]
            before = page.eval("window.__rt.rendered")
            self.change(page, "service", "checkout")  # the newer render
            page.wait_for("window.__rt.rendered > %d" % before, what="the newer render")
            self.settle_except_held(page)
            self.assert_shows(page, "checkout")
            drawn = page.eval("window.__probe.paints.flame")
            try:  # now the older answer arrives (unless the page has cancelled the request)
                page.send("Fetch.continueRequest", {"requestId": held})
            except CdpError:
                pass
            self.settle(page)
        finally:
            page.send("Fetch.disable")
        self.assert_shows(page, "checkout")
        self.assertEqual(page.eval("document.getElementById('service').value"), "checkout")
        self.assertEqual(page.eval("window.__probe.paints.flame"), drawn)
        self.assertEqual(page.eval("window.__rt.rendered"), before + 1)

    def settle_except_held(self, page):
        """Settled but for the one held request, if the page still waits on it."""
        page.wait_for("window.__probe.pending <= 1", what="only the held request in flight")
        page.eval("new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok)))")


if __name__ == "__main__":
    harness.main()
