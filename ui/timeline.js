// SPDX-License-Identifier: Apache-2.0
// A small timeline of the service's total over the window on screen, with its deploy markers:
// the window cut into at most 24 whole-bucket slices, each slice's total read from the top
// route (limit=1), markers from the deployments route. Clicking a marker opens the diff
// around it. A load whose signal aborted (a newer render) draws nothing.
import * as api from "./api.js";
import * as fmt from "./format.js";

const BUCKET = 300;
const MAX_POINTS = 24;
const HEIGHT = 44;

export function slices(w) {
  const step = Math.ceil((w.end - w.start) / MAX_POINTS / BUCKET) * BUCKET;
  const out = [];
  for (let s = w.start; s < w.end; s += step) out.push({ start: s, end: Math.min(s + step, w.end) });
  return out;
}

export class Timeline {
  constructor(canvas, onMarker) {
    this.canvas = canvas;
    this.onMarker = onMarker;
    this.points = [];
    this.markers = [];
    canvas.addEventListener("click", (e) => this.click(e));
  }

  async load(params, w, signal) {
    const parts = slices(w);
    const base = { service: params.service, profile_type: params.profile_type, deployment: params.deployment, limit: 1 };
    const [totals, deps] = await Promise.all([
      Promise.all(parts.map((p) => api.get("/api/apm/profiles/top", { ...base, start: p.start, end: p.end }, { signal }).then((r) => r.total))),
      api.get("/api/apm/deployments", { service: params.service, start: w.start, end: w.end }, { signal }),
    ]);
    if (signal && signal.aborted) return;
    this.window = w;
    this.unit = params.unit;
    this.points = parts.map((p, i) => ({ ...p, total: totals[i] }));
    this.markers = deps.deployments.filter((m) => m.time >= w.start && m.time < w.end);
    this.draw();
  }

  x(t, width) { return ((t - this.window.start) / (this.window.end - this.window.start)) * width; }

  draw() {
    const c = this.canvas, width = c.parentElement.clientWidth;
    const dpr = window.devicePixelRatio || 1;
    c.width = Math.round(width * dpr); c.height = Math.round(HEIGHT * dpr);
    c.style.width = width + "px"; c.style.height = HEIGHT + "px";
    const ctx = c.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, HEIGHT);
    const max = Math.max(1, ...this.points.map((p) => p.total));
    ctx.fillStyle = getComputedStyle(c).color;
    ctx.globalAlpha = 0.45;
    for (const p of this.points) {
      const x0 = this.x(p.start, width), x1 = this.x(p.end, width);
      const h = (p.total / max) * (HEIGHT - 14);
      ctx.fillRect(x0, HEIGHT - h, Math.max(x1 - x0 - 1, 1), h);
    }
    ctx.globalAlpha = 1;
    ctx.fillStyle = ctx.strokeStyle = "#d97706";
    ctx.font = "11px system-ui, sans-serif";
    for (const m of this.markers) {
      const x = this.x(m.time, width);
      ctx.fillRect(x, 0, 2, HEIGHT);
      ctx.fillText(m.version, Math.min(x + 4, width - 60), 10);
    }
    c.title = "total per slice (" + this.points.length + " slices); peak " + fmt.value(max, this.unit) +
      "; deploy markers: " + (this.markers.map((m) => m.version + " " + fmt.utc(m.time)).join(", ") || "none");
  }

  click(ev) {
    const r = this.canvas.getBoundingClientRect();
    const hit = this.markers.find((m) => Math.abs(this.x(m.time, r.width) - (ev.clientX - r.left)) <= 4);
    if (hit) this.onMarker(hit);
  }
}
