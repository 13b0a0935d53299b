// SPDX-License-Identifier: Apache-2.0
// From spans to frames: the "Spans" tab (a service's slowest linked spans in the window, by
// their time inside it), and the span view's head (#view=span&span_id=…): which span, trace,
// service and measurement, the window its samples fall in, child spans when asked, and
// "Compare with its endpoint" (the span against its endpoint's hour, the API's span diff) as
// movers. The span's flame graph and top table are the flame view's, read with span_id.
import * as api from "./api.js";
import * as fmt from "./format.js";
import { fillMovers } from "./diff.js";
import { emptyState, typeCell } from "./trace.js";

const $ = (id) => document.getElementById(id);
const LIMIT = 50;

export class SpansView {
  constructor(app) { this.app = app; }

  async show(signal) {
    const p = this.app.queryParams();
    delete p.deployment; // links carry no deployment
    const doc = await api.get("/api/apm/spans", { ...p, limit: LIMIT }, { signal });
    this.data = doc;
    $("caption").textContent = "Slowest linked spans of " + doc.service + " by their " +
      fmt.MEASUREMENTS[doc.measurement] + " inside the window · window " + fmt.windowText(doc.window) +
      " · share of the service's total " + fmt.value(doc.total, doc.unit) +
      (doc.measurement === "wall" ? " · wall-clock: includes waiting, no CPU cost" : "");
    const body = $("spans-list").tBodies[0];
    body.replaceChildren();
    $("spans-list").hidden = !doc.spans.length;
    $("spans-empty").hidden = true;
    if (!doc.spans.length) {
      emptyState($("spans-empty"), "No span links for " + doc.service + " (" + doc.measurement +
        ") in this window.", doc, {});
      return;
    }
    for (const s of doc.spans) {
      const tr = document.createElement("tr");
      tr.className = "link";
      tr.dataset.span = s.span_id;
      tr.append(fmt.el("td", s.span_name || "(no name)", "name"), fmt.el("td", s.span_id, "id"),
        fmt.el("td", s.trace_id || "–", "id"), fmt.el("td", fmt.value(s.value, doc.unit), "num"),
        fmt.el("td", fmt.pct(s.share), "num"), fmt.el("td", s.samples, "num"), fmt.el("td", fmt.utc(s.first)));
      tr.addEventListener("click", () => this.app.openSpan({ ...s, service: doc.service, profile_type: doc.measurement }));
      body.append(tr);
    }
  }
}

export class SpanView {
  constructor(app) {
    this.app = app;
    this.row = null;
    $("span-kids").addEventListener("change", (e) => { app.setState({ kids: e.target.checked ? "1" : "" }, true); app.render(); });
    $("span-compare").addEventListener("click", () => { app.setState({ cmp: app.currentState().cmp ? "" : "1" }, true); app.render(); });
  }

  // The span's rows (one per service and type): from its trace when the link names it, else
  // looked up by span id. The row of the link's service and type (either may be absent), else
  // its service's CPU row, else any row of its service, else CPU, else the first.
  async resolve(signal) {
    const st = this.app.currentState();
    const sid = fmt.hexId(st.span_id, 16), tid = fmt.hexId(st.trace_id, 32);
    this.row = null;
    $("span-empty").hidden = true;
    if (!sid) {
      emptyState($("span-empty"), "“" + (st.span_id || "") + "” is not a span id: 1 to 16 hex digits.", null, st);
      return false;
    }
    const doc = tid ? await api.get("/api/apm/traces/" + tid + "/profile", {}, { signal })
      : await api.get("/api/apm/spans", { span_id: sid }, { signal });
    const rows = doc.spans.filter((s) => s.span_id === sid);
    const pick = (svc, type) => rows.find((s) => (!svc || s.service === svc) && (!type || s.profile_type === type));
    this.row = pick(st.service, st.type) || pick(st.service, "cpu") || pick(st.service) || pick(null, "cpu") ||
      rows[0] || null;
    this.others = rows.filter((s) => s !== this.row);
    if (!this.row) {
      emptyState($("span-empty"), "No samples are linked to span " + sid + (tid ? " of trace " + tid : "") + ".", doc, st);
      return false;
    }
    const r = this.row = { ...this.row, trace_id: this.row.trace_id || tid || "" };
    this.app.setState({ span_id: sid, trace_id: r.trace_id, service: r.service, type: r.profile_type });
    return true;
  }

  // The read routes' parameters for the span: its samples, in the buckets they fall in.
  params() {
    const r = this.row, st = this.app.currentState();
    return { service: r.service, profile_type: r.profile_type, span_id: r.span_id,
      start: r.first, end: r.last + 1, include_children: st.kids ? "true" : "" };
  }

  // The head above the flame graph: "Linked · Trace a41f…9c2 · db.acquire 1.90 s".
  head(tree) {
    const r = this.row, st = this.app.currentState();
    const title = $("span-title");
    title.replaceChildren(fmt.el("b", "Linked"), " · Trace ");
    if (r.trace_id) {
      const a = fmt.el("a", fmt.shortId(r.trace_id));
      a.href = "#view=trace&trace_id=" + r.trace_id;
      a.title = r.trace_id;
      title.append(a);
    } else title.append("(none named)");
    title.append(" · " + (r.span_name || "span " + r.span_id) + " " + fmt.value(tree.total, tree.unit) +
      " · " + r.service + " · span " + r.span_id);
    if (r.profile_type === "wall") title.append(typeCell("wall").firstChild);
    $("span-kids").checked = !!st.kids;
    $("span-compare").textContent = st.cmp ? "Back to the top table" : "Compare with its endpoint";
    $("span-other").textContent = this.others.length ? "also linked: " +
      this.others.map((s) => s.service + " " + s.profile_type + " " + fmt.value(s.value, s.unit)).join(", ") : "";
    const notes = [];
    if (r.profile_type === "wall") notes.push("Wall-clock time includes waiting (I/O, locks, sleep) that uses no CPU, so this span has no CPU cost.");
    if (tree.children) notes.push(tree.children.resolved ? "With its child spans: " + tree.children.spans + " span(s) merged." :
      "Child spans: " + tree.children.reason.detail + ".");
    $("span-note").textContent = notes.join(" ");
  }

  // "Compare with its endpoint": the span (after) against its endpoint's hour (before).
  async compare(signal) {
    const st = this.app.currentState();
    $("span-diff").hidden = !st.cmp;
    $("top").hidden = !!st.cmp;
    if (!st.cmp) return;
    const r = this.row;
    const d = await api.get("/api/apm/profiles/diff", { service: r.service, profile_type: r.profile_type,
      span_id: r.span_id, limit: 1000 }, { signal });
    this.diff = d;
    const base = d.before.span_name ? "its endpoint “" + d.before.span_name + "”" : "the service (the span has no name)";
    $("span-diff-summary").textContent = "This span against " + base + " over " + fmt.windowText(d.before.window) +
      ", each side as shares of its own total (" + fmt.value(d.before.total, d.unit) + " → " +
      fmt.value(d.after.total, d.unit) + "). Red grew in the span, blue shrank.";
    fillMovers($("span-movers").tBodies[0], d.movers);
  }
}
