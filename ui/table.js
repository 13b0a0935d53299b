// SPDX-License-Identifier: Apache-2.0
// The top table beside the flame graph: functions by self time with total (recursion counted
// once, as the API counts it) and, for CPU, vCPU-hours per month; sortable by each column,
// filtered by the search, and a click on a row highlights that function's bars.
import * as fmt from "./format.js";

export class TopTable {
  constructor(table, onSelect) {
    this.table = table;
    this.onSelect = onSelect;
    this.rows = [];
    this.sort = "self";
    this.match = null;
    this.selected = null;
    for (const th of table.querySelectorAll("th[data-sort]"))
      th.addEventListener("click", () => { this.sort = th.dataset.sort; this.draw(); });
  }

  setData(top, cost) {
    const hours = new Map((cost && cost.cost ? cost.cost.functions : []).map((f) => [f.name, f.vcpu_hours_per_month]));
    this.unit = top.unit;
    this.hasCost = !!(cost && cost.cost);
    this.rows = top.functions.map((f) => ({ ...f, cost: hours.has(f.name) ? hours.get(f.name) : null }));
    this.selected = null; // drawn by the caller's filter(), once
  }

  filter(match) { this.match = match; this.draw(); }

  sorted() {
    const k = this.sort;
    const rows = this.match ? this.rows.filter((r) => this.match(r.name)) : this.rows.slice();
    if (k === "name") return rows.sort((a, b) => a.name.localeCompare(b.name));
    return rows.sort((a, b) => (b[k] ?? -1) - (a[k] ?? -1));
  }

  draw() {
    const body = this.table.tBodies[0];
    body.replaceChildren();
    for (const th of this.table.querySelectorAll("th[data-sort]"))
      th.textContent = th.textContent.replace(/ [▼]$/, "") + (th.dataset.sort === this.sort ? " ▼" : "");
    for (const r of this.sorted()) {
      const tr = document.createElement("tr");
      tr.dataset.name = r.name;
      if (r.name === this.selected) tr.className = "selected";
      const name = fmt.el("td", r.name, "name");
      name.title = r.name;
      tr.append(name,
        fmt.el("td", fmt.value(r.self, this.unit) + " · " + fmt.pct(r.self_share), "num"),
        fmt.el("td", fmt.value(r.total, this.unit) + " · " + fmt.pct(r.total_share), "num"),
        fmt.el("td", this.hasCost ? fmt.hours(r.cost) : "n/a", "num"));
      tr.addEventListener("click", () => {
        this.selected = this.selected === r.name ? null : r.name;
        this.draw();
        this.onSelect(this.selected);
      });
      body.append(tr);
    }
  }
}
