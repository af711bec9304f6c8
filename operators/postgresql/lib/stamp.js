// What the running server was started with: the operator's version and the settings that only a
// restart applies. Recorded at every start (pg.js) and compared with what the operator now renders,
// so a unit knows it needs a restart (rolling.js) after a refresh to another operator version or a
// change of max-connections / shared-buffers, across hook re-runs and agent restarts.
"use strict";
const { existsSync, readFileSync, writeFileSync } = require("node:fs");
const { join } = require("node:path");
const { createHash } = require("node:crypto");

/**
 * The postmaster-context settings the operator renders that are the same on every unit (so stamps
 * compare across units). `port` is left out: a new port restarts each server at once (pg.js), since
 * standbys reach the primary on the port leader data names. listen_addresses, cluster_name and the
 * socket directory are the unit's own and never change.
 */
const RESTART_SETTINGS = [
  "max_connections",
  "shared_buffers",
  "wal_level",
  "wal_log_hints",
  "max_wal_senders",
  "max_replication_slots",
  "hot_standby",
  "password_encryption",
];

/** operator.yaml's version (the directory this code was read from is the operator's). */
function operatorVersion() {
  const yaml = readFileSync(join(__dirname, "..", "operator.yaml"), "utf8");
  const m = /^version:\s*["']?([^"'\n#]+?)["']?\s*(#.*)?$/m.exec(yaml);
  return m ? m[1] : "unknown";
}

/**
 * Both stamps are kept in the unit's own data directory (STEWARD_UNIT_DATA), which its agent may always
 * read and write: in a pod, the PostgreSQL data directory belongs to the workload container's postgres
 * and may not be readable from the agent's container.
 */
const own = (p, name) => join(process.env.STEWARD_UNIT_DATA || p.base, name);

/** Called by conf.js with every postgresql.conf it renders: the hash of its restart-only settings. */
function noteRendered(p, confText) {
  const lines = confText
    .split("\n")
    .filter((l) => RESTART_SETTINGS.includes(l.split("=")[0].trim()))
    .sort();
  writeFileSync(own(p, "rendered-with"), createHash("sha256").update(lines.join("\n")).digest("hex").slice(0, 12));
}

/** "<operator version> <hash of the restart settings>" of the postgresql.conf rendered last. */
function wantedStamp(p) {
  const file = own(p, "rendered-with");
  return `${operatorVersion()} ${existsSync(file) ? readFileSync(file, "utf8").trim() : "none"}`;
}

/** Called after the server started: it runs what is rendered now. */
function noteStarted(p) {
  writeFileSync(own(p, "started-with"), `${wantedStamp(p)}\n`);
}

/** What the running server was started with ("" when unknown: started by an operator before stamps). */
function startedWith(p) {
  const file = own(p, "started-with");
  return existsSync(file) ? readFileSync(file, "utf8").trim() : "";
}

module.exports = { operatorVersion, wantedStamp, noteRendered, noteStarted, startedWith, RESTART_SETTINGS };
