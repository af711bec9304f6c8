// The agent's hook tools. A Node operator may call them in-process (STEWARD_TOOLS_MODULE,
// docs/operators.md): starting a program per call was most of a hook's time (about 100 ms each, and
// a reconcile calls twenty). Without it (an older agent), the programs, with the same answers.
// Values that must stay secret go as input (stdin), never in arguments.
"use strict";
const { spawnSync } = require("node:child_process");

const inProcess = (() => {
  const path = process.env.STEWARD_TOOLS_MODULE;
  if (!path) return undefined;
  try {
    return require(path);
  } catch {
    return undefined;
  }
})();

/** Runs a hook tool: {status, stdout, stderr}; never throws. */
function runTool(name, args = [], { input = "", timeoutMs } = {}) {
  if (inProcess) {
    const r = inProcess.runTool(name, args, { input, timeoutMs });
    return { status: r.code, stdout: r.stdout, stderr: r.stderr };
  }
  const r = spawnSync(name, args, { encoding: "utf8", input, timeout: timeoutMs, maxBuffer: 16 << 20 });
  return { status: r.status ?? -1, stdout: r.stdout ?? "", stderr: r.stderr || (r.error ? String(r.error) : "") };
}

/** Runs a hook tool; returns its standard output without the trailing newline, or throws with its stderr. */
function tool(name, args = [], input) {
  const r = runTool(name, args, { input });
  if (r.status !== 0) {
    const err = new Error(`${name} failed (${r.status}): ${r.stderr.trim()}`);
    err.status = r.status;
    throw err;
  }
  return r.stdout.replace(/\n$/, "");
}

/** Like {@link tool}, but undefined when the tool refuses (exit 1), e.g. a secret that is not there. */
function tryTool(name, args = [], input) {
  try {
    return tool(name, args, input);
  } catch {
    return undefined;
  }
}

const json = (name, args = []) => JSON.parse(tool(name, [...args, "--format", "json"]) || "null");

const hookTools = {
  isLeader: () => tool("is-leader") === "true",
  config: () => json("config-get"),
  leaderGet: () => json("leader-get") ?? {},
  leaderSet: (patch) => {
    const words = Object.entries(patch).map(([k, v]) => `${k}=${v ?? ""}`);
    if (words.length) tool("leader-set", words);
  },
  status: (state, message) => tool("status-set", [state, message]),
  log: (message, level = "INFO") => tryTool("log", ["--level", level, message]),
  relationIds: (endpoint) => json("relation-ids", [endpoint]) ?? [],
  relationUnits: (rel) => json("relation-list", ["-r", rel]) ?? [],
  relationApp: (rel) => tool("relation-list", ["-r", rel, "--app"]),
  relationGet: (rel, who, app = false) =>
    JSON.parse(tool("relation-get", ["-r", rel, ...(app ? ["--app"] : []), "-", ...(who ? [who] : [])]) || "{}"),
  relationSet: (rel, patch, app = false) => {
    const words = Object.entries(patch).map(([k, v]) => `${k}=${v ?? ""}`);
    if (words.length) tool("relation-set", ["-r", rel, ...(app ? ["--app"] : []), ...words]);
  },
  openPort: (port) => tool("open-port", [`${port}/tcp`]),
  openedPorts: () => json("opened-ports") ?? [],
  closePort: (spec) => tool("close-port", [spec]),
  storageLocation: (name) => {
    const ids = json("storage-list", [name]) ?? [];
    if (!ids.length) return undefined;
    return tool("storage-get", ["-s", ids[0], "location"]);
  },
  /** Adds an application-owned secret from a map (values on stdin); returns its uri. */
  secretAdd: (label, values) =>
    tool("secret-add", ["--owner", "application", "--label", label, "--file", "-"], JSON.stringify(values)),
  /** The values of a secret (the owner reads the latest; a reader refreshes to it), or undefined. */
  secretGet: (uri, { refresh = false } = {}) => {
    const out = tryTool("secret-get", [uri, ...(refresh ? ["--refresh"] : []), "--format", "json"]);
    return out ? JSON.parse(out) : undefined;
  },
  secretGrant: (uri, rel) => tool("secret-grant", [uri, "--relation", rel]),
  actionGet: () => json("action-get") ?? {},
  actionSet: (patch) => {
    const words = Object.entries(patch).map(([k, v]) => `${k}=${v}`);
    if (words.length) tool("action-set", words);
  },
  actionFail: (message) => tool("action-fail", [message]),
  actionLog: (message) => tryTool("action-log", [message]),
};

module.exports = { runTool, tool, tryTool, ...hookTools };
