// SPDX-License-Identifier: Apache-2.0
// The trace view (#view=trace&trace_id=…): the trace's spans that have linked samples, each
// with its service, span name, CPU or wall time and share, and its time with child spans where
// the collector can resolve them (where it cannot, the view says so in the API's words). An
// unknown trace gets an empty state that says why and how long links are kept.
import * as api from "./api.js";
import * as fmt from "./format.js";

const $ = (id) => document.getElementById(id);

// A span's share of the trace's total of the same measurement (CPU and wall never add up).
function shares(spans) {
  const totals = {};
  for (const s of spans) totals[s.profile_type] = (totals[s.profile_type] || 0) + s.value;
  return (s) => (totals[s.profile_type] ? (100 * s.value) / totals[s.profile_type] : 0);
}

export function typeCell(type) {
  const td = fmt.el("td", type === "wall" ? "" : type);
  if (type === "wall") {
    td.append(fmt.el("span", "wall", "tag wall"));
    td.title = "wall-clock time: includes waiting (I/O, locks, sleep), so it has no CPU cost";
  }
  return td;
}

// When a trace has no links: the API's reason, how long links are kept, and, when the link
// said when the trace ran (time=), whether that is past the retention.
export function emptyState(box, what, doc, st) {
  box.replaceChildren(fmt.el("h2", what));
  if (doc && doc.reason) box.append(fmt.el("p", doc.reason.detail.replace(/([^.])$/, "$1.")));
  const hours = doc && doc.link_retention_hours;
  const at = Number(st.time);
  if (at && hours && Date.now() / 1000 - at > hours * 3600)
    box.append(fmt.el("p", "It ran at " + fmt.utc(at) + ", more than " + hours +
      " hours ago: its links have been deleted.", "error"));
  box.append(fmt.el("p", fmt.retention(hours), "muted"));
  box.hidden = false;
}

export class TraceView {
  constructor(app) { this.app = app; }

  async show(signal) {
    const st = this.app.currentState();
    const tid = fmt.hexId(st.trace_id, 32);
    const box = $("trace-empty"), body = $("trace-spans").tBodies[0];
    body.replaceChildren();
    box.hidden = true;
    $("trace-spans").hidden = true;
    $("trace-note").textContent = "";
    $("trace-box").value = st.trace_id || "";
    $("trace-title").textContent = tid ? "Trace " + tid : "";
    if (!tid) {
      emptyState(box, st.trace_id ? "“" + st.trace_id + "” is not a trace id: 1 to 32 hex digits."
        : "Paste a trace id in the box above to see its spans' profiles.", null, st);
      return;
    }
    const doc = await api.get("/api/apm/traces/" + tid + "/profile", { include_children: "true" }, { signal });
    this.data = doc;
    $("caption").textContent = "Spans of trace " + tid + " with linked samples, in every service, " +
      "ordered by their first sample; CPU and wall-clock time are never added together.";
    if (!doc.spans.length) { emptyState(box, "No samples are linked to trace " + tid + ".", doc, st); return; }
    this.rows(doc.spans.map((s) => ({ ...s, trace_id: tid })), body);
    $("trace-spans").hidden = false;
    const unresolved = doc.spans.filter((s) => s.children && !s.children.resolved);
    if (unresolved.length)
      $("trace-note").textContent = "With children: unresolved for " + unresolved.length + " of " +
        doc.spans.length + " span(s), shown as “–”: " + unresolved[0].children.reason.detail + ".";
  }

  rows(spans, body) {
    const share = shares(spans);
    for (const s of spans) {
      const tr = document.createElement("tr");
      tr.className = "link";
      tr.dataset.span = s.span_id;
      const kids = s.value_with_children;
      const kidsCell = fmt.el("td", kids == null ? "–" : fmt.value(kids, s.unit), "num");
      if (s.children && !s.children.resolved) kidsCell.title = s.children.reason.detail;
      tr.append(fmt.el("td", s.service), fmt.el("td", s.span_name || "(no name)", "name"),
        fmt.el("td", s.span_id, "id"), typeCell(s.profile_type),
        fmt.el("td", fmt.value(s.value, s.unit), "num"), fmt.el("td", fmt.pct(share(s)), "num"),
        kidsCell, fmt.el("td", s.samples, "num"), fmt.el("td", fmt.utc(s.first)));
      tr.addEventListener("click", () => this.app.openSpan(s));
      body.append(tr);
    }
  }
}
