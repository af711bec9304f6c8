// What a unit says about itself: "primary", "standby, lag N bytes" (behind the primary's current
// position), or blocked with the reason when a standby is not streaming.
"use strict";
const t = require("./tools");
const { lsn } = require("./pg");
const { sleep } = require("./passwords");

function primaryStatus(pg) {
  const streaming = pg.sql("SELECT application_name, sync_state FROM pg_stat_replication WHERE state = 'streaming'");
  t.status("active", "primary");
  return streaming;
}

/** A standby's status; waits up to `waitMs` for its WAL receiver to stream. Returns true when streaming. */
function standbyStatus(pg, primary, waitMs = 0) {
  const until = Date.now() + waitMs;
  let receiver;
  for (;;) {
    receiver = pg.sql("SELECT status, sender_host FROM pg_stat_wal_receiver")[0];
    if (receiver?.[0] === "streaming" || Date.now() > until) break;
    sleep(500);
  }
  if (receiver?.[0] !== "streaming") {
    t.status("blocked", `replication broken: not streaming from ${primary.unit} (${primary.host}:${primary.port})`);
    return false;
  }
  let lag = "?";
  try {
    const head = pg.remote(primary.host, primary.port, "SELECT pg_current_wal_lsn()", { timeoutS: 2 })[0]?.[0];
    const mine = pg.value("SELECT pg_last_wal_replay_lsn()");
    const d = lsn(head) - lsn(mine);
    lag = String(d < 0n ? 0n : d);
  } catch {
    // The primary answered the stream but not a query: say what is known.
  }
  t.status("active", `standby, lag ${lag} bytes`);
  return true;
}

module.exports = { primaryStatus, standbyStatus };
