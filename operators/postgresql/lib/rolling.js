// Rolling restarts (Patroni's, and the Juju charms' rolling-ops): a setting that only a restart
// applies, or a refresh to another operator version, restarts the units one at a time, standbys first
// and the primary last, after it has switched over, so writes stop only for a switchover.
//
// Over the peer relation: every unit publishes what its server runs (`runs`, stamp.js) and, while it
// needs a restart, a `restart-request`. The leader grants one unit at a time (`rolling-grant` in leader
// data): the requesting standbys in unit order, then itself, once every standby streaming from it runs
// what it wants. A granted standby restarts, waits until it streams again and withdraws its request,
// which releases the grant. The primary's turn is a switchover to the most advanced standby (no
// acknowledged commit lost); it then rejoins the new primary as a standby with the new settings,
// which is its restart, and the new leader finishes the queue. Everything is in relation data, leader
// data and the stamp file on storage, so a hook re-run or an agent restart picks it up where it was;
// a grant to a unit that departed is dropped.
"use strict";
const t = require("./tools");
const { peerRelation } = require("./peers");
const { wantedStamp, startedWith } = require("./stamp");
const { switchOver, streamingStandbys } = require("./switchover");
const { standbyStatus } = require("./status");

const REQUEST = "restart-request";
const RUNS = "runs";
const GRANT = "rolling-grant";

const unitNumber = (u) => Number(u.slice(u.lastIndexOf("/") + 1));
const byNumber = (a, b) => unitNumber(a) - unitNumber(b);

/** The running server was started with other settings (or another operator version) than rendered now. */
const needsRestart = (ctx) => ctx.pg.running() && startedWith(ctx.p) !== wantedStamp(ctx.p);

/** What the peers published for the queue: [{unit, request, runs}]. */
function peerQueue(rel) {
  return t.relationUnits(rel).map((unit) => {
    const d = t.relationGet(rel, unit);
    return { unit, request: d[REQUEST] || "", runs: d[RUNS] || "" };
  });
}

/** Runs after the unit's reconcile: takes its turn, or (the leader) moves the queue on. */
function rollingRestart(ctx) {
  const { pg, unit } = ctx;
  const rel = peerRelation();
  if (!pg.initialized() || !pg.running()) return;
  const ld = t.leaderGet();
  const recovering = pg.inRecovery();
  if (ctx.leader && ld.primary === unit && !recovering) return asPrimary(ctx, rel, ld);
  if (!ctx.leader && ld.primary && ld.primary !== unit && pg.standbySignal() && recovering)
    return asStandby(ctx, rel, ld);
}

function asStandby(ctx, rel, ld) {
  const { pg, p, unit } = ctx;
  let need = needsRestart(ctx);
  const primary = primaryOf(ld);
  if (need && ld[GRANT] === unit) {
    t.status("maintenance", "restarting (rolling)");
    const before = startedWith(p);
    pg.stop("fast");
    pg.start();
    t.log(`${unit}: restarted (rolling): ${before || "unknown"} -> ${startedWith(p)}`);
    need = needsRestart(ctx);
    standbyStatus(pg, primary, 60_000);
  }
  const streaming = pg.value("SELECT status FROM pg_stat_wal_receiver") === "streaming";
  // Released only once it streams again: the next unit's restart must not leave the primary without a standby.
  let request = "";
  if (need) request = `${startedWith(p) || "unknown"} -> ${wantedStamp(p)}`;
  else if (!streaming && ownData(rel, unit)[REQUEST]) request = "restarted, waiting to stream";
  if (need && ld[GRANT] !== unit) {
    const queue = rel ? peerQueue(rel) : [];
    const ahead = new Set(
      queue
        .filter((x) => x.request && x.unit !== ld.primary && byNumber(x.unit, unit) < 0)
        .map((x) => x.unit)
        .concat(ld[GRANT] && ld[GRANT] !== unit ? [ld[GRANT]] : []),
    );
    t.status("waiting", `waiting for a rolling restart (${ahead.size} ahead)`);
  }
  publish(rel, unit, { [RUNS]: startedWith(p), [REQUEST]: request });
}

function asPrimary(ctx, rel, ld) {
  const { pg, p, unit } = ctx;
  const need = needsRestart(ctx);
  const want = wantedStamp(p);
  const queue = rel ? peerQueue(rel) : [];
  const byUnit = new Map(queue.map((x) => [x.unit, x]));
  let grant = ld[GRANT] || "";
  // Released (its request withdrawn) or departed; or this unit's own turn is over.
  if (grant && grant !== unit && !byUnit.get(grant)?.request) grant = "";
  if (grant === unit && !need) grant = "";
  // Standbys streaming from it that run something else than it wants and have not asked yet: their
  // hook for the same change (config-changed, upgrade) is still to come.
  const behind = need ? streamingStandbys(pg).filter((x) => byUnit.get(x.unit)?.runs !== want) : [];
  const undecided = behind.filter((x) => !byUnit.get(x.unit)?.request);
  if (!grant) {
    const next = queue
      .filter((x) => x.request)
      .map((x) => x.unit)
      .sort(byNumber)[0];
    // In unit order: once every standby that will ask has asked (as far as this unit can tell).
    if (next && undecided.length === 0) grant = next;
    else if (!next && need && behind.length === 0) grant = unit;
  }
  if (grant !== (ld[GRANT] || "")) t.leaderSet({ [GRANT]: grant });
  publish(rel, unit, {
    [RUNS]: startedWith(p),
    [REQUEST]: need ? `${startedWith(p) || "unknown"} -> ${want}` : "",
  });
  if (!need) return;
  if (grant !== unit) {
    const ahead = new Set(queue.filter((x) => x.request).map((x) => x.unit));
    for (const x of behind) ahead.add(x.unit);
    if (grant) ahead.add(grant);
    t.status("active", `primary, waiting for a rolling restart (${ahead.size} ahead)`);
    return;
  }
  if (queue.length === 0) {
    // Alone: nobody to switch over to; the restart is the only way to the new settings.
    t.status("maintenance", "restarting (rolling)");
    pg.stop("fast");
    pg.start();
    t.log(`${unit}: restarted (rolling), no standby to switch over to`);
    require("./status").primaryStatus(pg);
    publish(rel, unit, { [RUNS]: startedWith(p), [REQUEST]: "" });
    return;
  }
  const target = streamingStandbys(pg).find((x) => byUnit.get(x.unit)?.runs === want);
  if (!target) {
    t.status("active", "primary, waiting for a rolling restart: no streaming standby to switch over to");
    return;
  }
  t.status("maintenance", `restarting (rolling): switching over to ${target.unit}`);
  try {
    const done = switchOver(ctx, target);
    t.log(`${unit}: switched over to ${target.unit} at ${done.lsn} (stopped ${done.stoppedMs} ms) before restarting`);
    t.status("maintenance", `restarting (rolling): ${target.unit} took over; rejoining as its standby`);
  } catch (err) {
    t.log(`${unit}: rolling restart: ${String(err.message)}`, "WARNING");
    t.status("active", `primary, waiting for a rolling restart: switchover failed (${String(err.message)})`);
  }
}

const primaryOf = (ld) => {
  const a = ld["primary-address"] || "";
  const i = a.lastIndexOf(":");
  return { unit: ld.primary, host: a.slice(0, i), port: Number(a.slice(i + 1)) };
};

const ownData = (rel, unit) => (rel ? t.relationGet(rel, unit) : {});

/** This unit's queue data, written when it changed (committed when the hook ends). */
function publish(rel, unit, want) {
  if (!rel) return;
  const cur = ownData(rel, unit);
  if (Object.entries(want).some(([k, v]) => (cur[k] || "") !== v)) t.relationSet(rel, want);
}

module.exports = { rollingRestart, needsRestart };
