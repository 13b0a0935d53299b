// SPDX-License-Identifier: Apache-2.0
// Profiling → Settings: the environment switch and per-service overrides (enabled, sample rate,
// upload interval, off-CPU time) with the server's clamp ranges beside the fields, and the audit trail.
// Engineers and admins write; a viewer sees the same read-only (the audit route, engineer and
// above, answering 403 is how the page learns the token's role).
import * as api from "./api.js";
import * as fmt from "./format.js";

const $ = (id) => document.getElementById(id);
const INTS = ["sample_rate_hz", "upload_interval_s", "poll_interval_s"];
const BOOLS = ["enabled", "offcpu_enabled"]; // a checkbox for the environment, on/off/inherit per service

export class SettingsView {
  constructor(app) {
    this.app = app;
    $("env-form").addEventListener("submit", (e) => { e.preventDefault(); this.save(e.target, null); });
    $("svc-form").addEventListener("submit", (e) => { e.preventDefault(); this.save(e.target, e.target.service.value); });
  }

  body(form, service) {
    const b = {};
    if (service) b.service = service;
    for (const k of BOOLS) b[k] = !service ? form[k].checked : form[k].value === "" ? null : form[k].value === "true";
    for (const k of INTS) if (form[k]) b[k] = form[k].value === "" ? null : Number(form[k].value);
    return b;
  }

  async save(form, service) {
    try {
      const r = await api.put("/api/apm/config", this.body(form, service));
      $("settings-msg").textContent = "Saved " + (service ? "service " + service : "environment") +
        ": effective " + JSON.stringify(r.effective);
      await this.show();
    } catch (e) { this.app.showError(e); }
  }

  async show() {
    $("caption").textContent = "";
    const cfg = await api.get("/api/apm/config");
    let audit = null;
    try { audit = await api.get("/api/apm/audit", { limit: 100 }); } catch (e) { if (e.status !== 403) throw e; }
    const canWrite = audit !== null;
    $("settings-role").textContent = canWrite ? "You can change these settings (engineer or admin)." :
      "Read-only: this token's role is viewer; engineers and admins change settings and read the audit trail.";
    for (const f of document.querySelectorAll("#view-settings form input, #view-settings form select, #view-settings form button"))
      f.disabled = !canWrite;
    $("env-name").textContent = cfg.environment;
    const env = $("env-form");
    for (const k of BOOLS) env[k].checked = !!cfg[k];
    for (const k of INTS) env[k].value = cfg[k];
    this.services(cfg);
    this.audit(audit);
  }

  services(cfg) {
    const names = new Set(Object.keys(cfg.services || {}));
    const known = this.app.services();
    for (const s of (known && known.services) || []) names.add(s.name);
    const list = $("svc-names"), body = $("svc-settings").tBodies[0];
    list.replaceChildren(); body.replaceChildren();
    for (const n of [...names].sort()) {
      const o = document.createElement("option"); o.value = n; list.append(o);
      const s = (cfg.services || {})[n] || { enabled: cfg.enabled, sample_rate_hz: cfg.sample_rate_hz,
        upload_interval_s: cfg.upload_interval_s, offcpu_enabled: cfg.offcpu_enabled, inherited: true };
      const tr = document.createElement("tr");
      tr.append(fmt.el("td", n), fmt.el("td", (s.enabled ? "on" : "off") + (s.inherited ? " (environment)" : "")),
        fmt.el("td", s.sample_rate_hz, "num"), fmt.el("td", s.upload_interval_s, "num"),
        fmt.el("td", s.offcpu_enabled ? "on" : "off"));
      body.append(tr);
    }
  }

  audit(doc) {
    const body = $("audit").tBodies[0];
    body.replaceChildren();
    if (!doc) { body.append(fmt.el("tr", "The audit trail needs an engineer or admin token.")); return; }
    const show = (v) => (v ? JSON.stringify(v) : "–");
    for (const ev of doc.events) {
      const tr = document.createElement("tr");
      tr.append(fmt.el("td", fmt.utc(ev.time)), fmt.el("td", ev.who ? ev.who.token_name : "?"),
        fmt.el("td", ev.service || "(environment)"), fmt.el("td", show(ev.before), "name"), fmt.el("td", show(ev.after), "name"));
      body.append(tr);
    }
  }
}
