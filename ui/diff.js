// SPDX-License-Identifier: Apache-2.0
// What changed between two windows: around a time (anchor ± window), between two deployments,
// or two explicit windows. Each side is normalised to shares of its own total (the API's diff),
// the movers table ranks functions by the change of their self share in points, and the flame
// graph of both sides merged is coloured by the change of each bar's share. A show whose signal
// aborted (a newer render) stops at its next answer and draws nothing.
import * as api from "./api.js";
import * as fmt from "./format.js";
import { FlameGraph } from "./flame.js";

const $ = (id) => document.getElementById(id);
const SCALE = 1e6; // shares (0..100) to integer widths for the merged tree

// Both trees merged by call path: width is the mean of the two shares, so a bar that exists on
// one side only still shows; before/after are total shares, delta their change in points.
export function mergeTrees(before, after) {
  const share = (n, root) => (n && root.total ? (100 * n.total) / root.total : 0);
  const walk = (a, b) => {
    const names = new Map();
    for (const c of (a && a.children) || []) names.set(c.name, [c, null]);
    for (const c of (b && b.children) || []) names.set(c.name, [(names.get(c.name) || [null])[0], c]);
    const bs = share(a, before), as = share(b, after);
    const children = [...names.values()].map(([x, y]) => walk(x, y)).sort((p, q) => q.total - p.total);
    const total = Math.round(((bs + as) / 2) * SCALE);
    const sum = children.reduce((s, c) => s + c.total, 0);
    return { name: (a || b).name, total: Math.max(total, sum), self: Math.max(total - sum, 0),
      before: bs, after: as, delta: as - bs, children };
  };
  return walk(before, after);
}

export class DiffView {
  constructor(app) {
    this.app = app;
    this.graph = new FlameGraph($("diff-flame"), { onZoom: () => {}, onHover: app.tooltip });
    $("diff-mode").addEventListener("change", (e) => this.modeShown(e.target.value));
    $("diff-run").addEventListener("click", () => {
      const m = $("diff-mode").value;
      this.app.setState({ dmode: m, anchor: fmt.fromInput($("anchor").value), dwin: $("diff-window").value,
        base: $("base-dep").value, dep: $("new-dep").value,
        bs: fmt.fromInput($("b-start").value), be: fmt.fromInput($("b-end").value),
        as: fmt.fromInput($("a-start").value), ae: fmt.fromInput($("a-end").value) }, true);
      this.show().catch(this.app.showError);
    });
  }

  modeShown(mode) {
    for (const s of document.querySelectorAll("[data-mode]")) s.hidden = s.dataset.mode !== mode;
    $("diff-mode").value = mode;
  }

  params(st, markers) {
    const p = { service: st.service, profile_type: st.type, limit: 1000 };
    const mode = st.dmode || "anchor";
    if (mode === "deployments") {
      const versions = [...new Set(markers.map((m) => m.version))];
      p.base_deployment = st.base || versions[versions.length - 2];
      p.deployment = st.dep || versions[versions.length - 1];
      p.time_range = "30d";
    } else if (mode === "explicit") {
      Object.assign(p, { before_start: st.bs, before_end: st.be, after_start: st.as, after_end: st.ae });
    } else {
      const last = markers.length ? markers[markers.length - 1].time : Math.floor(Date.now() / 1000) - 900;
      p.anchor = st.anchor || last;
      p.window = st.dwin || "15m";
    }
    return p;
  }

  fillControls(st, markers, p) {
    this.modeShown(st.dmode || "anchor");
    for (const id of ["base-dep", "new-dep"]) {
      const sel = $(id);
      sel.replaceChildren();
      for (const v of [...new Set(markers.map((m) => m.version))]) {
        const o = fmt.el("option", v); o.value = v; sel.append(o);
      }
    }
    if (p.base_deployment) { $("base-dep").value = p.base_deployment; $("new-dep").value = p.deployment; }
    if (p.anchor) $("anchor").value = fmt.toInput(+p.anchor);
    for (const [id, k] of [["b-start", "bs"], ["b-end", "be"], ["a-start", "as"], ["a-end", "ae"]])
      if (st[k]) $(id).value = fmt.toInput(+st[k]);
    if (p.window) $("diff-window").value = p.window;
  }

  async show(signal) {
    const st = this.app.currentState();
    const get = (path, params) => api.get(path, params, { signal });
    const markers = (await get("/api/apm/deployments", { service: st.service, time_range: "30d" })).deployments;
    const p = this.params(st, markers);
    this.fillControls(st, markers, p);
    const d = await get("/api/apm/profiles/diff", p);
    this.data = d;
    this.summary(d);
    this.movers(d);
    const side = (s, dep) => get("/api/apm/profiles/flamegraph", { service: st.service,
      profile_type: st.type, start: s.window.start, end: s.window.end, deployment: dep, max_nodes: 8192 });
    const [before, after] = await Promise.all([side(d.before, p.base_deployment), side(d.after, p.deployment)]);
    this.graph.setTree(mergeTrees(before.root, after.root), { unit: d.unit, seconds: d.after.window.covered_seconds ?? d.after.window.seconds,
      measurement: d.measurement, diff: true });
    this.graph.draw();
  }

  summary(d) {
    const w = (s) => fmt.windowText(s.window) + (s.deployment ? " deployment " + s.deployment : "");
    $("caption").textContent = fmt.MEASUREMENTS[d.measurement] + " of " + d.service + " in " + d.unit +
      ", each side as shares of its own total · before " + w(d.before) + " · after " + w(d.after);
    const change = d.total_change_pct == null ? "n/a (before is empty)" :
      (d.total_change_pct > 0 ? "+" : "") + d.total_change_pct.toFixed(1) + "%";
    const deps = (d.deployments || []).map((m) => m.version + " at " + fmt.utc(m.time)).join(", ");
    $("diff-summary").textContent = "Total " + fmt.value(d.before.total, d.unit) + " → " +
      fmt.value(d.after.total, d.unit) + " (" + change + ") · deploy markers: " + (deps || "none");
  }

  movers(d) { fillMovers($("movers").tBodies[0], d.movers); }
}

// The movers table's rows: before and after self shares and the change in points; new and
// removed functions tagged.
export function fillMovers(body, movers) {
  body.replaceChildren();
  for (const m of movers) {
    const tr = document.createElement("tr");
    tr.dataset.name = m.name;
    const name = fmt.el("td", m.name, "name");
    const isNew = !m.before_self_share && !m.before_total_share;
    const gone = !m.after_self_share && !m.after_total_share;
    if (isNew) name.append(fmt.el("span", "new", "tag new"));
    if (gone) name.append(fmt.el("span", "removed", "tag removed"));
    tr.append(name, fmt.el("td", fmt.pct(m.before_self_share), "num"), fmt.el("td", fmt.pct(m.after_self_share), "num"),
      fmt.el("td", fmt.pts(m.delta_pts), "num " + (m.delta_pts > 0 ? "grew-text" : m.delta_pts < 0 ? "shrank-text" : "")));
    body.append(tr);
  }
}
