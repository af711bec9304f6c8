// The leader's part: it is the primary. A new cluster is bootstrapped (initdb, the operator and
// replication roles); a leader that finds itself a standby fails over first (failover.js). Then the
// server runs with its synchronous standbys, every peer has a replication slot, leader data says
// where the primary is, and clients get their databases (clients.js).
"use strict";
const t = require("./tools");
const { pgName } = require("./paths");
const { lit } = require("./pg");
const { renderConf, writePgpass } = require("./conf");
const { ensurePasswords, scramVerifier } = require("./passwords");
const { peers, publishSelf } = require("./peers");
const { primaryStatus } = require("./status");
const { markRole } = require("./watchdog");

function reconcilePrimary(hookCtx) {
  let ctx = hookCtx;
  const { pg, p, unit } = ctx;
  const secret = ensurePasswords(ctx.ld);
  writePgpass(p, secret.passwords);
  const patch = { passwords: secret.uri };
  if (!pg.initialized()) {
    if (ctx.ld.primary && ctx.ld.primary !== unit) {
      t.leaderSet(patch);
      t.status(
        "blocked",
        `leader without data: ${ctx.ld.primary} was the primary and this unit never cloned it; it will not start an empty primary`,
      );
      return;
    }
    t.status("maintenance", "initialising the database");
    bootstrap(ctx, secret.passwords);
  } else if (pg.standbySignal() || (pg.running() && pg.inRecovery())) {
    if (!require("./failover").failover(ctx)) return;
    // It published the synchronous standbys it promoted with.
    ctx = { ...ctx, ld: t.leaderGet() };
  } else {
    markRole("primary");
    if (secret.created) {
      // Data but a new secret (the old one was lost): the roles take the new passwords.
      pg.start();
      setRolePasswords(pg, secret.passwords);
    }
  }
  const all = peers();
  const sync = publishSyncStandbys(ctx, all, patch);
  const changed = renderConf(p, {
    address: ctx.address,
    port: ctx.port,
    config: ctx.config,
    appName: ctx.appName,
    sync,
  });
  pg.apply(changed);
  ensureSlots(pg, all);
  t.openPort(ctx.port);
  const timeline = Number.parseInt(pg.value("SELECT substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)"), 16);
  Object.assign(patch, {
    primary: unit,
    "primary-address": `${ctx.address}:${ctx.port}`,
    timeline: String(timeline),
    "sync-standbys": sync.units.join(","),
    "sync-n": String(sync.n),
  });
  // At once: the standbys follow the new primary (and writes are acknowledged again) from here.
  t.leaderSet(changedOnly(ctx.ld, patch));
  // No CHECKPOINT for the old primary's pg_rewind here: it asks for one itself (follower.js rejoin).
  t.leaderSet(changedOnly({ ...ctx.ld, ...patch }, require("./clients").serveClients(ctx, all)));
  publishSelf(ctx.address, ctx.port, "primary");
  primaryStatus(pg);
}

function changedOnly(ld, patch) {
  return Object.fromEntries(Object.entries(patch).filter(([k, v]) => ld[k] !== v));
}

function bootstrap(ctx, passwords) {
  const { pg, p } = ctx;
  pg.run("initdb", [
    "-D",
    p.data,
    "-U",
    "postgres",
    "--auth-local=peer",
    "--auth-host=scram-sha-256",
    "--data-checksums",
    "--encoding=UTF8",
    "--locale=C.UTF-8",
  ]);
  renderConf(p, { address: ctx.address, port: ctx.port, config: ctx.config, appName: ctx.appName });
  markRole("primary");
  pg.start();
  pg.sql("CREATE ROLE operator SUPERUSER LOGIN; CREATE ROLE replication REPLICATION LOGIN;");
  setRolePasswords(pg, passwords);
  t.log(`${ctx.unit}: initialised a new cluster as its primary`);
}

function setRolePasswords(pg, passwords) {
  pg.sql(
    `ALTER ROLE operator PASSWORD ${lit(scramVerifier(passwords.operator))}; ` +
      `ALTER ROLE replication PASSWORD ${lit(scramVerifier(passwords.replication))};`,
  );
}

/**
 * The synchronous standbys ({@link syncStandbys}), published in leader data (with `patch`) before
 * postgres uses a larger set, and after it uses a smaller one, so leader data never names fewer
 * than the server waits for: a failover counts on it.
 */
function publishSyncStandbys(ctx, all, patch = {}) {
  const { ld } = ctx;
  const sync = syncStandbys(ctx, all);
  const published = (ld["sync-standbys"] || "").split(",").filter(Boolean);
  const grown = sync.names.some((n) => !published.includes(n)) || sync.n > Number(ld["sync-n"] || 0);
  if (grown)
    t.leaderSet({
      ...patch,
      "sync-standbys": [...new Set([...published, ...sync.units])].join(","),
      "sync-n": String(Math.max(sync.n, Number(ld["sync-n"] || 0))),
    });
  return sync;
}

/**
 * The synchronous standbys: the peers that have been standbys (a unit still cloning or never
 * cloned cannot acknowledge, and waiting for it would stop every write), ANY n of them.
 */
function syncStandbys(ctx, all) {
  const units = all
    .filter((x) => x.state === "standby")
    .map((x) => x.unit)
    .sort();
  const want = Number(ctx.config["synchronous-standbys"]);
  const n = Math.max(0, Math.min(Number.isFinite(want) ? want : 1, units.length));
  return { n, units: n > 0 ? units : [], names: n > 0 ? units.map(pgName) : [] };
}

/**
 * A physical slot for every peer, kept while it is away (max-slot-wal-keep-size bounds what it
 * holds). A slot goes only when its unit departs (dropSlot): a unit that joined a moment ago may
 * have made its own slot before this leader sees it in the relation.
 */
function ensureSlots(pg, all) {
  const have = new Set(pg.sql("SELECT slot_name FROM pg_replication_slots").map((r) => r[0]));
  for (const name of all.map((x) => pgName(x.unit)))
    if (!have.has(name))
      try {
        pg.sql(`SELECT pg_create_physical_replication_slot(${lit(name)}, true)`);
      } catch (err) {
        // The standby made it itself a moment ago (it does, before cloning).
        if (!/already exists/.test(String(err.message))) throw err;
      }
}

/** The departing unit's slot, unless a standby is streaming on it. */
function dropSlot(pg, unit) {
  const name = pgName(unit);
  pg.sql(
    `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = ${lit(name)} AND NOT active`,
  );
}

module.exports = { reconcilePrimary, ensureSlots, dropSlot, syncStandbys, publishSyncStandbys };
