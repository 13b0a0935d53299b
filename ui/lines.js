// SPDX-License-Identifier: Apache-2.0
// The lines of one function (GET /api/apm/profiles/lines): its self time by file and line,
// biggest first, with the source line when the collector has the file (--source-dir), and the
// share with no line with why. Opened from the selected top-table row or the zoomed frame.
import * as api from "./api.js";
import * as fmt from "./format.js";

export class LinesView {
  constructor(pane, title, table, note) {
    this.pane = pane;
    this.title = title;
    this.table = table;
    this.note = note;
    this.data = null;
  }

  async show(name, params, signal) {
    this.pane.hidden = false;
    this.title.textContent = "Lines of " + name + "…";
    this.table.tBodies[0].replaceChildren();
    this.note.textContent = "";
    const d = await api.get("/api/apm/profiles/lines", { ...params, function: name, limit: 500 }, { signal });
    this.data = d;
    this.draw(d);
    return d;
  }

  hide() { this.pane.hidden = true; this.data = null; }

  draw(d) {
    this.title.textContent = d.function + ": " + fmt.value(d.self, d.unit) + " self (" +
      fmt.pct(d.self_share) + " of total), by file and line";
    const body = this.table.tBodies[0];
    body.replaceChildren();
    for (const l of d.lines) {
      const tr = document.createElement("tr");
      const file = fmt.el("td", l.file + ":" + l.line, "name");
      file.title = l.file;
      const text = fmt.el("td", l.text === undefined ? "" : l.text, "source");
      tr.append(file, fmt.el("td", fmt.value(l.self, d.unit) + " · " + fmt.pct(l.share), "num"), text);
      body.append(tr);
    }
    const reasons = d.no_line.reasons.map((r) => fmt.pct(r.share) + " " + r.reason);
    this.note.textContent = (d.lines.length ? "" : "No line is known for this function. ") +
      (d.no_line.self ? "Without a line: " + fmt.value(d.no_line.self, d.unit) + " (" +
        fmt.pct(d.no_line.share) + " of its self time): " + reasons.join("; ") + "." : "") +
      (d.n_lines > d.lines.length ? " Showing " + d.lines.length + " of " + d.n_lines + " lines." : "");
  }
}
