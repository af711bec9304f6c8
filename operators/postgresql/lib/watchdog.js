// The between-hooks watchdog: a primary cut off from the controller loses its leadership while no
// hook runs on it (hooks need the controller), and until its next hook it would keep taking writes
// its standbys may never follow. This process, one per unit, started by every hook (ensureWatchdog)
// in its own session so that it outlives the hook and the agent (a restarted agent does not kill
// it; a dead one is started again by the next hook), checks every second whether the local server
// runs as a primary and, if so, asks `is-leader` through the unit's own tool context
// (STEWARD_UNIT_CONTEXT_ID). The agent answers false once another unit could have claimed the
// lease (agent/leadership.ts), even while it cannot reach the controller; on false, or when no
// answer comes for ERROR_GRACE_MS, it stops the server at once: commits waiting for a standby are
// never acknowledged. The unit's next hook rejoins it as a standby (follower.js), or starts it again
// when it still leads. What it does goes to watchdog.log.
//
// On a machine it finds the server itself: a postmaster whose data directory has no standby.signal,
// stopped with a signal (a fast shutdown; immediate if that hangs). On a Kubernetes pod the server
// runs in the postgresql container, out of this process's sight (it runs in the agent's container,
// which may not even read the data directory): the hooks record the role they gave the server
// (markRole: "primary" before it starts or is promoted as one, "standby" once it no longer runs as
// one), the running state comes from `container-services`, and the stop is `container-stop` of
// the server's service (the shell there turns it into a fast shutdown; the supervisor kills it after
// its kill-delay). Both tools are allowed outside hooks through the unit's context. Its files are
// then in the unit's agent-side directory (STEWARD_UNIT_DATA), not on the claim.
"use strict";
const { spawn } = require("node:child_process");
const { runTool } = require("./tools");
const {
  appendFileSync,
  existsSync,
  openSync,
  readFileSync,
  readlinkSync,
  renameSync,
  writeFileSync,
} = require("node:fs");
const { join } = require("node:path");

const BIN = "/usr/lib/postgresql/15/bin";
const INTERVAL_MS = 1000;
/** is-leader failing (the agent restarting, its socket gone) this long counts as not knowing. */
const ERROR_GRACE_MS = 5000;
/** A fast shutdown still under way after this long becomes an immediate one. */
const IMMEDIATE_AFTER_MS = 10_000;
/** The pod's workload container and the server's service in it (workload.js). */
const CONTAINER = "postgresql";
const SERVICE = "postgres";

const pidFile = (base) => join(base, "watchdog.pid");
const roleFile = () => join(process.env.STEWARD_UNIT_DATA || "", "postgresql-role");
const onPod = () => Boolean(require("./workload").podWorkload());

/** Where the watchdog keeps its files: the storage on a machine, the agent's unit directory on a pod. */
const baseOf = (p) => (onPod() ? process.env.STEWARD_UNIT_DATA : p.base);

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
  const base = baseOf(p);
  if (!base || runningPid(base)) return;
  stopOther(base);
  const env = { ...process.env };
  // Its hook's context ends with the hook; the unit's context lasts as long as the unit.
  delete env.STEWARD_CONTEXT_ID;
  const out = openSync(join(base, "watchdog.log"), "a");
  const args = onPod() ? [__filename, base, "pod", p.data] : [__filename, base];
  const child = spawn(process.execPath, args, { detached: true, stdio: ["ignore", out, out], env });
  writeFileSync(pidFile(base), `${child.pid}\n`);
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
  const base = baseOf(p);
  if (base) stopOther(base);
}

/**
 * On a pod, what the hook made the server: "primary" is recorded before it starts or is promoted as
 * one, "standby" only once it does not run as one. A role recorded wrongly towards "primary" costs a
 * standby a needless stop; towards "standby" it would leave a primary unwatched, hence the order.
 */
function markRole(role) {
  if (!onPod() || !process.env.STEWARD_UNIT_DATA) return;
  const file = roleFile();
  try {
    if (readFileSync(file, "utf8") === role) return;
  } catch {
    // Not recorded yet.
  }
  writeFileSync(`${file}.tmp`, role);
  renameSync(`${file}.tmp`, file);
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

/** A machine's server: the postmaster found through its pid file, signalled. */
function machineServer(data) {
  let stopped = 0;
  let stoppedAt = 0;
  return {
    /** Something to stop when the unit is not the leader, or undefined. */
    primary: () => primaryPid(data),
    stop(pid) {
      if (stopped !== pid) {
        process.kill(pid, "SIGINT"); // a fast shutdown: new connections refused, sessions ended at once
        stopped = pid;
        stoppedAt = Date.now();
        return `stopped the primary (postmaster ${pid})`;
      }
      // A fast shutdown waits for its walsenders to send the last WAL to standbys it may not reach
      // (wal_sender_timeout); it takes no writes meanwhile, but an immediate one ends it (the next
      // start recovers from the WAL on disk).
      if (Date.now() - stoppedAt > IMMEDIATE_AFTER_MS) process.kill(pid, "SIGQUIT");
      return undefined;
    },
  };
}

/** A pod's server: the postgres service of the postgresql container, while the hooks' role says primary. */
function podServer() {
  return {
    primary() {
      let role;
      try {
        role = readFileSync(roleFile(), "utf8");
      } catch {
        return undefined;
      }
      if (role !== "primary") return undefined;
      const r = runTool("container-services", [CONTAINER, "--format", "json"], { timeoutMs: 10_000 });
      // Unknown counts as running: a primary must not go unwatched because its supervisor was slow.
      const state =
        r.status === 0
          ? (JSON.parse(r.stdout || "[]").find((s) => s.name === SERVICE)?.current ?? "inactive")
          : "unknown";
      // In back-off the supervisor would start it again: stopped too.
      return state === "inactive" || state === "error" ? undefined : `the ${SERVICE} service (${state})`;
    },
    stop(what) {
      const r = runTool("container-stop", [CONTAINER, SERVICE], { timeoutMs: 90_000 });
      if (r.status !== 0) throw new Error(r.stderr.trim() || `container-stop exited ${r.status}`);
      return `stopped the primary (${what})`;
    },
  };
}

function watch(base, mode, data) {
  const note = (line) => appendFileSync(join(base, "watchdog.log"), `${new Date().toISOString()} ${line}\n`);
  const server = mode === "pod" ? podServer() : machineServer(join(base, "data"));
  note(`watching ${mode === "pod" ? `the ${CONTAINER} container's ${data}` : join(base, "data")} (pid ${process.pid})`);
  let lastAnswer = Date.now();
  let lastProblem = "";
  const tick = () => {
    if (!existsSync(base)) return process.exit(0); // the storage (or the unit's directory) is gone: so is the unit
    const primary = server.primary();
    if (!primary) {
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
      const did = server.stop(primary);
      if (did) note(`${did}: ${why}`);
    } catch (err) {
      // Said once, not every second, while it stays the same.
      const problem = `could not stop the primary (${primary}): ${err.message}`;
      if (problem !== lastProblem) note(problem);
      lastProblem = problem;
    }
    lastAnswer = Date.now();
  };
  setInterval(tick, INTERVAL_MS);
}

if (require.main === module) watch(process.argv[2], process.argv[3] || "machine", process.argv[4]);

module.exports = { ensureWatchdog, stopWatchdog, markRole };
