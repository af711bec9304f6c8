// Day-2 actions: get-primary, get-password, switchover (planned, no lost commit), backup and
// restore. Each runs on one unit, never beside a hook of it.
"use strict";
const { join } = require("node:path");
const t = require("./tools");
const { hookContext, prepareDirs } = require("./cluster");
const { readPasswords } = require("./passwords");
const { switchOver, streamingStandbys } = require("./switchover");
const { splitAddress, writeEpoch } = require("./follower");

const actions = {
  "get-primary"(ctx) {
    if (!ctx.ld.primary) return t.actionFail("there is no primary yet");
    t.actionSet({ primary: ctx.ld.primary, endpoint: ctx.ld["primary-address"] });
  },

  /** Only the cluster's own users (the enum in operator.yaml): client users' passwords are theirs. */
  "get-password"(ctx) {
    const { username } = t.actionGet();
    const passwords = readPasswords(ctx.ld, 5_000);
    if (!passwords) return t.actionFail("the cluster's passwords are not readable yet");
    if (!(username in passwords)) return t.actionFail(`no password for ${username}: operator or replication`);
    t.actionSet({ username, password: passwords[username] });
  },

  /** On the leader: a planned change of primary (switchover.js), to `to` or the most advanced standby. */
  switchover(ctx) {
    const { ld, unit } = ctx;
    if (!ctx.leader || ld.primary !== unit)
      return t.actionFail(`${unit} is not the primary (${ld.primary}): run it on the leader`);
    const { to } = t.actionGet();
    const candidates = streamingStandbys(ctx.pg);
    const target = to ? candidates.find((x) => x.unit === to) : candidates[0];
    if (!target)
      return t.actionFail(to ? `${to} is not a streaming standby of ${unit}` : `no streaming standby of ${unit}`);
    t.actionLog(`stopping the primary ${unit}; ${target.unit} takes over`);
    try {
      const done = switchOver(ctx, target);
      t.actionSet({ from: unit, to: target.unit, lsn: done.lsn, "stopped-ms": String(done.stoppedMs) });
    } catch (err) {
      return t.actionFail(String(err.message));
    }
  },

  backup(ctx) {
    const { pg, p } = ctx;
    if (!pg.running()) return t.actionFail("the server is not running");
    const id = new Date()
      .toISOString()
      .replace(/[-:]/g, "")
      .replace(/\.\d+Z$/, "Z");
    const dir = join(p.backups, id);
    pg.run("pg_basebackup", [
      "-h",
      p.run,
      "-p",
      String(ctx.port),
      "-U",
      "postgres",
      "-D",
      dir,
      "-X",
      "stream",
      "-c",
      "fast",
    ]);
    t.actionSet({ id, path: dir });
  },

  /**
   * On the leader: the primary's data becomes the backup's (the current data is set aside as
   * data.old), it starts on it, and the restore epoch in leader data goes up, which makes every
   * standby clone it again (their data is of a history the restore left).
   */
  restore(ctx) {
    const { pg, p, ld, unit } = ctx;
    if (!ctx.leader || ld.primary !== unit) return t.actionFail(`${unit} is not the primary: run it on the leader`);
    const { backup } = t.actionGet();
    const id = String(backup);
    const valid = /^[0-9TZ]+$/.test(id);
    // Taken on another unit: fetched from it first (backup-fetch.js). The storage is read and written
    // through pg only: in a pod it is the workload container's (lib/workload.js).
    if (valid && !pg.hasBackup(id)) {
      const got = require("./backup-fetch").fetchBackup(pg, p, id, t.actionLog);
      if (got) t.actionSet({ "fetched-from": got.from, "fetched-bytes": String(got.bytes) });
    }
    if (!valid || !pg.hasBackup(id)) {
      const known = pg.backupNames().join(", ");
      return t.actionFail(`no backup ${backup} on ${unit} or a peer that answered (${unit} has: ${known || "none"})`);
    }
    pg.stop("fast");
    pg.setAsideData();
    pg.restoreBackup(id);
    const epoch = String(Number(ld["restore-epoch"] || 0) + 1);
    writeEpoch(pg, epoch);
    t.leaderSet({ "restore-epoch": epoch });
    prepareDirs(p);
    require("./primary").reconcilePrimary({ ...ctx, ld: t.leaderGet() });
    t.actionSet({ restored: backup, epoch });
  },
};

function runAction(name) {
  const ctx = hookContext();
  const act = actions[name];
  if (!act) return t.actionFail(`unknown action ${name}`);
  if (!ctx.p && name !== "get-primary" && name !== "get-password") return t.actionFail("no pgdata storage yet");
  return act(ctx);
}

module.exports = { runAction, splitAddress };
