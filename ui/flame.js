// SPDX-License-Identifier: Apache-2.0
// The flame graph on a Canvas 2D: a bar's width is the function plus its callees, its colour a
// stable hash of the name (or of its package), icicle (root on top) or flame (root at the
// bottom). Clicking zooms; the zoomed node's ancestors stay drawn, muted. Only bars in view
// and at least half a pixel wide are drawn, so 100k-node trees stay smooth. In diff mode the
// colour is the change of the bar's share: red grew, blue shrank (ColorBrewer RdBu). The canvas
// is the size of the visible pane (it stays put while a spacer gives the pane its scroll
// height), so a deep tree costs no more to draw than a shallow one.
const ROW = 18;
const MIN_PX = 0.5;
const HIGHLIGHT = "#c026d3";

function hashName(s) { // FNV-1a, 32 bits: the same name gets the same colour on every page
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

export function packageOf(name) {
  const cut = Math.max(name.lastIndexOf("::"), name.lastIndexOf("."));
  return cut > 0 ? name.slice(0, cut) : name;
}

const dark = () => matchMedia("(prefers-color-scheme: dark)").matches;

// A palette of 11 hues x 4 saturations x 4 lightnesses: bars of one colour are filled as one
// path, so a draw sets at most 176 fill styles however many bars it draws.
function warmColour(key, isDark) {
  const h = hashName(key);
  const light = isDark ? 36 + ((h >>> 16) % 4) * 4 : 56 + ((h >>> 16) % 4) * 5;
  return "hsl(" + (8 + (h % 11) * 4) + "," + (62 + ((h >>> 8) % 4) * 9) + "%," + light + "%)";
}

function diffColour(delta, maxAbs, isDark) {
  const t = maxAbs > 0 ? Math.min(1, Math.abs(delta) / maxAbs) : 0;
  const base = isDark ? [72, 74, 80] : [222, 222, 222];
  const to = delta > 0 ? [178, 24, 43] : [33, 102, 172];
  const c = base.map((b, i) => Math.round(b + (to[i] - b) * (0.25 + 0.75 * t) * (t > 0 ? 1 : 0)));
  return "rgb(" + c.join(",") + ")";
}

// Depth-first, root first: each node (the API's own object, so nothing is copied) gets its
// depth, its offset x within the root's total, its parent's index and `end`, the index just
// past its subtree: skipping a subtree is one jump, and a node's children are i + 1, then
// each one's `end` in turn (kids()).
export function flatten(root) {
  const nodes = [];
  const walk = (n, depth, x, parent) => {
    const i = nodes.length;
    n.depth = depth; n.x = x; n.parent = parent;
    nodes.push(n);
    let cx = x;
    for (const c of n.children || []) {
      walk(c, depth + 1, cx, i);
      cx += c.total;
    }
    n.end = nodes.length;
  };
  walk(root, 0, 0, -1);
  return nodes;
}

export function kids(nodes, i) {
  const out = [];
  for (let c = i + 1; c < nodes[i].end; c = nodes[c].end) out.push(c);
  return out;
}

export class FlameGraph {
  constructor(canvas, opts) {
    this.canvas = canvas;
    this.pane = canvas.parentElement;
    this.opts = opts; // {onZoom(path), onHover(node, ev), onOther(node)}
    this.nodes = [];
    this.zoom = 0;
    this.focus = 0;
    this.icicle = true;
    this.byPackage = false;
    this.matcher = null;
    this.lastDraw = { bars: 0, names: [], rects: [] };
    this.colours = new Map(); // name (or package) -> CSS colour, per theme
    this.spacer = document.createElement("div");
    canvas.classList.add("viewport");
    canvas.after(this.spacer);
    canvas.tabIndex = 0;
    canvas.addEventListener("click", (e) => this.click(e));
    canvas.addEventListener("mousemove", (e) => this.hover(e));
    canvas.addEventListener("mouseleave", () => this.opts.onHover(null));
    this.pane.addEventListener("scroll", () => this.draw());
    new ResizeObserver(() => this.draw()).observe(this.pane);
  }

  setTree(root, info) {
    this.info = info; // {unit, seconds, measurement, diff}
    this.nodes = flatten(root);
    this.maxDepth = this.nodes.reduce((m, n) => Math.max(m, n.depth), 0);
    this.maxDelta = this.nodes.reduce((m, n) => Math.max(m, Math.abs(n.delta || 0)), 0);
    this.zoom = this.focus = 0;
  }

  path(i) { // names from the root's child down to node i
    const out = [];
    for (; i > 0; i = this.nodes[i].parent) out.unshift(this.nodes[i].name);
    return out;
  }

  find(path) { // the node at this name path, or the deepest one found
    let i = 0;
    for (const name of path) {
      const next = kids(this.nodes, i).find((c) => this.nodes[c].name === name);
      if (next === undefined) break;
      i = next;
    }
    return i;
  }

  zoomTo(i, notify = true) {
    if (!this.nodes.length) return;
    this.zoom = this.focus = i;
    this.draw();
    if (notify) this.opts.onZoom(this.path(i));
  }

  zoomOut() { if (this.zoom > 0) this.zoomTo(this.nodes[this.zoom].parent); }

  setMatcher(fn) { this.matcher = fn; this.draw(); return this.matchedTotal(); }

  matchedTotal() { // topmost matching nodes only, so nested matches are not counted twice
    if (!this.matcher || !this.nodes.length) return null;
    let sum = 0;
    for (let i = 0; i < this.nodes.length; i++) {
      const n = this.nodes[i];
      if (this.matcher(n.name)) { sum += n.total; i = n.end - 1; }
    }
    return sum;
  }

  rowY(depth) { return (this.icicle ? depth : this.maxDepth - depth) * ROW - this.scrollTop; }

  colour(n, muted) {
    if (muted) return this.isDark ? "#3a3d44" : "#d4d6da";
    if (this.matcher && this.matcher(n.name)) return HIGHLIGHT;
    if (this.info.diff) return diffColour(n.delta || 0, this.maxDelta, this.isDark);
    const key = this.byPackage ? packageOf(n.name) : n.name;
    let c = this.colours.get(key);
    if (c === undefined) { c = warmColour(key, this.isDark); this.colours.set(key, c); }
    return c;
  }

  label(n) { return n.folded ? n.name + " (" + n.folded + " small nodes folded)" : n.name; }

  // Queues one bar: its rectangle into the path of its colour, its label if it fits.
  bar(frame, n, i, x, w, muted) {
    const y = this.rowY(n.depth);
    const colour = this.colour(n, muted);
    let path = frame.paths.get(colour);
    if (!path) { path = new Path2D(); frame.paths.set(colour, path); }
    path.rect(x, y, Math.max(w - 1, MIN_PX), ROW - 1);
    if (w > 24) frame.labels.push([this.label(n), x, y, w, muted]);
    if (i === this.focus && this.focused) frame.focus = [x, y, w];
    this.lastDraw.rects.push({ i, x, y, w });
    this.lastDraw.names.push(n.name);
  }

  paint(ctx, frame) {
    for (const [colour, path] of frame.paths) { ctx.fillStyle = colour; ctx.fill(path); }
    for (const [text, x, y, w, muted] of frame.labels) {
      const chars = Math.floor((w - 6) / this.charW);
      ctx.fillStyle = muted ? (this.isDark ? "#aaa" : "#555") : "#111";
      ctx.fillText(text.length > chars ? text.slice(0, Math.max(chars - 1, 0)) + "…" : text, x + 3, y + 13);
    }
    if (frame.focus) {
      const [x, y, w] = frame.focus;
      ctx.strokeStyle = this.isDark ? "#fff" : "#000";
      ctx.strokeRect(x + 0.5, y + 0.5, Math.max(w - 2, 1), ROW - 2);
    }
  }

  draw() {
    if (!this.nodes.length) return;
    const full = (this.maxDepth + 1) * ROW;
    const width = this.pane.clientWidth;
    const height = Math.min(full, this.pane.clientHeight);
    const dpr = window.devicePixelRatio || 1;
    const c = this.canvas;
    if (c.width !== Math.round(width * dpr) || c.height !== Math.round(height * dpr)) {
      c.width = Math.round(width * dpr); c.height = Math.round(height * dpr);
      c.style.width = width + "px"; c.style.height = height + "px";
    }
    this.spacer.style.height = full - height + "px";
    const isDark = dark();
    if (isDark !== this.isDark) this.colours.clear();
    this.isDark = isDark;
    this.focused = document.activeElement === c;
    this.scrollTop = this.pane.scrollTop;
    const ctx = c.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    ctx.font = "12px ui-monospace, monospace";
    this.charW = this.charW || ctx.measureText("m").width;
    this.lastDraw = { bars: 0, names: [], rects: [] };
    const z = this.nodes[this.zoom];
    const scale = width / (z.total || 1);
    const top = 0, bottom = height;
    const frame = { paths: new Map(), labels: [], focus: null };
    for (let a = z.parent; a >= 0; a = this.nodes[a].parent) // ancestors, muted, full width
      this.bar(frame, this.nodes[a], a, 0, width, true);
    for (let i = this.zoom; i < z.end; i++) {
      const n = this.nodes[i];
      const w = n.total * scale;
      const y = this.rowY(n.depth);
      const below = this.icicle ? y > bottom : y + ROW < top; // its callees are further out
      if (w < MIN_PX || below) { i = n.end - 1; continue; }
      if (y + ROW < top || y > bottom) continue;
      this.bar(frame, n, i, (n.x - z.x) * scale, w, false);
    }
    this.paint(ctx, frame);
    this.lastDraw.bars = this.lastDraw.rects.length;
  }

  at(ev) {
    const r = this.canvas.getBoundingClientRect();
    const x = ev.clientX - r.left, y = ev.clientY - r.top;
    const hit = this.lastDraw.rects.find((b) => x >= b.x && x < b.x + b.w && y >= b.y && y < b.y + ROW);
    return hit ? hit.i : -1;
  }

  click(ev) {
    const i = this.at(ev);
    if (i < 0) return;
    if (this.nodes[i].folded && this.opts.onOther) return this.opts.onOther(this.path(this.nodes[i].parent));
    this.zoomTo(i);
  }

  hover(ev) {
    const i = this.at(ev);
    this.opts.onHover(i < 0 ? null : this.nodes[i], ev, this);
  }

  // Keyboard: up/down parent/child (swapped in flame mode), left/right siblings, Enter zooms.
  key(k) {
    const n = this.nodes[this.focus];
    if (!n) return false;
    const up = this.icicle ? "ArrowUp" : "ArrowDown";
    const down = this.icicle ? "ArrowDown" : "ArrowUp";
    let next = this.focus;
    if (k === up && n.parent >= 0) next = n.parent;
    else if (k === down && n.end > this.focus + 1) next = this.focus + 1;
    else if ((k === "ArrowLeft" || k === "ArrowRight") && n.parent >= 0) {
      const sib = kids(this.nodes, n.parent);
      const j = sib.indexOf(this.focus) + (k === "ArrowLeft" ? -1 : 1);
      if (j >= 0 && j < sib.length) next = sib[j];
    } else if (k === "Enter") { this.zoomTo(this.focus); return true; }
    else if (k === "Escape") { this.zoomOut(); return true; }
    else return false;
    this.focus = next;
    this.canvas.focus();
    this.draw();
    return true;
  }
}
