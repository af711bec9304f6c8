// Renders the server's configuration from what the unit is (primary or standby of whom, which
// standbys are synchronous) and the application's config. The whole of postgresql.conf is ours and
// written again on every change (pg_basebackup and pg_rewind copy the source's, which names the
// source's address): nothing is edited in place, and ALTER SYSTEM is not used.
"use strict";
const {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} = require("node:fs");
const { join } = require("node:path");
const { execFileSync } = require("node:child_process");
const tls = require("./tls");

const owner = () => {
  const id = (flag) => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }).trim());
  return { uid: id("-u"), gid: id("-g") };
};

/** Writes a file as postgres's (mode 0600) when its content differs; true when it changed. */
function writeOwned(path, content) {
  const pod = require("./workload");
  if (pod.podWorkload()) return pod.writeOwnedIn(path, content);
  if (existsSync(path) && readFileSync(path, "utf8") === content) return false;
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, content, { mode: 0o600 });
  const { uid, gid } = owner();
  chownSync(tmp, uid, gid);
  renameSync(tmp, path);
  return true;
}

/** A directory postgres's and 0700 (made in the workload container on a pod: the agent's may not write the storage). */
function ownedDir(path) {
  const pod = require("./workload");
  if (pod.podWorkload()) return pod.exec(["install", "-d", "-m", "0700", "-o", "postgres", "-g", "postgres", path]);
  mkdirSync(path, { recursive: true, mode: 0o700 });
  const { uid, gid } = owner();
  chownSync(path, uid, gid);
  chmodSync(path, 0o700);
}

/** Removes a file or directory of the unit's storage, if there (in the workload container on a pod). */
function removeOwned(path) {
  const pod = require("./workload");
  if (pod.podWorkload()) pod.exec(["rm", "-rf", path]);
  else rmSync(path, { recursive: true, force: true });
}

/** A conninfo value, quoted as libpq wants. */
const cq = (v) => `'${String(v).replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
/** A postgresql.conf string value. */
const gq = (v) => `'${String(v).replace(/'/g, "''")}'`;

/**
 * @param o.address where to listen; o.port; o.config the application's config;
 * @param o.upstream for a standby: {host, port, slot} it streams from (slot empty when catching up from a peer);
 * @param o.appName this unit's application_name (its slot name too);
 * @param o.sync for a primary: {n, names} (synchronous_standby_names = ANY n (names)).
 * @returns true when postgresql.conf or pg_hba.conf changed.
 */
function renderConf(p, o) {
  const lines = [
    "# Written by the postgresql operator on every change: edits here are lost (see operator.yaml's config).",
    `listen_addresses = ${gq(o.address)}`,
    `port = ${o.port}`,
    `unix_socket_directories = ${gq(p.run)}`,
    `max_connections = ${o.config["max-connections"]}`,
    `shared_buffers = ${gq(o.config["shared-buffers"])}`,
    "password_encryption = 'scram-sha-256'",
    "wal_level = replica",
    "wal_log_hints = on",
    "max_wal_senders = 16",
    "max_replication_slots = 16",
    `max_slot_wal_keep_size = ${gq(o.config["max-slot-wal-keep-size"])}`,
    "wal_keep_size = '128MB'",
    "hot_standby = on",
    "hot_standby_feedback = on",
    "wal_receiver_status_interval = '1s'",
    "wal_retrieve_retry_interval = '1s'",
    "recovery_target_timeline = 'latest'",
    "synchronous_commit = on",
    `cluster_name = ${gq(o.appName)}`,
    "log_line_prefix = '%m [%p] %q%u@%d '",
    "log_connections = off",
    "datestyle = 'iso, mdy'",
    "timezone = 'UTC'",
    ...tls.serverLines(p),
  ];
  if (o.sync && o.sync.n > 0 && o.sync.names.length > 0)
    lines.push(
      `synchronous_standby_names = ${gq(`ANY ${o.sync.n} (${o.sync.names.map((n) => `"${n}"`).join(", ")})`)}`,
    );
  else lines.push("synchronous_standby_names = ''");
  if (o.upstream) {
    const conninfo = [
      `host=${cq(o.upstream.host)}`,
      `port=${o.upstream.port}`,
      "user=replication",
      `passfile=${cq(p.pgpass)}`,
      `application_name=${cq(o.appName)}`,
      "connect_timeout=3",
      "keepalives_idle=5",
      "keepalives_interval=2",
      "keepalives_count=3",
      ...tls.clientWords(p),
    ].join(" ");
    lines.push(`primary_conninfo = ${gq(conninfo)}`);
    lines.push(`primary_slot_name = ${gq(o.upstream.slot ?? "")}`);
  }
  const hba = [
    "# Written by the postgresql operator. Locally only postgres, over its own socket directory;",
    "# over the network every user with a password (SCRAM).",
    "local all postgres peer",
    "local replication postgres peer",
    "host replication replication 0.0.0.0/0 scram-sha-256",
    "host replication replication ::/0 scram-sha-256",
    "host all all 0.0.0.0/0 scram-sha-256",
    "host all all ::/0 scram-sha-256",
  ];
  const a = writeOwned(join(p.data, "postgresql.conf"), lines.join("\n") + "\n");
  require("./stamp").noteRendered(p, lines.join("\n"));
  const b = writeOwned(join(p.data, "pg_hba.conf"), hba.join("\n") + "\n");
  // ALTER SYSTEM is never used; a copied auto.conf must not override what is rendered here.
  const c = writeOwned(join(p.data, "postgresql.auto.conf"), "# Not used: see postgresql.conf.\n");
  return a || b || c;
}

/** The passfile libpq reads for operator and replication (0600, postgres's). */
function writePgpass(p, passwords) {
  const esc = (s) => String(s).replace(/\\/g, "\\\\").replace(/:/g, "\\:");
  return writeOwned(
    p.pgpass,
    `*:*:*:operator:${esc(passwords.operator)}\n*:*:*:replication:${esc(passwords.replication)}\n`,
  );
}

module.exports = { renderConf, writePgpass, writeOwned, owner, ownedDir, removeOwned };
