/**
 * The patch formats the fake accepts: JSON merge patch (RFC 7386, `application/merge-patch+json`:
 * objects merge key by key, `null` removes a key, anything else replaces) and JSON patch (RFC 6902,
 * `application/json-patch+json`: add, remove, replace, move, copy, test with RFC 6901 pointers).
 * Strategic merge patch is not modelled (it merges lists by their patch keys, per field).
 */
import { KubeStatusError } from "./status";

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
const isObject = (v: unknown): v is Record<string, Json> => typeof v === "object" && v !== null && !Array.isArray(v);

export function mergePatch(target: unknown, patch: unknown): Json {
  if (!isObject(patch)) return structuredClone(patch as Json);
  const out: Record<string, Json> = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

const unprocessable = (message: string): KubeStatusError => new KubeStatusError(422, "Invalid", message);

function pointer(path: string): string[] {
  if (path === "") return [];
  if (!path.startsWith("/")) throw unprocessable(`the json patch path ${JSON.stringify(path)} does not start with /`);
  return path
    .slice(1)
    .split("/")
    .map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
}

/** The parent container of `path` and the last token, for changing it in place. */
function locate(doc: Json, tokens: string[], path: string): { parent: Json[] | Record<string, Json>; key: string } {
  let cur: Json = doc;
  for (const t of tokens.slice(0, -1)) {
    if (Array.isArray(cur)) cur = cur[Number(t)] as Json;
    else if (isObject(cur) && Object.hasOwn(cur, t)) cur = cur[t]!;
    else throw unprocessable(`the json patch path ${path} does not exist`);
    if (cur === undefined) throw unprocessable(`the json patch path ${path} does not exist`);
  }
  if (!Array.isArray(cur) && !isObject(cur))
    throw unprocessable(`the json patch path ${path} does not name a member of an object or array`);
  return { parent: cur, key: tokens[tokens.length - 1]! };
}

function getAt(doc: Json, path: string): Json {
  let cur: Json | undefined = doc;
  for (const t of pointer(path)) {
    cur = Array.isArray(cur) ? cur[Number(t)] : isObject(cur) && Object.hasOwn(cur, t) ? cur[t] : undefined;
    if (cur === undefined) throw unprocessable(`the json patch path ${path} does not exist`);
  }
  return cur;
}

function index(arr: Json[], key: string, path: string, forAdd: boolean): number {
  if (forAdd && key === "-") return arr.length;
  if (!/^(0|[1-9][0-9]*)$/.test(key)) throw unprocessable(`the json patch path ${path} has a bad array index`);
  const i = Number(key);
  if (i > arr.length || (!forAdd && i === arr.length))
    throw unprocessable(`the json patch path ${path}: index ${i} is out of bounds`);
  return i;
}

function add(doc: Json, path: string, value: Json): Json {
  const tokens = pointer(path);
  if (tokens.length === 0) return value;
  const { parent, key } = locate(doc, tokens, path);
  if (Array.isArray(parent)) parent.splice(index(parent, key, path, true), 0, value);
  else parent[key] = value;
  return doc;
}

function remove(doc: Json, path: string): Json {
  const tokens = pointer(path);
  if (tokens.length === 0) throw unprocessable("a json patch cannot remove the whole document");
  const { parent, key } = locate(doc, tokens, path);
  if (Array.isArray(parent)) parent.splice(index(parent, key, path, false), 1);
  else if (Object.hasOwn(parent, key)) delete parent[key];
  else throw unprocessable(`the json patch path ${path} does not exist`);
  return doc;
}

export function jsonPatch(target: unknown, ops: unknown): Json {
  if (!Array.isArray(ops)) throw new KubeStatusError(400, "BadRequest", "a json patch must be an array of operations");
  let doc = structuredClone(target as Json);
  for (const op of ops as Record<string, Json>[]) {
    const path = typeof op?.path === "string" ? op.path : undefined;
    if (path === undefined) throw unprocessable(`json patch operation ${JSON.stringify(op)} has no path`);
    switch (op.op) {
      case "add":
        doc = add(doc, path, structuredClone(op.value ?? null));
        break;
      case "remove":
        doc = remove(doc, path);
        break;
      case "replace":
        getAt(doc, path);
        doc = remove(doc, path);
        doc = add(doc, path, structuredClone(op.value ?? null));
        break;
      case "move":
      case "copy": {
        if (typeof op.from !== "string") throw unprocessable(`json patch ${String(op.op)} has no from`);
        const v = structuredClone(getAt(doc, op.from));
        if (op.op === "move") doc = remove(doc, op.from);
        doc = add(doc, path, v);
        break;
      }
      case "test":
        if (JSON.stringify(getAt(doc, path)) !== JSON.stringify(op.value))
          throw unprocessable(`json patch test failed at ${path}`);
        break;
      default:
        throw unprocessable(`unknown json patch operation ${JSON.stringify(op.op)}`);
    }
  }
  return doc;
}
