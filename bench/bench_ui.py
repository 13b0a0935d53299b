# SPDX-License-Identifier: Apache-2.0
# The web UI's flame graph in Debian's headless Chromium (tests/lib/chromium.py), on profiles
# ingested by the real collector: a tree of 100,000 distinct nodes, and 1,000,000 samples
# (100 Hz) spread over another 120,000-node tree, both read back with max_nodes=1000000 (nothing
# folded). Per profile: data received -> first paint (JSON.parse, then layout, draw and the
# next frame), the rest of the layout after the paint,
# redraw after a zoom (median over zooms in and back out), and the page's JS heap. Then the
# same pprof (the collector's export) in `go tool pprof -http`'s flame graph in the same
# browser: its page's response end -> load and next frame, and its JS heap. Last, the app's own
# path: a back navigation (popstate) to the same profile with max_nodes=1000000, and the
# FlameGraph layouts and draws it made until the page was idle, with their main-thread time.
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import pprof_py
from chromium import Chromium
from collector_fixture import Collector

SEC = 1000000000
PERIOD = 10000000  # 100 Hz


def random_tree(rnd, n_nodes):
    """[(frames root first, self value)] for a tree of n_nodes distinct call paths."""
    names = ["pkg%d/sub.Func%d" % (i % 300, i) for i in range(6000)]
    paths = [("main",)]
    kids = [set()]
    for _ in range(n_nodes - 1):
        # Prefer recent nodes as parents: deep, bushy stacks like a real service's.
        p = max(0, len(paths) - 1 - int(rnd.expovariate(1 / 40.0))) if rnd.random() < 0.8 \
            else rnd.randrange(len(paths))
        name = rnd.choice(names)
        while name in kids[p]:
            name = rnd.choice(names)
        kids[p].add(name)
        paths.append(paths[p] + (name,))
        kids.append(set())
    return paths


def profile(paths, rnd, total_samples):
    weights = [1.0 / (i + 1) ** 0.7 for i in range(len(paths))]
    rnd.shuffle(weights)
    scale = total_samples / sum(weights)
    counts = [max(1, int(w * scale)) for w in weights]
    return pprof_py.build_gz([(list(p), c * PERIOD) for p, c in zip(paths, counts)],
                             sample_types=(("cpu", "nanoseconds"),),
                             period_type=("cpu", "nanoseconds"), period=PERIOD,
                             time_nanos=(int(time.time()) - 120) * SEC,
                             duration_nanos=60 * SEC), sum(counts)


MEASURE = r"""
(async () => {
  const r = await fetch(%(url)s, {headers: {Authorization: 'Bearer ' + %(token)s}});
  const text = await r.text();                      // data received
  const tp = performance.now();
  const doc = JSON.parse(text);
  const t0 = performance.now();
  const f = window.__rt.flame;
  f.setTree(doc.root, {unit: doc.unit, seconds: doc.window.seconds, measurement: doc.measurement});
  const tf = performance.now();
  f.zoomTo(0, false);
  const t1 = performance.now();
  await new Promise((ok) => requestAnimationFrame(() => setTimeout(ok, 0)));
  const t2 = performance.now();
  const bars = f.lastDraw.bars;
  const lazy = f.partial, tc = performance.now();
  f.complete();                                      // the rest of the layout, after the paint
  const rest_ms = lazy ? performance.now() - tc : null;
  const zooms = [];
  const targets = f.nodes.map((n, i) => i).filter((i) => f.depth[i] >= 2 && f.depth[i] <= 4)
    .sort((a, b) => f.nodes[b].total - f.nodes[a].total).slice(0, 10);
  for (const i of targets) {
    for (const target of [i, 0]) {                   // zoom in, then back out to the root
      const a = performance.now(); f.zoomTo(target, false); zooms.push(performance.now() - a);
    }
  }
  zooms.sort((a, b) => a - b);
  return {nodes: doc.nodes, bytes: text.length, parse_ms: t0 - tp, first_draw_ms: t1 - t0, flatten_ms: tf - t0,
          frame_ms: t2 - t1, rest_ms,
          first_paint_ms: t2 - tp, zoom_median_ms: zooms[zooms.length >> 1],
          zoom_max_ms: zooms[zooms.length - 1], bars, width: f.pane.clientWidth};
})()
"""


APP_RENDER = r"""
(async () => {
  const f = window.__rt.flame, spent = {layouts: 0, layout_ms: 0, draws: 0, draw_ms: 0};
  let depth = 0;
  const wrap = (name, count, ms) => {
    f[name] = function (...a) {                      // outermost calls only: draw -> complete -> draw
      const t = performance.now(), outer = depth++ === 0;
      try { return Object.getPrototypeOf(f)[name].apply(this, a); } finally {
        depth--;
        if (outer && this.nodes.length && this.pane.clientWidth) { spent[count]++; spent[ms] += performance.now() - t; }
      }
    };
  };
  wrap("setTree", "layouts", "layout_ms");
  wrap("draw", "draws", "draw_ms");
  const r0 = window.__rt.rendered;
  history.pushState(null, "", "#" + %(fragment)s);
  dispatchEvent(new PopStateEvent("popstate"));
  while (window.__rt.rendered === r0) await new Promise((ok) => requestAnimationFrame(ok));
  await new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok)));
  await new Promise((ok) => requestIdleCallback(ok));  // after the rest of the layout
  delete f.setTree; delete f.draw;
  return spent;
})()
"""


def heap_mb(page):
    page.send("HeapProfiler.collectGarbage")
    return page.send("Runtime.getHeapUsage")["usedSize"] / 1048576


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pprof_flamegraph(browser, pb_path):
    port = free_port()
    env = dict(os.environ, PPROF_TMPDIR=tempfile.mkdtemp(prefix="rt-pprof-"))
    proc = subprocess.Popen(["go", "tool", "pprof", "-no_browser",
                             "-http=127.0.0.1:%d" % port, pb_path],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        page = browser.new_page()
        page.send("Page.navigate", {"url": "http://127.0.0.1:%d/ui/flamegraph" % port})
        page.wait_for("document.readyState === 'complete'", timeout=600)
        t = page.eval("new Promise((ok) => requestAnimationFrame(() => setTimeout(() => {"
                      " const n = performance.getEntriesByType('navigation')[0];"
                      " ok({response_end: n.responseEnd, now: performance.now(),"
                      " bytes: n.transferSize}); }, 0)))")
        return {"first_paint_ms": t["now"] - t["response_end"], "bytes": t["bytes"],
                "heap_mb": heap_mb(page)}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main():
    rnd = random.Random(12)
    cases = [("100k nodes", random_tree(rnd, 100000), 200000),
             ("1M samples", random_tree(rnd, 120000), 1000000)]
    print("%-11s %7s %8s %9s %9s %10s %9s %9s %8s | %s" % (
        "profile", "nodes", "JSON MB", "parse", "1st draw", "1st paint", "zoom med", "zoom max",
        "heap MB", "go tool pprof -http flame graph: response->paint, heap"))
    with Collector() as fx, Chromium() as browser:
        col = fx.create_token("collector")
        viewer = fx.create_token("user", role="viewer")
        for i, (label, paths, samples) in enumerate(cases):
            service = "bench%d" % i
            pb, n_samples = profile(paths, rnd, samples)
            status, body = fx.upload(col, pb, service, "cpu")
            assert status == 200, body
            page = browser.new_page()
            page.goto("http://127.0.0.1:%d/#service=%s&type=cpu&nodes=2" % (fx.port, service))
            page.eval("sessionStorage.setItem('roottrace.token', %s)" % json.dumps(viewer))
            page.send("Page.reload")
            page.wait_for("window.__rt && window.__rt.rendered >= 1", timeout=120)
            url = "/api/apm/profiles/flamegraph?service=%s&profile_type=cpu&time_range=1h" \
                  "&max_nodes=1000000" % service
            r = page.eval(MEASURE % {"url": json.dumps(url), "token": json.dumps(viewer)})
            heap = heap_mb(page)
            app = page.eval(APP_RENDER % {"fragment": json.dumps(
                "service=%s&type=cpu&range=1h&nodes=1000000" % service)})
            status, _, export = fx.request("GET", "/api/apm/profiles/export", viewer,
                                           params={"service": service, "profile_type": "cpu",
                                                   "time_range": "1h"})
            assert status == 200
            with tempfile.NamedTemporaryFile(suffix=".pb.gz", delete=False) as f:
                f.write(export)
            try:
                peer = pprof_flamegraph(browser, f.name)
                peer_text = "%.0f ms, %.1f MB (page %.1f MB)" % (
                    peer["first_paint_ms"], peer["heap_mb"], peer["bytes"] / 1e6)
            except (OSError, AssertionError, subprocess.SubprocessError) as e:
                peer_text = "not measured: %s" % str(e).splitlines()[0][:80]
            finally:
                os.unlink(f.name)
            print("%-11s %7d %8.1f %6.0f ms %6.0f ms %7.0f ms %6.2f ms %6.2f ms %8.1f | %s" % (
                label, r["nodes"], r["bytes"] / 1e6, r["parse_ms"], r["first_draw_ms"],
                r["first_paint_ms"],
                r["zoom_median_ms"], r["zoom_max_ms"], heap, peer_text), flush=True)
            print("  (%s: %d samples, %d bars drawn at the root on a %d px wide canvas; "
                  "1st draw = layout %.0f ms + draw %.0f ms; next frame %.0f ms; rest of the "
                  "layout after the paint %s)"
                  % (label, n_samples, r["bars"], r["width"], r["flatten_ms"],
                     r["first_draw_ms"] - r["flatten_ms"], r["frame_ms"],
                     "none" if r["rest_ms"] is None else "%.0f ms" % r["rest_ms"]))
            print("  (%s in the app, popstate to it: %d layout(s) %.0f ms, %d draw(s) %.0f ms)"
                  % (label, app["layouts"], app["layout_ms"], app["draws"], app["draw_ms"]))
    print("first paint = JSON.parse + flatten + draw + next frame, from the response body "
          "received; 1st draw = layout + draw; zoom = FlameGraph.zoomTo (a full redraw), "
          "median and max of 20")


if __name__ == "__main__":
    sys.exit(main())
