// The between-hooks watchdog: a primary cut off from the controller loses its leadership while no
// hook runs on it (hooks need the controller), and until its next hook it would keep taking writes
// its standbys may never follow. This process, one per unit, started by every hook (ensureWatchdog)
// in its own session so that it outlives the hook and the agent (a restarted agent does not kill
// it; a dead one is started again by the next hook), checks every second whether the local server
// runs as a primary and, if so, asks `is-leader` through the unit's own tool context
// (STEWARD_UNIT_CONTEXT_ID). The agent answers false once another unit could have claimed the
// lease (agent/leadership.ts), even while it cannot reach the controller; on false, or when no
// answer comes for ERROR_GRACE_MS, it stops the server at once (a fast shutdown: sessions end,
// commits waiting for a standby are never acknowledged; immediate if that hangs). The unit's next hook rejoins it as a
// standby (follower.js), or starts it again when it still leads. What it does goes to watchdog.log.
"use strict";
const { spawn } = require("node:child_process");
const { runTool } = require("./tools");
const { appendFileSync, existsSync, openSync, readFileSync, readlinkSync, writeFileSync } = require("node:fs");
const { join } = require("node:path");

const BIN = "/usr/lib/postgresql/15/bin";
const INTERVAL_MS = 1000;
/** is-leader failing (the agent restarting, its socket gone) this long counts as not knowing. */
const ERROR_GRACE_MS = 5000;
/** A fast shutdown still under way after this long becomes an immediate one. */
const IMMEDIATE_AFTER_MS = 10_000;

const pidFile = (base) => join(base, "watchdog.pid");

/** The pid in the file if it is this file's watchdog for `base`, running; else undefined. */
function runningPid(base) {
  try {
    const pid = Number(readFileSync(pidFile(base), "utf8").trim());
    const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    return argv.includes(__filename) && argv.includes(base) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** From a hook: starts the watchdog unless it runs (a refreshed operator's new file starts a new one). */
function ensureWatchdog(p) {
  // In a pod the server runs in the workload container, out of this process's sight (the pid file's
  // pid and /proc are that container's), and its own files would be written to the claim from the
  // agent's container: not started there (README: Limits).
  if (require("./workload").podWorkload()) return;
  if (runningPid(p.base)) return;
  stopOther(p.base);
  const env = { ...process.env };
  // Its hook's context ends with the hook; the unit's context lasts as long as the unit.
  delete env.STEWARD_CONTEXT_ID;
  const out = openSync(join(p.base, "watchdog.log"), "a");
  const child = spawn(process.execPath, [__filename, p.base], {
    detached: true,
    stdio: ["ignore", out, out],
    env,
  });
  writeFileSync(pidFile(p.base), `${child.pid}\n`);
  child.unref();
}

/** A watchdog of another operator version (its file elsewhere), or the one to stop at the unit's end. */
function stopOther(base) {
  try {
    const pid = Number(readFileSync(pidFile(base), "utf8").trim());
    const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    if (argv.some((a) => a.endsWith("/lib/watchdog.js")) && argv.includes(base)) process.kill(pid, "SIGTERM");
  } catch {
    // Not running.
  }
}

/** The stop and remove hooks: the unit goes, its watchdog too. */
function stopWatchdog(p) {
  stopOther(p.base);
}

/** The postmaster's pid when the server in `data` runs as a primary (no standby.signal), else undefined. */
function primaryPid(data) {
  if (existsSync(join(data, "standby.signal"))) return undefined;
  try {
    const pid = Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0]);
    const ours = readlinkSync(`/proc/${pid}/exe`).startsWith(BIN) && readlinkSync(`/proc/${pid}/cwd`) === data;
    return ours ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** "true", "false", or undefined when the agent did not answer. */
function isLeader() {
  const r = runTool("is-leader", [], { timeoutMs: 10_000 });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

function watch(base) {
  const data = join(base, "data");
  const note = (line) => appendFileSync(join(base, "watchdog.log"), `${new Date().toISOString()} ${line}\n`);
  note(`watching ${data} (pid ${process.pid})`);
  let lastAnswer = Date.now();
  let stopped = 0;
  let stoppedAt = 0;
  const tick = () => {
    if (!existsSync(base)) return process.exit(0); // the storage is gone: so is the unit
    const pid = primaryPid(data);
    if (!pid) {
      lastAnswer = Date.now();
      return;
    }
    const answer = isLeader();
    if (answer === "true") {
      lastAnswer = Date.now();
      return;
    }
    if (answer === undefined && Date.now() - lastAnswer < ERROR_GRACE_MS) return;
    const why = answer === "false" ? "is-leader answered false" : `no is-leader answer for ${ERROR_GRACE_MS} ms`;
    try {
      if (stopped !== pid) {
        process.kill(pid, "SIGINT"); // a fast shutdown: new connections refused, sessions ended at once
        note(`stopped the primary (postmaster ${pid}): ${why}`);
        stopped = pid;
        stoppedAt = Date.now();
      } else if (Date.now() - stoppedAt > IMMEDIATE_AFTER_MS) {
        // A fast shutdown waits for its walsenders to send the last WAL to standbys it may not reach
        // (wal_sender_timeout); it takes no writes meanwhile, but an immediate one ends it (the next
        // start recovers from the WAL on disk).
        process.kill(pid, "SIGQUIT");
      }
    } catch (err) {
      note(`could not stop the primary (postmaster ${pid}): ${err.message}`);
    }
    lastAnswer = Date.now();
  };
  setInterval(tick, INTERVAL_MS);
}

if (require.main === module) watch(process.argv[2]);

module.exports = { ensureWatchdog, stopWatchdog };
