// SPDX-License-Identifier: Apache-2.0
// Downloads of the window on screen: the collector's pprof (.pb.gz), folded stacks, and a
// speedscope file (speedscope's published "sampled" file format) built from the folded stacks.
import * as api from "./api.js";

function download(blob, name) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

export function speedscope(folded, name, unit) {
  const frames = [], index = new Map(), samples = [], weights = [];
  for (const line of folded.split("\n")) {
    const cut = line.lastIndexOf(" ");
    if (cut <= 0) continue;
    samples.push(line.slice(0, cut).split(";").map((f) => {
      if (!index.has(f)) { index.set(f, frames.length); frames.push({ name: f }); }
      return index.get(f);
    }));
    weights.push(Number(line.slice(cut + 1)));
  }
  const total = weights.reduce((a, b) => a + b, 0);
  return {
    $schema: "https://www.speedscope.app/file-format-schema.json",
    shared: { frames },
    profiles: [{ type: "sampled", name, unit: unit === "bytes" ? "bytes" : "nanoseconds",
      startValue: 0, endValue: total, samples, weights }],
    name, activeProfileIndex: 0, exporter: "roottrace",
  };
}

export async function exportProfile(kind, params, shown) {
  const base = params.service + "." + params.profile_type;
  if (kind === "pprof")
    return download(await api.get("/api/apm/profiles/export", params, { as: "blob" }), base + ".pb.gz");
  const folded = await api.get("/api/apm/profiles/collapsed", params, { as: "text" });
  if (kind === "folded") return download(new Blob([folded], { type: "text/plain" }), base + ".folded.txt");
  const doc = speedscope(folded, base, shown ? shown.unit : "nanoseconds");
  download(new Blob([JSON.stringify(doc)], { type: "application/json" }), base + ".speedscope.json");
}
