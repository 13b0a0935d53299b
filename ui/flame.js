// SPDX-License-Identifier: Apache-2.0
// The flame graph on a Canvas 2D: a bar's width is the function plus its callees, its colour a
// stable hash of the name (or of its package), icicle (root on top) or flame (root at the
// bottom). Clicking zooms; the zoomed node's ancestors stay drawn, muted. Only bars in view
// and at least half a pixel wide are drawn, so 100k-node trees stay smooth. In diff mode the
// colour is the change of the bar's share: red grew, blue shrank (ColorBrewer RdBu). The canvas
// is the size of the visible pane (it stays put while a spacer gives the pane its scroll
// height), so a deep tree costs no more to draw than a shallow one. Setting the tree, the zoom or
// the search does not draw: the caller draws once when the view is set (`draws` and `layouts`
// count both, for the tests); a hidden pane is not drawn, and a resize redraws only when the
// pane's size differs from the one last drawn.
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

// Depth-first, root first, into flat arrays beside the API's own objects (which are neither
// copied nor changed): node i's depth, its offset x within the root's total, its parent's
// index and `end`, the index just past its subtree: skipping a subtree is one jump, and a
// node's children are i + 1, then each one's `end` in turn (kids()). A loop over an explicit
// stack rather than recursion, so the first (cold) call is compiled while it runs. Callees of
// a node whose total is under minTotal are left out (`partial`): the first paint lays out only
// what it can draw, and the rest follows after it (FlameGraph.complete()).
export function flatten(root, minTotal = 0) {
  const nodes = [root], depth = [0], x = [0], parent = [-1], end = [0];
  let maxDepth = 0, maxDelta = Math.abs(root.delta || 0), partial = false;
  const open = [0], nextChild = [0], nextX = [0]; // the path from the root to the node at hand
  while (open.length) {
    const top = open.length - 1, i = open[top], ch = nodes[i].children, k = nextChild[top];
    if (!ch || k >= ch.length) { end[i] = nodes.length; open.pop(); nextChild.pop(); nextX.pop(); continue; }
    const c = ch[k], d = depth[i] + 1, cx = nextX[top];
    nextChild[top] = k + 1;
    nextX[top] = cx + c.total;
    if (c.total < minTotal) { partial = true; continue; }
    open.push(nodes.length); nextChild.push(0); nextX.push(cx);
    nodes.push(c); depth.push(d); x.push(cx); parent.push(i); end.push(0);
    if (d > maxDepth) maxDepth = d;
    if (c.delta && Math.abs(c.delta) > maxDelta) maxDelta = Math.abs(c.delta);
  }
  return { nodes, depth, x, parent, end, maxDepth, maxDelta, partial };
}

export function kids(end, i) {
  const out = [];
  for (let c = i + 1; c < end[i]; c = end[c]) out.push(c);
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
    this.draws = 0; // the draws that painted the canvas
    this.layouts = 0; // the trees laid out (setTree)
    this.drawnSize = ""; // the pane's "width x height" at the last draw
    this.spacer = document.createElement("div");
    canvas.classList.add("viewport");
    canvas.after(this.spacer);
    canvas.tabIndex = 0;
    canvas.addEventListener("click", (e) => this.click(e));
    canvas.addEventListener("mousemove", (e) => this.hover(e));
    canvas.addEventListener("mouseleave", () => this.opts.onHover(null));
    this.pane.addEventListener("scroll", () => { if (this.pane.scrollTop !== this.scrollTop) this.draw(); });
    new ResizeObserver(() => { if (this.paneSize() !== this.drawnSize) this.draw(); }).observe(this.pane);
  }

  paneSize() { return this.pane.clientWidth + "x" + this.pane.clientHeight; }

  // Lays out only the bars the root view can draw, at up to twice the pane's width (not in diff
  // mode, whose colours need every node's delta); the rest when the browser is next idle, or as
  // soon as anything needs it.
  setTree(root, info) {
    this.info = info; // {unit, seconds, measurement, diff}
    this.root = root;
    this.laidWidth = Math.max(2 * this.pane.clientWidth, 1024); // room to widen the window
    this.layout(flatten(root, info.diff ? 0 : (root.total * MIN_PX) / this.laidWidth));
    this.layouts++;
    this.zoom = this.focus = 0;
    // The picture stays the same (what was left out is under half a pixel wide): no redraw.
    if (this.partial) requestIdleCallback(() => { if (this.root === root) this.complete(); }, { timeout: 500 });
  }

  layout(t) {
    ({ nodes: this.nodes, depth: this.depth, x: this.x, parent: this.parent, end: this.end,
      maxDepth: this.maxDepth, maxDelta: this.maxDelta, partial: this.partial } = t);
  }

  // The whole tree, keeping the zoomed and focused nodes; returns node i's new index. Does not
  // draw: whoever needs the rest of the tree draws after.
  complete(i = 0) {
    if (!this.partial) return i;
    const [node, zoomed, focused] = [i, this.zoom, this.focus].map((j) => this.nodes[j]);
    this.layout(flatten(this.root));
    const index = new Map([[node, 0], [zoomed, 0], [focused, 0]]);
    for (let j = 0; j < this.nodes.length; j++) if (index.has(this.nodes[j])) index.set(this.nodes[j], j);
    this.zoom = index.get(zoomed); this.focus = index.get(focused);
    return index.get(node);
  }

  path(i) { // names from the root's child down to node i
    const out = [];
    for (; i > 0; i = this.parent[i]) out.unshift(this.nodes[i].name);
    return out;
  }

  find(path) { // the node at this name path, or the deepest one found
    if (path.length) this.complete();
    let i = 0;
    for (const name of path) {
      const next = kids(this.end, i).find((c) => this.nodes[c].name === name);
      if (next === undefined) break;
      i = next;
    }
    return i;
  }

  setZoom(i) { // without drawing
    if (i !== 0) i = this.complete(i);
    this.zoom = this.focus = i;
    return i;
  }

  zoomTo(i, notify = true) {
    if (!this.nodes.length) return;
    i = this.setZoom(i);
    this.draw();
    if (notify) this.opts.onZoom(this.path(i));
  }

  zoomOut() { if (this.zoom > 0) this.zoomTo(this.parent[this.zoom]); }

  setMatcher(fn) { this.matcher = fn; return this.matchedTotal(); } // without drawing

  matchedTotal() { // topmost matching nodes only, so nested matches are not counted twice
    if (!this.matcher || !this.nodes.length) return null;
    this.complete();
    let sum = 0;
    for (let i = 0; i < this.nodes.length; i++) {
      const n = this.nodes[i];
      if (this.matcher(n.name)) { sum += n.total; i = this.end[i] - 1; }
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
    const y = this.rowY(this.depth[i]);
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
    const width = this.pane.clientWidth;
    if (!width) { this.drawnSize = ""; return; } // hidden: drawn when it shows (the observer)
    if (this.partial && (!this.icicle || width > this.laidWidth)) this.complete();
    this.draws++;
    this.drawnSize = this.paneSize();
    const full = (this.maxDepth + 1) * ROW;
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
    for (let a = this.parent[this.zoom]; a >= 0; a = this.parent[a]) // ancestors, muted, full width
      this.bar(frame, this.nodes[a], a, 0, width, true);
    const zx = this.x[this.zoom], end = this.end[this.zoom];
    for (let i = this.zoom; i < end; i++) {
      const n = this.nodes[i];
      const w = n.total * scale;
      const y = this.rowY(this.depth[i]);
      const below = this.icicle ? y > bottom : y + ROW < top; // its callees are further out
      if (w < MIN_PX || below) { i = this.end[i] - 1; continue; }
      if (y + ROW < top || y > bottom) continue;
      this.bar(frame, n, i, (this.x[i] - zx) * scale, w, false);
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
    if (this.nodes[i].folded && this.opts.onOther) return this.opts.onOther(this.path(this.parent[i]));
    this.zoomTo(i);
  }

  hover(ev) {
    const i = this.at(ev);
    this.opts.onHover(i < 0 ? null : this.nodes[i], ev, this);
  }

  // Keyboard: up/down parent/child (swapped in flame mode), left/right siblings, Enter zooms.
  key(k) {
    if (!this.nodes.length) return false;
    this.complete();
    const f = this.focus, parent = this.parent[f];
    const up = this.icicle ? "ArrowUp" : "ArrowDown";
    const down = this.icicle ? "ArrowDown" : "ArrowUp";
    let next = this.focus;
    if (k === up && parent >= 0) next = parent;
    else if (k === down && this.end[f] > f + 1) next = f + 1;
    else if ((k === "ArrowLeft" || k === "ArrowRight") && parent >= 0) {
      const sib = kids(this.end, parent);
      const j = sib.indexOf(f) + (k === "ArrowLeft" ? -1 : 1);
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
