// SPDX-License-Identifier: Apache-2.0
// Sandwich view of one function: every occurrence in the tree merged, its callers drawn above
// it (root at the top of that part) and its callees below. Recursion is merged once: only the
// outermost occurrence on each path counts, the inner ones are part of its callees.
function child(node, name) {
  let c = node.kids.get(name);
  if (!c) { c = { name, self: 0, total: 0, kids: new Map() }; node.kids.set(name, c); }
  return c;
}

function addSubtree(dst, tree, i) {
  const n = tree.nodes[i];
  dst.total += n.total;
  dst.self += n.self;
  for (let c = i + 1; c < tree.end[i]; c = tree.end[c]) addSubtree(child(dst, tree.nodes[c].name), tree, c);
}

function finish(node) { // Map children to the {name, self, total, children} of flame.js
  const children = [...node.kids.values()].map(finish).sort((a, b) => b.total - a.total);
  return { name: node.name, self: node.self, total: node.total, children };
}

// tree: flame.js's flattened tree ({nodes, parent, end}, as a FlameGraph holds it). Returns
// {callers, callees} trees, both rooted at `name`.
export function sandwich(tree, name) {
  const { nodes, parent } = tree;
  const callers = { name, self: 0, total: 0, kids: new Map() };
  const callees = { name, self: 0, total: 0, kids: new Map() };
  for (let i = 0; i < nodes.length; i++) {
    const n = nodes[i];
    if (n.name !== name) continue;
    let up = callers;
    up.total += n.total;
    for (let p = parent[i]; p >= 0; p = parent[p]) {
      up = child(up, nodes[p].name);
      up.total += n.total;
      if (parent[p] < 0) up.self += n.total; // the path ends at the root
    }
    addSubtree(callees, tree, i);
    i = tree.end[i] - 1; // inner occurrences are callees of this one
  }
  return { callers: finish(callers), callees: finish(callees) };
}
