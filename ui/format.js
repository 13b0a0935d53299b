// SPDX-License-Identifier: Apache-2.0
// Numbers as people read them: the measurement's unit (CPU or wall seconds, bytes), shares,
// vCPU-hours per month, and UTC times.
export const HOURS_PER_MONTH = 730;

export const MEASUREMENTS = {
  cpu: "CPU time", wall: "wall-clock time", heap: "heap in use (average)",
  alloc: "allocated bytes", lock: "lock delay", offcpu: "time blocked off-CPU",
};

export function value(v, unit) {
  if (v === null || v === undefined) return "–";
  if (unit === "bytes") {
    const u = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
    return (i ? v.toFixed(v < 10 ? 2 : 1) : String(Math.round(v))) + " " + u[i];
  }
  const s = v / 1e9;
  if (Math.abs(s) >= 100) return s.toFixed(0) + " s";
  if (Math.abs(s) >= 1) return s.toFixed(2) + " s";
  return (s * 1000).toFixed(s * 1000 >= 10 ? 1 : 2) + " ms";
}

export const pct = (share) => (share === null || share === undefined ? "–" : share.toFixed(2) + "%");
export const pts = (d) => (d > 0 ? "+" : "") + d.toFixed(2) + " pts";

// vCPU-hours per month of `ns` CPU nanoseconds read over a window of `seconds`.
export const vcpuHours = (ns, seconds) => (ns / 1e9 / seconds) * HOURS_PER_MONTH;
export const hours = (h) => (h === null || h === undefined ? "–" : h >= 10 ? h.toFixed(1) : h.toFixed(3));

export function utc(unix) {
  return new Date(unix * 1000).toISOString().replace("T", " ").replace(/\.000Z$/, "Z");
}

// datetime-local inputs are read and written as UTC, as everything else on the page.
export const toInput = (unix) => new Date(unix * 1000).toISOString().slice(0, 19);
export const fromInput = (s) => (s ? Math.floor(Date.parse(s + "Z") / 1000) : null);

export function windowText(w) {
  return utc(w.start) + " – " + utc(w.end) + " (" + w.seconds + " s, whole 5-minute buckets)";
}

export function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = text; // names are text, never HTML
  if (cls) e.className = cls;
  return e;
}

// A trace (32 digits) or span (16) id as the API writes it: lower-case hex, zero-padded;
// null when s is not 1 to `digits` hex digits or is all zeros.
export function hexId(s, digits) {
  const t = String(s || "").trim().toLowerCase().replace(/^0x/, "");
  if (!/^[0-9a-f]+$/.test(t) || t.length > digits || /^0+$/.test(t)) return null;
  return t.padStart(digits, "0");
}
export const shortId = (id) => (id && id.length > 8 ? id.slice(0, 4) + "…" + id.slice(-3) : id || "–");

// How long span links are kept, for the states where a trace or span has none left.
export function retention(hours) {
  const h = hours ? hours + " hours" : "--link-retention-hours (72 hours by default)";
  return "Span links are kept for " + h + " (the collector's --link-retention-hours); a trace or " +
    "span older than that has no linked samples left, though the service's profiles are kept longer.";
}
