// The agent's hook tools, called as the programs they are (execFileSync), so every hook and action
// speaks to the agent the same way. Values that must stay secret go on standard input, never argv.
"use strict";
const { execFileSync } = require("node:child_process");

/** Runs a hook tool; returns its standard output without the trailing newline. */
function tool(name, args = [], input) {
  return execFileSync(name, args, {
    encoding: "utf8",
    input: input ?? "",
    stdio: ["pipe", "pipe", "pipe"],
    maxBuffer: 4 << 20,
  }).replace(/\n$/, "");
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

module.exports = { tool, tryTool, ...hookTools };
