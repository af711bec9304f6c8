// A unit that is not the leader is a standby of the primary named in leader data. It never runs as
// a primary: one found running so (this unit was the primary and lost leadership) is stopped at
// once, rewound onto the new primary's timeline with pg_rewind (cloned again when that fails) and
// started as its standby. A unit without data clones the primary with pg_basebackup, on a physical
// slot of its own; a running standby follows a new primary by changing primary_conninfo (a reload).
"use strict";
const { join } = require("node:path");
const t = require("./tools");
const { lit } = require("./pg");
const { renderConf, writePgpass, writeOwned } = require("./conf");
const { readPasswords } = require("./passwords");
const { publishSelf } = require("./peers");
const { standbyStatus } = require("./status");
const { markRole } = require("./watchdog");

function reconcileFollower(ctx) {
  const { pg, p, ld, unit } = ctx;
  // Never a primary when not the leader: whatever else happens, first stop one.
  if (pg.running() && (!pg.standbySignal() || !pg.inRecovery())) {
    pg.stop("fast");
    t.log(`${unit}: stopped the server: it ran as a primary and ${unit} is not the leader`, "WARNING");
  }
  // From here it runs as a standby or not at all: its watchdog (on a pod) need not stop it.
  markRole("standby");
  if (!ld.primary || ld.primary === unit) {
    t.status(
      "waiting",
      ld.primary ? "not the leader any more: waiting for the new primary" : "waiting for the primary",
    );
    return;
  }
  const passwords = readPasswords(ld);
  if (!passwords) {
    t.status("waiting", "waiting for the cluster's passwords");
    return;
  }
  writePgpass(p, passwords);
  const [host, port] = splitAddress(ld["primary-address"]);
  const primary = { unit: ld.primary, host, port };
  const epoch = ld["restore-epoch"] || "0";
  if (pg.initialized() && epochOf(pg) !== epoch) {
    t.log(`${unit}: the primary was restored from a backup (epoch ${epoch}): cloning again`);
    pg.stop("immediate");
    pg.setAsideData();
  }
  if (!pg.initialized()) clone(ctx, primary);
  else if (!pg.standbySignal()) rejoin(ctx, primary);
  writeEpoch(pg, epoch);
  const changed = renderConf(p, {
    address: ctx.address,
    port: ctx.port,
    config: ctx.config,
    appName: ctx.appName,
    upstream: { host, port, slot: ctx.appName },
  });
  writeOwned(join(p.data, "standby.signal"), "");
  const settling = pg.apply(changed) || changed;
  t.openPort(ctx.port);
  // A moment for the WAL receiver to connect after a start or a new upstream; otherwise no waiting:
  // a hook that waits here delays the next one (a new primary to follow).
  standbyStatus(pg, primary, settling ? 10_000 : 0);
  publishSelf(ctx.address, ctx.port, "standby");
}

const splitAddress = (a) => {
  const i = a.lastIndexOf(":");
  return [a.slice(0, i), Number(a.slice(i + 1))];
};

function clone(ctx, primary) {
  const { pg, p } = ctx;
  t.status("waiting", `cloning ${primary.unit} (${primary.host}:${primary.port})`);
  publishSelf(ctx.address, ctx.port, "cloning");
  pg.removeData();
  // Its slot on the primary first, so the WAL it needs after the backup is kept until it streams.
  const slot = lit(ctx.appName);
  try {
    pg.remote(
      primary.host,
      primary.port,
      `SELECT pg_create_physical_replication_slot(${slot}, true) WHERE NOT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = ${slot})`,
      { timeoutS: 5 },
    );
  } catch (err) {
    if (!/already exists/.test(String(err.message))) throw err;
  }
  pg.run("pg_basebackup", [
    "-d",
    `host=${primary.host} port=${primary.port} user=replication application_name=${ctx.appName}-clone`,
    "-D",
    p.data,
    "-X",
    "stream",
    "-S",
    ctx.appName,
    "-c",
    "fast",
    "--no-password",
  ]);
  t.log(`${ctx.unit}: cloned ${primary.unit}`);
}

/** This unit was a primary: onto the new primary's timeline with pg_rewind, or cloned again. */
function rejoin(ctx, primary) {
  const { pg, p, unit } = ctx;
  t.status("maintenance", `rejoining as a standby of ${primary.unit} (pg_rewind)`);
  pg.stop("fast");
  const state = pg.clusterState();
  const note = (line) => pg.appendNote("rejoin.log", `${new Date().toISOString()} ${line}\n`);
  note(
    `rejoining ${primary.unit} at ${primary.host}:${primary.port}; cluster state "${state}", timeline ${pg.controlTimeline()}`,
  );
  if (state !== "shut down" && state !== "shut down in recovery") pg.recoverSingleUser();
  try {
    // The source's control file must show its new timeline (a promotion writes it at its first
    // checkpoint), or pg_rewind finds "no rewind required" and this unit diverges.
    pg.remote(primary.host, primary.port, "CHECKPOINT", { timeoutS: 5 });
    const out = pg.run("pg_rewind", [
      "-D",
      p.data,
      "--source-server",
      `host=${primary.host} port=${primary.port} user=operator dbname=postgres`,
      "--no-ensure-shutdown",
    ]);
    t.log(`${unit}: pg_rewind onto ${primary.unit}: ${out.trim().split("\n").pop()}`);
    note(`pg_rewind: ${`${out}\n${pg.lastStderr}`.trim().replace(/\n/g, " / ")}`);
  } catch (err) {
    note(`pg_rewind failed, cloning again: ${String(err.message)}`);
    t.log(`${unit}: pg_rewind failed; cloning again: ${String(err.message).slice(0, 400)}`, "WARNING");
    pg.setAsideData();
    clone(ctx, primary);
  }
}

/** The restore epoch this unit's data is of, in its storage (through pg: a pod's is the workload container's). */
const epochOf = (pg) => pg.readNote("restore-epoch")?.trim() || "0";
const writeEpoch = (pg, epoch) => {
  if (epochOf(pg) !== epoch) pg.writeNote("restore-epoch", `${epoch}\n`);
};

module.exports = { reconcileFollower, splitAddress, writeEpoch };
