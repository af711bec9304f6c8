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

/** "<operator version> <hash of the restart settings>" of the postgresql.conf now in the data directory. */
function wantedStamp(p) {
  const conf = join(p.data, "postgresql.conf");
  const text = existsSync(conf) ? readFileSync(conf, "utf8") : "";
  const lines = text
    .split("\n")
    .filter((l) => RESTART_SETTINGS.includes(l.split("=")[0].trim()))
    .sort();
  const hash = createHash("sha256").update(lines.join("\n")).digest("hex").slice(0, 12);
  return `${operatorVersion()} ${hash}`;
}

const stampFile = (p) => join(p.base, "started-with");

/** Called after the server started: it runs what is rendered now. */
function noteStarted(p) {
  writeFileSync(stampFile(p), `${wantedStamp(p)}\n`);
}

/** What the running server was started with ("" when unknown: started by an operator before stamps). */
function startedWith(p) {
  return existsSync(stampFile(p)) ? readFileSync(stampFile(p), "utf8").trim() : "";
}

module.exports = { operatorVersion, wantedStamp, noteStarted, startedWith, RESTART_SETTINGS };
