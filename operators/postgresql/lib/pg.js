// Control of the local PostgreSQL server and SQL, local or remote: the server and its tools run as
// the OS user postgres (runuser); hooks talk to the local server over its own socket directory as
// postgres (peer authentication) and to other units over the network as the superuser `operator`,
// whose password libpq reads from the passfile (never from argv or the environment). SQL goes on
// standard input, so a password in it never shows in the process list.
"use strict";
const { execFileSync, spawnSync } = require("node:child_process");
const {
  appendFileSync,
  closeSync,
  cpSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} = require("node:fs");
const { join } = require("node:path");
const { BIN } = require("./paths");

/** The most bytes backup-fetch.js asks in one batch. */
const FETCH_BATCH_BYTES = 32 << 20;

class Pg {
  /** @param p unit paths; @param port the local server's port */
  constructor(p, port) {
    this.p = p;
    this.port = port;
  }

  /** Runs a PostgreSQL program as postgres; returns stdout. Throws with its stderr on failure. */
  run(program, args, { input = "", timeoutMs = 600_000 } = {}) {
    const r = spawnSync("runuser", ["-u", "postgres", "--", join(BIN, program), ...args], {
      encoding: "utf8",
      input,
      cwd: this.p.base,
      env: { ...process.env, PGPASSFILE: this.p.pgpass, PGCONNECT_TIMEOUT: "5" },
      timeout: timeoutMs,
      maxBuffer: 16 << 20,
    });
    if (r.status !== 0)
      throw new Error(
        `${program} failed (${r.status ?? r.signal}): ${(r.stderr || r.stdout || "").trim().slice(-800)}`,
      );
    this.lastStderr = r.stderr;
    return r.stdout;
  }

  /** SQL on the local server as postgres; rows as arrays of fields (unaligned, |-separated). */
  sql(sql, { db = "postgres", timeoutMs } = {}) {
    const out = this.run(
      "psql",
      [
        "-h",
        this.p.run,
        "-p",
        String(this.port),
        "-U",
        "postgres",
        "-d",
        db,
        "-XAtq",
        "-v",
        "ON_ERROR_STOP=1",
        "-f",
        "-",
      ],
      { input: sql, ...(timeoutMs ? { timeoutMs } : {}) },
    );
    return rowsOf(out);
  }

  /** One value from the local server. */
  value(sql, opts) {
    return this.sql(sql, opts)[0]?.[0];
  }

  /**
   * SQL on another unit's server as operator, over the network (psql through run(), so from the
   * workload container in a pod); throws when unreachable.
   */
  remote(host, port, sql, { timeoutS = 3 } = {}) {
    const conninfo = `host=${host} port=${port} user=operator dbname=postgres connect_timeout=${timeoutS} application_name=steward-operator`;
    const out = this.run("psql", ["-XAtq", "-v", "ON_ERROR_STOP=1", "-d", conninfo, "-f", "-"], {
      input: sql,
      timeoutMs: (timeoutS + 10) * 1000,
    });
    return rowsOf(out);
  }

  initialized() {
    return existsSync(join(this.p.data, "PG_VERSION"));
  }

  running() {
    if (!this.initialized()) return false;
    this.clearStalePid();
    return (
      spawnSync("runuser", ["-u", "postgres", "--", join(BIN, "pg_ctl"), "status", "-D", this.p.data], {
        cwd: this.p.base,
      }).status === 0
    );
  }

  /**
   * A postmaster.pid left by a server that died with its machine names a pid that, after the reboot,
   * may be another process's (a fresh PID namespace counts from 1): pg_ctl would signal it and
   * postgres refuse to start. A pid that is not a postgres whose working directory is this data
   * directory is stale, and its file goes.
   */
  clearStalePid() {
    const pidFile = join(this.p.data, "postmaster.pid");
    if (!existsSync(pidFile)) return;
    const pid = Number(readFileSync(pidFile, "utf8").split("\n")[0]);
    let ours = false;
    try {
      ours = readlinkSync(`/proc/${pid}/exe`).startsWith(BIN) && readlinkSync(`/proc/${pid}/cwd`) === this.p.data;
    } catch {
      ours = false;
    }
    if (!ours) rmSync(pidFile, { force: true });
  }

  /** Whether the data directory says it is a standby (standby.signal), whatever the server is doing. */
  standbySignal() {
    return existsSync(join(this.p.data, "standby.signal"));
  }

  /**
   * Moves the data directory out of the way (kept as data.old until the next one is set aside) before
   * a clone or a restore. A method, not the hook's own fs calls: in a pod the directory is the
   * workload container's postgres's (lib/workload.js).
   */
  setAsideData() {
    const old = `${this.p.data}.old`;
    rmSync(old, { recursive: true, force: true });
    if (existsSync(this.p.data)) renameSync(this.p.data, old);
  }

  /** Removes the data directory (a clone writes a new one). */
  removeData() {
    rmSync(this.p.data, { recursive: true, force: true });
  }

  /** A small file of the operator's own at the top of the unit's storage (restore-epoch), or undefined. */
  readNote(name) {
    const file = join(this.p.base, name);
    return existsSync(file) ? readFileSync(file, "utf8") : undefined;
  }

  writeNote(name, text) {
    writeFileSync(join(this.p.base, name), text);
  }

  /** Appends to a log of the operator's own there (rejoin.log). */
  appendNote(name, text) {
    appendFileSync(join(this.p.base, name), text);
  }

  /** Whether backup `id` is on this unit's storage, whole (a fetch in progress has no such name). */
  hasBackup(id) {
    return existsSync(join(this.p.backups, id, "PG_VERSION"));
  }

  /** What the backups directory holds, for an error message. */
  backupNames() {
    return existsSync(this.p.backups) ? readdirSync(this.p.backups) : [];
  }

  /** Backup `id` becomes the data directory (set aside before), postgres's, and not a standby's. */
  restoreBackup(id) {
    cpSync(join(this.p.backups, id), this.p.data, { recursive: true });
    const { uid, gid } = require("./conf").owner();
    execFileSync("chown", ["-R", `${uid}:${gid}`, this.p.data]);
    rmSync(join(this.p.data, "standby.signal"), { force: true });
  }

  /**
   * SQL on a peer as operator (backup-fetch.js), with room for a batch's answer; rows of
   * |-separated fields. psql runs as the hook's user, the password from the unit's passfile.
   */
  peerQuery(conninfo, sql) {
    const out = execFileSync(join(BIN, "psql"), ["-XAtq", "-v", "ON_ERROR_STOP=1", "-d", conninfo, "-f", "-"], {
      encoding: "utf8",
      input: sql,
      env: { ...process.env, PGPASSFILE: this.p.pgpass },
      stdio: ["pipe", "pipe", "pipe"],
      timeout: 600_000,
      maxBuffer: 4 * FETCH_BATCH_BYTES,
    });
    return rowsOf(out);
  }

  /** A fetch's directory `partial` made anew with the backup's directories and (empty) files. */
  startFetch(partial, entries) {
    rmSync(partial, { recursive: true, force: true });
    mkdirSync(partial, { mode: 0o700 });
    for (const e of entries.filter((x) => x.isdir)) mkdirSync(join(partial, e.path), { recursive: true, mode: 0o700 });
    for (const e of entries.filter((x) => !x.isdir)) closeSync(openSync(join(partial, e.path), "w", 0o600));
  }

  /**
   * Reads one batch of `segments` ({path, off, len}) of the files under `dir` on the peer at
   * `conninfo` (a query, hex) into the same files under `partial`; returns the bytes written.
   */
  fetchBatch(conninfo, dir, partial, segments) {
    const values = segments.map((s, k) => `(${k}, ${lit(s.path)}, ${s.off}::bigint, ${s.len}::bigint)`).join(", ");
    const rows = this.peerQuery(
      conninfo,
      `SELECT k, encode(pg_read_binary_file(${lit(dir)} || '/' || path, off, len), 'hex') FROM (VALUES ${values}) v(k, path, off, len) ORDER BY k`,
    );
    let bytes = 0;
    for (const [k, hex] of rows) {
      const s = segments[Number(k)];
      const buf = Buffer.from(hex ?? "", "hex");
      const fd = openSync(join(partial, s.path), "r+");
      writeSync(fd, buf, 0, buf.length, s.off);
      closeSync(fd);
      bytes += buf.length;
    }
    return bytes;
  }

  /** A whole fetch becomes backup `id`, postgres's. */
  finishFetch(partial, id) {
    execFileSync("chown", ["-R", "postgres:postgres", partial]);
    rmSync(join(this.p.backups, id), { recursive: true, force: true });
    renameSync(partial, join(this.p.backups, id));
  }

  /** Starts the server and waits until it takes connections (a standby: until it is consistent). */
  start() {
    if (this.running()) return;
    // pg_ctl detaches the server in its own session: it outlives the hook and the hook's process group.
    this.run("pg_ctl", ["-D", this.p.data, "-l", this.p.log, "-w", "-t", "300", "start"]);
    require("./stamp").noteStarted(this.p);
  }

  stop(mode = "fast") {
    if (!this.running()) return;
    this.run("pg_ctl", ["-D", this.p.data, "-m", mode, "-w", "-t", "120", "stop"]);
  }

  reload() {
    if (this.running()) this.run("pg_ctl", ["-D", this.p.data, "reload"]);
  }

  /**
   * Reloads and returns once the server has read the files: pg_ctl returns before the postmaster
   * handles its SIGHUP, and a hook that goes on to publish a synchronous-standby set, or to promote,
   * counts on it being in force.
   */
  reloadAndWait() {
    const loaded = () => this.value("SELECT pg_conf_load_time()");
    const before = loaded();
    this.reload();
    const until = Date.now() + 10_000;
    while (loaded() === before) {
      if (Date.now() > until) throw new Error("the server did not read its configuration within 10 s of a reload");
      sleepMs(20);
    }
  }

  /** The port the running server took (postmaster.pid's fourth line), or undefined. */
  runningPort() {
    try {
      return Number(readFileSync(join(this.p.data, "postmaster.pid"), "utf8").split("\n")[3]) || undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Applies a configuration just written: starts the server, or reloads it. A new port restarts it
   * at once (standbys reach the primary on the port leader data names); any other setting that only
   * a restart applies (max_connections, shared_buffers…) waits for the unit's turn in the rolling
   * restart (rolling.js). Returns true when it started or restarted.
   */
  apply(changed) {
    if (!this.running()) {
      this.start();
      return true;
    }
    if (!changed) return false;
    if (this.runningPort() === this.port) {
      this.reloadAndWait();
      return false;
    }
    this.stop("fast");
    this.start();
    return true;
  }

  inRecovery() {
    return this.value("SELECT pg_is_in_recovery()") === "t";
  }

  /** "Database cluster state" of pg_controldata: "shut down", "in production", "in archive recovery"… */
  clusterState() {
    const out = this.run("pg_controldata", ["-D", this.p.data]);
    return /^Database cluster state:\s*(.*)$/m.exec(out)?.[1]?.trim() ?? "unknown";
  }

  /** The timeline the data directory is on (pg_controldata's latest checkpoint's). */
  controlTimeline() {
    const out = this.run("pg_controldata", ["-D", this.p.data]);
    return Number(/^Latest checkpoint's TimeLineID:\s*(\d+)/m.exec(out)?.[1] ?? 0);
  }

  /** Where the last checkpoint ends (after a clean shutdown: the end of the WAL this server wrote). */
  controlCheckpointLsn() {
    const out = this.run("pg_controldata", ["-D", this.p.data]);
    return /^Latest checkpoint location:\s*(\S+)/m.exec(out)?.[1];
  }

  /** Crash recovery and a clean shutdown in single-user mode (pg_rewind needs a cleanly stopped target). */
  recoverSingleUser() {
    this.run("postgres", ["--single", "-D", this.p.data, "-c", "archive_mode=off", "postgres"], {
      input: "",
      timeoutMs: 600_000,
    });
  }

  serverLogTail(lines = 5) {
    try {
      return readFileSync(this.p.log, "utf8").trim().split("\n").slice(-lines).join(" / ");
    } catch {
      return "";
    }
  }
}

function sleepMs(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** LSN text (0/3000060) to a BigInt, for comparing positions. */
const lsn = (text) => {
  if (!text) return 0n;
  const [hi, lo] = text.split("/");
  return (BigInt(`0x${hi}`) << 32n) + BigInt(`0x${lo}`);
};

/** Single-quoted SQL literal. */
const lit = (s) => `'${String(s).replace(/'/g, "''")}'`;
/** psql's unaligned, tuples-only output (-XAt) as rows of |-separated fields. */
const rowsOf = (out) =>
  out
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => l.split("|"));

/** Double-quoted SQL identifier. */
const ident = (s) => `"${String(s).replace(/"/g, '""')}"`;

module.exports = { Pg, lsn, lit, ident, rowsOf, FETCH_BATCH_BYTES };
