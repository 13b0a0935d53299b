// SPDX-License-Identifier: Apache-2.0
// The page's state and wiring: sign-in, the service / profile type / window pickers, the URL
// that holds the whole screen (service, type, window, zoomed frame, search, view), and the
// flame graph view with its top table. Diff, deployments, settings, the trace view and the
// spans (the Spans tab and the span view's head) are their own modules; the span view is the
// flame view read with the span's span_id.
// Each user action renders once: one fetch of the flame graph, one layout, one draw; a render
// started while another is in flight aborts the older one, whose response is never drawn.
import * as api from "./api.js";
import * as fmt from "./format.js";
import { FlameGraph } from "./flame.js";
import { TopTable } from "./table.js";
import { exportProfile } from "./exports.js";
import { DiffView } from "./diff.js";
import { SettingsView } from "./settings.js";
import { DeploymentsView } from "./deployments.js";
import { sandwich } from "./sandwich.js";
import { Timeline } from "./timeline.js";
import { TraceView } from "./trace.js";
import { SpansView, SpanView } from "./spans.js";
import { LinesView } from "./lines.js";

const $ = (id) => document.getElementById(id);
const DEFAULT_MAX_NODES = 8192;

// ---- URL state: everything that reproduces the screen, in the fragment (never the token) --
const state = {};
function readUrl() {
  for (const k of Object.keys(state)) delete state[k];
  Object.assign(state, Object.fromEntries(new URLSearchParams(location.hash.slice(1))));
  state.view = state.view || "flame";
  state.range = state.range || "1h";
}
export function setState(patch, push = false) {
  Object.assign(state, patch);
  for (const k of Object.keys(state)) if (state[k] === "" || state[k] == null) delete state[k];
  const url = "#" + new URLSearchParams(state).toString();
  if (url !== location.hash) history[push ? "pushState" : "replaceState"](null, "", url);
}

// The query parameters every read route takes: service, profile type, window, deployment
// (in the span view: the span's service, type, span id and the buckets its samples fall in).
export function queryParams() {
  if (state.view === "span" && span.row) return span.params();
  const p = { service: state.service, profile_type: state.type, deployment: state.deployment };
  if (state.range === "custom" && state.start && state.end) { p.start = state.start; p.end = state.end; }
  else p.time_range = state.range === "custom" ? "1h" : state.range;
  return p;
}
export const currentState = () => state;

export function showError(e) {
  $("error").textContent = e ? (e.status ? "HTTP " + e.status + ": " : "") + e.message : "";
  if (e && e.status === 401) signOut("That token was refused (401): sign in again.");
}

// ---- sign-in -------------------------------------------------------------------------------
function signOut(why) {
  api.clearToken();
  $("app").hidden = $("logout").hidden = $("trace-form").hidden = true; $("login").hidden = false;
  $("login-error").textContent = why || "";
}

async function signIn(tok) {
  api.setToken(tok);
  try { services = await api.get("/api/apm/services"); } catch (e) {
    signOut(e.status === 401 ? "Unknown or revoked token (401)." : e.message);
    return;
  }
  $("login").hidden = true; $("app").hidden = $("logout").hidden = $("trace-form").hidden = false;
  render();
}

// ---- pickers -------------------------------------------------------------------------------
let services = null;
function option(select, value, text) {
  const o = fmt.el("option", text || value); o.value = value; select.append(o);
}

// A deep link to a trace or span names its own service (or none): the pickers keep their hands
// off it, and fill in when a view that needs them is opened.
const linked = () => state.view === "trace" || state.view === "span";

function fillServices() {
  const sel = $("service");
  sel.replaceChildren();
  for (const s of services.services || []) option(sel, s.name);
  if (!state.service && !linked() && services.services && services.services.length) state.service = services.services[0].name;
  sel.value = state.service || "";
  if (!linked()) fillTypes();
}

function fillTypes() {
  const svc = (services.services || []).find((s) => s.name === state.service);
  const types = svc ? svc.profile_types.map((t) => t.profile_type) : [];
  const sel = $("ptype");
  sel.replaceChildren();
  for (const t of types) option(sel, t, t + " — " + fmt.MEASUREMENTS[t]);
  if (!types.includes(state.type)) state.type = types.includes("cpu") ? "cpu" : types[0];
  sel.value = state.type || "";
  const cov = services.coverage || {};
  const agents = svc ? svc.agents || [] : [];
  const overhead = agents.map((a) => a.overhead_pct).filter((x) => x != null);
  $("service-info").textContent = !svc ? "no service has uploaded yet" :
    "last upload " + (svc.last_upload ? fmt.utc(svc.last_upload) : "never") +
    " · " + agents.length + " agent(s)" +
    (overhead.length ? " · agent overhead ≤ " + Math.max(...overhead).toFixed(2) + "%" : "") +
    " · coverage " + (cov.share_pct == null ? "–" : cov.share_pct.toFixed(0) + "%") +
    " of enabled services receiving profiles";
}

async function fillDeployments(signal) {
  const sel = $("deployment");
  sel.replaceChildren();
  option(sel, "", "all");
  if (!state.service) return;
  try {
    const d = await api.get("/api/apm/deployments", { service: state.service, time_range: "30d" }, { signal });
    for (const v of [...new Set(d.deployments.map((x) => x.version))]) option(sel, v);
  } catch (_) { /* the picker stays "all" */ }
  sel.value = state.deployment || "";
}

// ---- flame graph view ----------------------------------------------------------------------
let flame, table, lastFlame, callers, callees, timeline, lines;
const maxNodes = () => Number(state.nodes) || DEFAULT_MAX_NODES;

function matcherFor(q) {
  if (!q) return null;
  if (q.length > 2 && q.startsWith("/") && q.endsWith("/")) {
    try { const re = new RegExp(q.slice(1, -1)); return (n) => re.test(n); } catch (e) {
      $("matched").textContent = "bad regex: " + e.message; return () => false;
    }
  }
  return (n) => n.includes(q);
}

// The search (or the selected row) to the flame graph's highlight, the matched share and the
// table's filter; the caller draws the flame graph.
function applySearch() {
  const sel = table.selected;
  const m = sel ? (n) => n === sel : matcherFor(state.q || "");
  const total = flame.setMatcher(m);
  const root = flame.nodes[0];
  $("matched").textContent = m && root ? "matched: " + (root.total ? (100 * total / root.total).toFixed(2) : "0.00") + "% of total" : "";
  table.filter(state.q && !sel ? matcherFor(state.q) : null);
  window.__rt.matched = m && root && root.total ? 100 * total / root.total : null;
}

function caption(d) {
  return fmt.MEASUREMENTS[d.measurement] + " of " + d.service + " in " + d.unit +
    " (shown as " + (d.unit === "bytes" ? "bytes" : d.measurement === "wall" ? "wall seconds" : "seconds") + ")" +
    " · window " + fmt.windowText(d.window) + (d.span_id ? " · samples linked to span " + d.span_id :
      " · deployment " + (d.deployment || "all")) + " · total " + fmt.value(d.total, d.unit);
}

function crumbs() {
  const nav = $("crumbs");
  nav.replaceChildren();
  const chain = [];
  for (let i = flame.zoom; i >= 0; i = flame.parent[i]) chain.unshift(i);
  chain.forEach((i, k) => {
    if (k) nav.append(fmt.el("span", " › "));
    const b = fmt.el("button", flame.nodes[i].name);
    b.type = "button";
    b.addEventListener("click", () => flame.zoomTo(i));
    nav.append(b);
  });
}

// Throws when a newer render has started since this one's signal was made.
function stillCurrent(signal) {
  if (signal.aborted) throw new DOMException("a newer render superseded this one", "AbortError");
}

async function loadFlame(signal) {
  const p = queryParams();
  window.__rt.flameFetches++;
  const [tree, top, cost] = await Promise.all([
    api.get("/api/apm/profiles/flamegraph", { ...p, max_nodes: maxNodes() }, { signal }),
    api.get("/api/apm/profiles/top", { ...p, limit: 1000 }, { signal }),
    state.type === "cpu" ? api.get("/api/apm/profiles/cost", { ...p, limit: 1000 }, { signal }) : null,
  ]);
  stillCurrent(signal);
  lastFlame = tree;
  $("caption").textContent = caption(tree);
  $("folded-note").textContent = tree.folded ?
    "The server folded the smallest nodes into bars named “other” (max_nodes " + tree.max_nodes +
    "): click one to fetch that part in more detail." : "";
  // vCPU-hours divide by the seconds that happened, as /profiles/cost does
  flame.setTree(tree.root, { unit: tree.unit, seconds: tree.window.covered_seconds ?? tree.window.seconds,
    measurement: tree.measurement });
  flame.icicle = state.mode !== "flame";
  flame.setZoom(flame.find(state.zoom ? JSON.parse(state.zoom) : []));
  crumbs();
  table.setData(top, cost);
  if (state.sw) table.selected = state.sw;
  applySearch(); // draws the table, once
  showSandwich(); // draws the flame graph (or the sandwich), once
  window.__rt.flameData = tree;
  window.__rt.topData = top;
  if (state.view === "span") { span.head(tree); await span.compare(signal); return; }
  await timeline.load({ ...p, unit: tree.unit }, tree.window, signal);
}

function tooltip(node, ev, graph) {
  const tip = $("tooltip");
  if (!node) { tip.hidden = true; return; }
  const info = graph.info, root = graph.nodes[0];
  const lines = [[node.name, "b"]];
  if (node.folded) lines.push(["“other”: " + node.folded + " nodes too small to send; click to fetch more detail"]);
  if (info.diff) {
    lines.push(["before " + fmt.pct(node.before) + " → after " + fmt.pct(node.after) + " of total (" + fmt.pts(node.delta) + ")"]);
  } else {
    lines.push(["total " + fmt.value(node.total, info.unit) + " (" + fmt.pct(100 * node.total / root.total) + ")"]);
    lines.push(["self " + fmt.value(node.self, info.unit) + " (" + fmt.pct(100 * node.self / root.total) + ")"]);
    if (info.measurement === "cpu")
      lines.push(["≈ " + fmt.hours(fmt.vcpuHours(node.total, info.seconds)) + " vCPU-hours/month"]);
  }
  tip.replaceChildren(...lines.map(([t, tag]) => { const d = fmt.el("div"); d.append(fmt.el(tag || "span", t)); return d; }));
  tip.hidden = false;
  tip.style.left = Math.min(ev.clientX + 14, innerWidth - 490) + "px";
  tip.style.top = ev.clientY + 14 + "px";
}

// Sandwich of the function in the URL (sw=): callers above, callees below, every occurrence.
// Draws what is shown: the flame graph, or the two sandwich graphs (never a hidden one).
function showSandwich() {
  if (state.ln) return showLines();
  lines.hide();
  $("lines-toggle").textContent = "Lines";
  $("lines-toggle").disabled = !linesTarget();
  const name = state.sw;
  $("sandwich").hidden = !name;
  $("graph-pane").hidden = !!name;
  $("crumbs").hidden = !!name;
  $("sandwich-toggle").disabled = !name && !table.selected;
  $("sandwich-toggle").textContent = name ? "Back to the flame graph" : "Sandwich";
  if (!name) return flame.draw();
  flame.complete();
  const { callers: up, callees: down } = sandwich(flame, name);
  const info = flame.info;
  $("sandwich-title").textContent = name + ": callers above (" + fmt.value(up.total, info.unit) +
    ", " + fmt.pct(100 * up.total / flame.nodes[0].total) + " of total), callees below";
  callers.setTree(up, info); callers.icicle = false; callers.draw();
  callees.setTree(down, info); callees.draw();
}

// The function whose lines "Lines" opens: the selected top-table row, else the zoomed frame.
function linesTarget() {
  if (table.selected) return table.selected;
  return flame.zoom > 0 && flame.nodes[flame.zoom] ? flame.nodes[flame.zoom].name : null;
}

// Lines of the function in the URL (ln=) in place of the graphs; errors show as every other.
function showLines() {
  $("sandwich").hidden = $("graph-pane").hidden = $("crumbs").hidden = true;
  $("lines-toggle").disabled = false;
  $("lines-toggle").textContent = "Back to the flame graph";
  const signal = rendering ? rendering.signal : undefined;
  return lines.show(state.ln, queryParams(), signal)
    .then((d) => { window.__rt.linesData = d; window.__rt.linesShown++; })
    .catch((e) => { if (!(signal && signal.aborted)) showError(e); });
}

// The diff around a deploy marker: 15 minutes before it against 15 minutes after.
function diffAround(marker) {
  setState({ view: "diff", dmode: "anchor", anchor: marker.time, dwin: "15m" }, true);
  render();
}

// A span of the trace view or the Spans tab: its span view, from the top of its flame graph.
function openSpan(s) {
  setState({ view: "span", span_id: s.span_id, trace_id: s.trace_id || "", service: s.service, type: s.profile_type,
    kids: "", cmp: "", zoom: "", q: "", sw: "", nodes: "" }, true);
  render();
}

async function showSpan(signal) {
  const found = await span.resolve(signal);
  stillCurrent(signal);
  $("view-flame").hidden = $("span-head").hidden = !found;
  if (found) await loadFlame(signal);
}

// ---- views ---------------------------------------------------------------------------------
const VIEWS = ["flame", "diff", "deployments", "settings", "trace", "spans"];
const WITHOUT_PICKERS = ["settings", "trace", "span"];
let diff, settings, deployments, trace, spans, span;
let rendering = null; // the AbortController of the render in flight
async function render() {
  if ($("app").hidden) return;
  if (rendering) rendering.abort();
  const { signal } = rendering = new AbortController();
  for (const a of document.querySelectorAll("#tabs a")) a.classList.toggle("active", a.dataset.view === state.view);
  for (const v of VIEWS) $("view-" + v).hidden = v !== state.view && !(v === "flame" && state.view === "span");
  $("span-head").hidden = $("span-empty").hidden = state.view !== "span";
  if (state.view !== "span") { $("span-diff").hidden = true; $("top").hidden = false; }
  $("pickers").hidden = WITHOUT_PICKERS.includes(state.view);
  $("timeline-pane").hidden = state.view !== "flame";
  $("service").value = state.service || "";
  $("range").value = state.range;
  $("custom-range").hidden = state.range !== "custom";
  if (state.start) $("start").value = fmt.toInput(+state.start);
  if (state.end) $("end").value = fmt.toInput(+state.end);
  $("search").value = state.q || "";
  $("flame-mode").checked = state.mode === "flame";
  showError(null);
  $("caption").textContent = "";
  fillServices();
  try {
    if (state.view === "trace") return await trace.show(signal);
    if (state.view === "span") return await showSpan(signal);
    await fillDeployments(signal);
    stillCurrent(signal);
    if (!state.service && state.view !== "settings") { $("caption").textContent = "No profiles yet."; return; }
    if (state.view === "flame") await loadFlame(signal);
    else if (state.view === "spans") await spans.show(signal);
    else if (state.view === "diff") await diff.show(signal);
    else if (state.view === "deployments") await deployments.show();
    else await settings.show();
  } catch (e) { if (!signal.aborted) showError(e); } finally {
    if (!signal.aborted) window.__rt.rendered++; // the newer render counts itself
  }
}

function wire() {
  window.__rt = { rendered: 0, flameFetches: 0 };
  flame = new FlameGraph($("flame"), {
    onZoom: (path) => {
      setState({ zoom: path.length ? JSON.stringify(path) : "" }, true); crumbs();
      $("lines-toggle").disabled = !linesTarget();
    },
    onHover: tooltip,
    onOther: (parentPath) => { setState({ nodes: maxNodes() * 4, zoom: JSON.stringify(parentPath) }, true); render(); },
  });
  window.__rt.flame = flame;
  table = new TopTable($("top"), (name) => {
    applySearch();
    if (name) $("matched").textContent += " · selected " + name;
    $("sandwich-toggle").disabled = !name && !state.sw;
    $("lines-toggle").disabled = !state.ln && !linesTarget();
    if (state.sw && name) { setState({ sw: name }, true); showSandwich(); } else if (!state.sw && !state.ln) flame.draw();
  });
  lines = new LinesView($("lines"), $("lines-title"), $("lines-table"), $("lines-note"));
  window.__rt.linesShown = 0;
  $("lines-toggle").addEventListener("click", () => {
    setState({ ln: state.ln ? "" : linesTarget(), sw: "" }, true);
    showSandwich();
  });
  const sideGraph = () => ({ onZoom: () => {}, onHover: tooltip });
  callers = new FlameGraph($("callers"), sideGraph());
  callees = new FlameGraph($("callees"), sideGraph());
  window.__rt.sandwich = { callers, callees };
  timeline = new Timeline($("timeline"), diffAround);
  window.__rt.timeline = timeline;
  $("sandwich-toggle").addEventListener("click", () => {
    setState({ sw: state.sw ? "" : table.selected, ln: "" }, true);
    showSandwich();
  });
  diff = new DiffView({ queryParams, currentState, setState, showError, tooltip });
  window.__rt.diff = diff;
  settings = new SettingsView({ showError, services: () => services });
  deployments = new DeploymentsView({ currentState, diffAround });
  const app = { currentState, setState, queryParams, render, openSpan };
  trace = new TraceView(app);
  spans = new SpansView(app);
  span = new SpanView(app);
  Object.assign(window.__rt, { trace, spans, span });
  $("trace-form").addEventListener("submit", (e) => {
    e.preventDefault();
    setState({ view: "trace", trace_id: $("trace-box").value.trim() }, true);
    render();
  });

  $("login-form").addEventListener("submit", (e) => { e.preventDefault(); signIn($("login-token").value.trim()); $("login-token").value = ""; });
  $("logout").addEventListener("click", () => signOut());
  for (const a of document.querySelectorAll("#tabs a"))
    a.addEventListener("click", (e) => { e.preventDefault(); setState({ view: a.dataset.view, span_id: "", cmp: "", kids: "" }, true); render(); });
  $("service").addEventListener("change", (e) => { setState({ service: e.target.value, zoom: "", deployment: "", nodes: "", sw: "", ln: "" }, true); fillTypes(); setState({ type: state.type }); render(); });
  $("ptype").addEventListener("change", (e) => { setState({ type: e.target.value, zoom: "" }, true); render(); });
  $("deployment").addEventListener("change", (e) => { setState({ deployment: e.target.value }, true); render(); });
  $("range").addEventListener("change", (e) => {
    if (e.target.value === "custom") { $("custom-range").hidden = false; return; }
    setState({ range: e.target.value, start: "", end: "" }, true); render();
  });
  $("apply-range").addEventListener("click", () => {
    setState({ range: "custom", start: fmt.fromInput($("start").value), end: fmt.fromInput($("end").value) }, true); render();
  });
  $("search").addEventListener("input", (e) => { table.selected = null; setState({ q: e.target.value }); applySearch(); flame.draw(); });
  $("flame-mode").addEventListener("change", (e) => { setState({ mode: e.target.checked ? "flame" : "" }); flame.icicle = !e.target.checked; flame.draw(); });
  $("by-package").addEventListener("change", (e) => { flame.byPackage = e.target.checked; flame.draw(); });
  for (const b of document.querySelectorAll("[data-export]"))
    b.addEventListener("click", () => exportProfile(b.dataset.export, queryParams(), lastFlame).catch(showError));
  document.addEventListener("keydown", (e) => {
    const typing = /^(INPUT|SELECT|TEXTAREA)$/.test(e.target.tagName);
    if (e.key === "/" && !typing) { e.preventDefault(); $("search").focus(); return; }
    if (typing || (state.view !== "flame" && state.view !== "span")) return;
    if (flame.key(e.key)) e.preventDefault();
  });
  addEventListener("popstate", () => { readUrl(); render(); });
}

readUrl();
wire();
if (api.token()) signIn(api.token()); else signOut();
