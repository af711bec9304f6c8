// A planned change of primary without losing a commit, used by the switchover action and by the
// rolling restart before the primary restarts. The primary stops (a fast shutdown sends every WAL
// record, its shutdown checkpoint last, to the standbys streaming from it), the target is waited for
// until it has received past that checkpoint, and leadership goes to it (leader-resign --to); its
// leader-elected promotes it, and this unit's next hook rejoins it as a standby.
"use strict";
const t = require("./tools");
const { lsn } = require("./pg");
const { pgName } = require("./paths");
const { sleep } = require("./passwords");
const { peers } = require("./peers");

/** The standbys streaming from this primary, most advanced first: [{unit, host, port, flush}]. */
function streamingStandbys(pg) {
  const flush = new Map(
    pg
      .sql("SELECT application_name, flush_lsn FROM pg_stat_replication WHERE state = 'streaming'")
      .map((r) => [r[0], r[1]]),
  );
  return peers()
    .filter((x) => flush.has(pgName(x.unit)))
    .map((x) => ({ ...x, flush: flush.get(pgName(x.unit)) }))
    .sort((a, b) => (lsn(b.flush) > lsn(a.flush) ? 1 : lsn(b.flush) < lsn(a.flush) ? -1 : 0));
}

/**
 * Hands the primary over to `target` (a streaming standby from {@link streamingStandbys}).
 * Returns {lsn, stoppedMs}; throws (with this unit primary again) when the target did not receive
 * everything in 30 s or leadership could not be handed over.
 */
function switchOver(ctx, target) {
  const { pg, unit } = ctx;
  const t0 = Date.now();
  pg.stop("fast");
  const end = pg.controlCheckpointLsn();
  const until = Date.now() + 30_000;
  for (;;) {
    let got = "";
    try {
      got = pg.remote(target.host, target.port, "SELECT pg_last_wal_receive_lsn()")[0]?.[0] ?? "";
    } catch {
      // Unreachable this instant: try again until the deadline.
    }
    if (lsn(got) > lsn(end)) break;
    if (Date.now() > until) {
      pg.start();
      throw new Error(`${target.unit} did not receive up to ${end} in 30 s; ${unit} is primary again`);
    }
    sleep(100);
  }
  try {
    t.tool("leader-resign", ["--to", target.unit]);
  } catch (err) {
    pg.start();
    throw new Error(`leader-resign failed (${String(err.message).trim().slice(0, 300)}); ${unit} is primary again`);
  }
  return { lsn: end, stoppedMs: Date.now() - t0 };
}

module.exports = { switchOver, streamingStandbys };
