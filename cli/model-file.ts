/**
 * Model definition files: the desired state of one model in YAML.
 *
 * ```yaml
 * model: demo                      # optional; else --model or the current model
 * config:
 *   update-status-interval: 1m     # optional
 * applications:
 *   web:
 *     operator: ../../operators/hello-http   # relative to this file
 *     units: 2
 *     config: { greeting: Hello }
 *     to: ["0", "1"]                # optional placement on existing machines
 * integrations:
 *   - [checker, web]                # or [checker:upstream, web:website]
 * ```
 *
 * Every problem is reported with the file and line it concerns.
 */
import { readFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import type { Document } from "yaml";
import { LineCounter, isMap, isScalar, isSeq, parseDocument } from "yaml";
import type { Bundle, OperatorMeta } from "../api/core";
import { NAME_PATTERN, StewardError, checkConfigValue, readOperatorDir } from "../api/core";
import { parseDuration } from "./wait";

export interface DesiredApplication {
  name: string;
  operatorDir: string;
  bundle: Bundle;
  hash: string;
  meta: OperatorMeta;
  units: number;
  config: Record<string, string | number | boolean>;
  to?: string[];
}

export interface ModelDefinition {
  file: string;
  model?: string;
  updateStatusInterval?: number;
  applications: DesiredApplication[];
  /** Pairs of `app` or `app:endpoint`. */
  integrations: [string, string][];
}

export class ModelFileError extends StewardError {
  constructor(file: string, line: number | undefined, field: string, problem: string) {
    super("invalid-request", `${file}${line ? `:${line}` : ""}: ${field ? `${field}: ` : ""}${problem}`, {
      details: { file, line, field },
    });
  }
}

export async function loadModelFile(path: string): Promise<ModelDefinition> {
  const text = await readFile(path, "utf8").catch(() => {
    throw new StewardError("invalid-request", `${path}: cannot read the model file`);
  });
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, uniqueKeys: true });
  const lineAt = (node: unknown): number | undefined => {
    const r = (node as { range?: [number, number, number] } | undefined)?.range;
    return r ? lc.linePos(r[0]).line : undefined;
  };
  if (doc.errors.length > 0)
    throw new ModelFileError(
      path,
      lc.linePos(doc.errors[0]!.pos[0]).line,
      "",
      `not valid YAML: ${doc.errors[0]!.message.split("\n")[0]}`,
    );
  const fail = (node: unknown, field: string, problem: string): never => {
    throw new ModelFileError(path, lineAt(node), field, problem);
  };
  const root = doc.contents;
  if (!isMap(root)) return fail(root, "", 'must be a mapping with an "applications" section');

  const def: ModelDefinition = { file: path, applications: [], integrations: [] };
  const integrationNodes: unknown[] = [];
  const pending: {
    name: string;
    node: unknown;
    op: unknown;
    units: number;
    config: Map<string, { value: unknown; node: unknown }>;
    to?: string[];
  }[] = [];
  for (const pair of root.items) {
    const key = isScalar(pair.key) ? String(pair.key.value) : "";
    const v = pair.value;
    switch (key) {
      case "model":
        if (!isScalar(v) || typeof v.value !== "string" || !NAME_PATTERN.test(v.value))
          fail(v ?? pair.key, "model", "must be a model name (lower-case letters, digits, hyphens)");
        def.model = (v as { value: string }).value;
        break;
      case "config":
        if (!isMap(v)) {
          fail(v ?? pair.key, "config", "must be a mapping");
          break;
        }
        for (const c of v.items) {
          const ck = isScalar(c.key) ? String(c.key.value) : "";
          if (ck !== "update-status-interval")
            fail(c.key, `config.${ck}`, "is not a model setting (known: update-status-interval)");
          const raw = isScalar(c.value) ? c.value.value : undefined;
          try {
            def.updateStatusInterval = Math.round(parseDuration(String(raw), "update-status-interval") / 1000);
          } catch (e) {
            fail(c.value, "config.update-status-interval", (e as Error).message);
          }
          if (def.updateStatusInterval! < 1 || def.updateStatusInterval! > 3600)
            fail(c.value, "config.update-status-interval", "must be between 1s and 1h");
        }
        break;
      case "applications":
        if (v === null || (isScalar(v) && v.value === null)) break;
        if (!isMap(v)) {
          fail(v ?? pair.key, "applications", "must be a mapping of application name to its definition");
          break;
        }
        for (const a of v.items) {
          const name = isScalar(a.key) ? String(a.key.value) : "";
          const at = `applications.${name}`;
          if (!NAME_PATTERN.test(name) || name.length > 63)
            fail(a.key, at, "is not a valid application name (lower-case letters, digits, hyphens)");
          if (!isMap(a.value)) {
            fail(a.value ?? a.key, at, 'must be a mapping with at least "operator"');
            continue;
          }
          const entry = {
            name,
            node: a.key,
            op: undefined as unknown,
            units: 1,
            config: new Map<string, { value: unknown; node: unknown }>(),
            to: undefined as string[] | undefined,
          };
          for (const f of a.value.items) {
            const fk = isScalar(f.key) ? String(f.key.value) : "";
            const fv = f.value;
            switch (fk) {
              case "operator":
                if (!isScalar(fv) || typeof fv.value !== "string")
                  fail(fv ?? f.key, `${at}.operator`, "must be the path of an operator directory");
                entry.op = fv;
                break;
              case "units": {
                const n = isScalar(fv) ? fv.value : undefined;
                if (typeof n !== "number" || !Number.isInteger(n) || n < 0 || n > 10000)
                  fail(fv ?? f.key, `${at}.units`, "must be a whole number from 0 to 10000");
                entry.units = n as number;
                break;
              }
              case "config":
                if (!isMap(fv)) {
                  fail(fv ?? f.key, `${at}.config`, "must be a mapping of option to value");
                  break;
                }
                for (const c of fv.items) {
                  const ck = isScalar(c.key) ? String(c.key.value) : "";
                  const cv = isScalar(c.value) ? c.value.value : undefined;
                  if (!["string", "number", "boolean"].includes(typeof cv))
                    fail(c.value ?? c.key, `${at}.config.${ck}`, "must be a string, number or boolean");
                  entry.config.set(ck, { value: cv, node: c.value ?? c.key });
                }
                break;
              case "to":
                if (!isSeq(fv) || !fv.items.every((i) => isScalar(i) && /^\d+$/.test(String(i.value))))
                  fail(fv ?? f.key, `${at}.to`, 'must be a list of machine ids such as ["0", "1"]');
                entry.to = (fv as { items: { value: unknown }[] }).items.map((i) => String(i.value));
                break;
              default:
                fail(f.key, `${at}.${fk}`, "is not a known field (known: operator, units, config, to)");
            }
          }
          if (!entry.op) fail(a.key, `${at}.operator`, "is required");
          if (entry.to && entry.to.length > entry.units)
            fail(a.key, `${at}.to`, `names ${entry.to.length} machines for ${entry.units} units`);
          pending.push(entry);
        }
        break;
      case "integrations":
        if (v === null || (isScalar(v) && v.value === null)) break;
        if (!isSeq(v)) {
          fail(v ?? pair.key, "integrations", "must be a list of pairs such as [checker, web]");
          break;
        }
        v.items.forEach((item, i) => {
          const ok =
            isSeq(item) &&
            item.items.length === 2 &&
            item.items.every(
              (e) => isScalar(e) && typeof e.value === "string" && /^[a-z][a-z0-9-]*(:[a-z][a-z0-9-]*)?$/.test(e.value),
            );
          if (!ok) fail(item, `integrations[${i}]`, "must be a pair of app or app:endpoint, such as [checker, web]");
          def.integrations.push((item as { items: { value: string }[] }).items.map((e) => e.value) as [string, string]);
          integrationNodes.push(item);
        });
        break;
      default:
        fail(pair.key, key, "is not a known section (known: model, config, applications)");
    }
  }
  for (const p of pending) {
    const opNode = p.op as { value: string };
    const operatorDir = resolve(dirname(path), opNode.value);
    let loaded;
    try {
      loaded = await readOperatorDir(operatorDir);
    } catch (e) {
      fail(p.op, `applications.${p.name}.operator`, (e as Error).message);
    }
    const { bundle, hash, meta } = loaded!;
    const config: Record<string, string | number | boolean> = {};
    for (const [k, { value, node }] of p.config) {
      const opt = meta.config[k];
      if (!opt)
        fail(
          node,
          `applications.${p.name}.config.${k}`,
          `is not an option of operator ${meta.name} (known: ${Object.keys(meta.config).join(", ") || "none"})`,
        );
      const problem = checkConfigValue(opt!.type, value);
      if (problem) fail(node, `applications.${p.name}.config.${k}`, problem);
      config[k] = value as string;
    }
    def.applications.push({
      name: p.name,
      operatorDir,
      bundle,
      hash,
      meta,
      units: p.units,
      config,
      ...(p.to ? { to: p.to } : {}),
    });
  }
  const apps = new Set(def.applications.map((a) => a.name));
  def.integrations.forEach((pair, i) => {
    for (const ref of pair) {
      const app = ref.split(":")[0]!;
      if (!apps.has(app))
        fail(integrationNodes[i], `integrations[${i}]`, `names application "${app}", which this file does not define`);
    }
    if (pair[0].split(":")[0] === pair[1].split(":")[0])
      fail(
        integrationNodes[i],
        `integrations[${i}]`,
        "integrates an application with itself; peer relations form by themselves",
      );
  });
  return def;
}

export type { Document };
