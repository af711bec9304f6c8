// A leader that is a standby promotes itself, without losing an acknowledged commit. The rule:
// the old primary acknowledged a commit once ANY n of its synchronous standbys S (published in
// leader data before it used them) had flushed it, so every acknowledged commit is on at least n
// members of S. Positions are learnt from |S| - n + 1 members of S (this unit counts if it is one):
// any n members of S then include one of them, so the most advanced of them has every acknowledged
// commit. Fewer reachable: blocked, with who is missing (nothing is promoted; the next hook tries
// again). This unit first streams from a more advanced standby until it has caught up, then
// promotes. With synchronous-standbys 0 (asynchronous), the most advanced reachable standby is
// caught up from and commits not on it are lost, as asynchronous replication always allows.
"use strict";
const t = require("./tools");
const { lsn } = require("./pg");
const { renderConf } = require("./conf");
const { peers } = require("./peers");
const { sleep } = require("./passwords");

const POSITION = "SELECT pg_is_in_recovery(), pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()";
const maxLsn = (a, b) => (lsn(a) >= lsn(b) ? a : b);

/** Promotes this standby; false (with the status saying why) when it must not yet. */
function failover(ctx) {
  const { pg, p, ld, unit } = ctx;
  const old = ld.primary;
  t.status("maintenance", `failover: taking over from ${old || "no primary"}; checking the standbys' positions`);
  if (!pg.running()) pg.start();
  const S = (ld["sync-standbys"] || "").split(",").filter(Boolean);
  const n = Number(ld["sync-n"] || 0);
  const others = peers().filter((x) => x.unit !== unit && x.host);
  // The old primary, if it still answers as a primary, has not stepped down: promoting now would
  // make two. Its agent stops it once it knows it is not the leader; wait for that, a little.
  const oldPeer = others.find((x) => x.unit === old);
  if (oldPeer) {
    const until = Date.now() + 20_000;
    while (stillPrimary(pg, oldPeer)) {
      if (Date.now() > until) {
        t.status("blocked", `failover held: ${old} still runs as primary at ${oldPeer.host}:${oldPeer.port}`);
        return false;
      }
      sleep(1000);
    }
  }
  const mine = pg.sql(POSITION)[0];
  const positions = new Map([[unit, maxLsn(mine[1], mine[2])]]);
  const unreachable = [];
  for (const x of others) {
    if (x.unit === old) continue;
    try {
      const [rec, recv, replay] = pg.remote(x.host, x.port, POSITION)[0];
      if (rec !== "t") {
        t.status("blocked", `failover held: ${x.unit} runs as a primary; only ${unit} may`);
        return false;
      }
      positions.set(x.unit, maxLsn(recv, replay));
    } catch {
      unreachable.push(x.unit);
    }
  }
  if (S.length > 0 && n > 0) {
    const need = S.length - n + 1;
    const known = S.filter((u) => positions.has(u));
    if (known.length < need) {
      t.status(
        "blocked",
        `failover held: the positions of ${S.filter((u) => !positions.has(u)).join(", ")} are unknown; an acknowledged ` +
          `commit (ANY ${n} of ${S.join(", ")}) may be only there: ${need} of them must answer`,
      );
      return false;
    }
  }
  const [bestUnit, bestLsn] = [...positions].reduce((a, b) => (lsn(b[1]) > lsn(a[1]) ? b : a));
  if (bestUnit !== unit && lsn(bestLsn) > lsn(positions.get(unit))) {
    const best = others.find((x) => x.unit === bestUnit);
    t.status("maintenance", `failover: catching up from ${bestUnit} (at ${bestLsn})`);
    renderConf(p, {
      address: ctx.address,
      port: ctx.port,
      config: ctx.config,
      appName: ctx.appName,
      upstream: { host: best.host, port: best.port, slot: "" },
    });
    pg.reload();
    const until = Date.now() + 120_000;
    for (;;) {
      const [, recv, replay] = pg.sql(POSITION)[0];
      if (lsn(maxLsn(recv, replay)) >= lsn(bestLsn)) break;
      if (Date.now() > until) {
        t.status("blocked", `failover held: could not catch up from ${bestUnit} to ${bestLsn}`);
        return false;
      }
      sleep(250);
    }
  }
  // Stop streaming from anyone, then promote (everything received is replayed first). Synchronous
  // from its first commit as primary: the standbys it waits for are in force before the promotion
  // (a standby ignores them until then), so no commit is acknowledged on this unit alone.
  const sync = require("./primary").publishSyncStandbys(ctx, peers());
  renderConf(p, { address: ctx.address, port: ctx.port, config: ctx.config, appName: ctx.appName, sync });
  pg.reloadAndWait();
  require("./watchdog").markRole("primary");
  pg.sql("SELECT pg_promote(true, 120)", { timeoutMs: 180_000 });
  t.log(
    `${unit}: promoted after ${old || "no primary"} (positions: ${[...positions].map(([u, l]) => `${u} ${l}`).join(", ")}` +
      `${unreachable.length ? `; unreachable: ${unreachable.join(", ")}` : ""})`,
  );
  return true;
}

function stillPrimary(pg, x) {
  try {
    return pg.remote(x.host, x.port, "SELECT pg_is_in_recovery()", { timeoutS: 2 })[0]?.[0] === "f";
  } catch {
    return false;
  }
}

module.exports = { failover };
