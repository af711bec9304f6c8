// Measures the import graph over `import … from "./x"` lines (type-only imports included: a circle of
// types is still a circle to a reader). Prints the arrows between rooms of controller/ (a subfolder, or a
// file at its top), the arrows that run against the intended inner direction (eslint.config.mjs CONTROLLER_LAYERS),
// and every circle of files (strongly connected component) in the product folders.
// Usage: node scripts/import-circles.mjs [--arrows]
import { readFileSync, existsSync, statSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { dirname, join, normalize, relative } from "node:path";

const root = join(dirname(new URL(import.meta.url).pathname), "..");
const files = execFileSync("git", ["ls-files", "api", "agent", "substrates", "controller", "cli", "provider"], {
  cwd: root,
  encoding: "utf8",
})
  .split("\n")
  .filter((f) => /\.tsx?$/.test(f) && !f.startsWith("controller/dashboard/app/") && existsSync(join(root, f)));
const known = new Set(files);

function resolve(from, spec) {
  const base = normalize(join(dirname(from), spec));
  for (const c of [`${base}.ts`, `${base}.tsx`, join(base, "index.ts")]) if (known.has(c)) return c;
  return undefined;
}

const edges = new Map(files.map((f) => [f, new Set()]));
for (const f of files) {
  const text = readFileSync(join(root, f), "utf8");
  for (const m of text.matchAll(/(?:from\s+|import\s*\(\s*|require\(\s*|^import\s+)["'](\.{1,2}\/[^"']+)["']/gm)) {
    const to = resolve(f, m[1]);
    if (to && to !== f) edges.get(f).add(to);
  }
}

/** Tarjan's strongly connected components over `graph` (Map<node, Set<node>>). */
function circles(graph) {
  let index = 0;
  const idx = new Map(),
    low = new Map(),
    stack = [],
    on = new Set(),
    out = [];
  const visit = (v) => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const c = [];
      let w;
      do {
        w = stack.pop();
        on.delete(w);
        c.push(w);
      } while (w !== v);
      if (c.length > 1) out.push(c.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return out;
}

// Rooms of controller/: its subfolders, and each file at its top.
const room = (f) => {
  const parts = f.split("/");
  return parts.length > 2 ? parts[1] : parts[1].replace(/\.ts$/, ".ts");
};
const rooms = new Map();
for (const [f, tos] of edges) {
  if (!f.startsWith("controller/")) continue;
  for (const t of tos) {
    if (!t.startsWith("controller/") || room(f) === room(t)) continue;
    if (!rooms.has(room(f))) rooms.set(room(f), new Map());
    const lines = rooms.get(room(f));
    lines.set(room(t), [...(lines.get(room(t)) ?? []), `${f} → ${t}`]);
  }
}

// The intended inner direction, lowest first (DESIGN.md §2; kept equal to eslint.config.mjs CONTROLLER_LAYERS).
const config = readFileSync(join(root, "eslint.config.mjs"), "utf8");
const layersText = config.match(/const CONTROLLER_LAYERS = (\[[\s\S]*?\n\]);/)?.[1];
const LAYERS = layersText
  ? Function(`return ${layersText}`)()
  : [
      ["store", "coalesced-runner.ts", "supervisor.ts"],
      ["config.ts", "supervisor-main.ts"],
      ["state"],
      [
        "security",
        "cluster",
        "provisioner",
        "backup",
        "bootstrap.ts",
        "operator-collector.ts",
        "cleaner.ts",
        "pod-replica.ts",
      ],
      ["migration", "server", "dashboard"],
      ["controller.ts"],
      ["index.ts", "main.ts"],
    ];
const layerOf = (r) => LAYERS.findIndex((l) => l.includes(r));

const roomGraph = new Map([...rooms].map(([r, m]) => [r, new Set(m.keys())]));
const back = [];
for (const [r, m] of rooms)
  for (const [t, lines] of m)
    if (layerOf(t) > layerOf(r) || (layerOf(t) === layerOf(r) && LAYERS[layerOf(r)].length > 1))
      back.push({ from: r, to: t, lines });
const arrowCount = [...rooms.values()].reduce((n, m) => n + m.size, 0);
const fileCircles = circles(edges);

console.log(
  `controller/ rooms: ${new Set([...files.filter((f) => f.startsWith("controller/")).map(room)]).size}, arrows between rooms: ${arrowCount}`,
);
console.log(`room circles in controller/: ${circles(roomGraph).length}`);
for (const c of circles(roomGraph)) console.log(`  ${c.join(" ↔ ")}`);
console.log(`arrows against the inner direction (up a layer, or sideways within one): ${back.length}`);
for (const b of back) console.log(`  ${b.from} → ${b.to}: ${b.lines.length} import(s), e.g. ${b.lines[0]}`);
console.log(`file circles (product folders): ${fileCircles.length}`);
for (const c of fileCircles) console.log(`  [${c.length}] ${c.join(", ")}`);
if (process.argv.includes("--arrows"))
  for (const [r, m] of rooms) console.log(`${r} → ${[...m.keys()].sort().join(", ")}`);
