// PostgreSQL in the unit's `postgresql` workload container (Kubernetes), driven through the
// container's supervisor. On a pod the hooks run in the agent's container, which has no PostgreSQL
// and may not read or write the postgres-owned data directory (on a real cluster it runs as another
// user): every program runs in the workload container (container-exec, as postgres through
// runuser, SQL and passwords on stdin with --stdin), the files the server reads are pushed there
// (container-push, then given to postgres), and the server is the supervisor's `postgres` service
// (a layer, container-start) rather than pg_ctl start, so the supervisor restarts it when it
// crashes; pg_ctl stops it (in the mode asked) and reloads it. On machines nothing here is used
// (podWorkload() is undefined) and lib/pg.js runs the programs on the machine itself.
"use strict";
const { mkdtempSync, rmSync, writeFileSync } = require("node:fs");
const { join } = require("node:path");
const { Pg, lit, rowsOf } = require("./pg");
const { BIN } = require("./paths");
const { runTool } = require("./tools");

/** The workload container's name in operator.yaml. */
const CONTAINER = "postgresql";
const SERVICE = "postgres";

/** A hook tool's run: {status, stdout, stderr} (never throws). */
function toolRun(args, { input = "", timeoutMs = 600_000 } = {}) {
  return runTool(args[0], args.slice(1), { input, timeoutMs: timeoutMs + 20_000 });
}

let cached;
/**
 * Whether this unit's PostgreSQL lives in a workload container: undefined on a machine (the tools say
 * the unit has no workload containers), else {ready} (ready: its supervisor answers). Asked once per hook.
 */
function podWorkload() {
  if (cached !== undefined) return cached || undefined;
  const r = toolRun(["container-services", CONTAINER, "--format", "json"], { timeoutMs: 30_000 });
  if (r.status === 0) cached = { ready: true, services: JSON.parse(r.stdout || "[]") };
  else if (/has no workload containers/.test(r.stderr)) cached = false;
  else cached = { ready: false, reason: r.stderr.trim() };
  return cached || undefined;
}

/** Runs a command in the container as root (no shell); throws with its stderr when it fails. */
function exec(command, { input, timeoutMs = 120_000, workdir } = {}) {
  const r = execStatus(command, { input, timeoutMs, workdir });
  if (r.status !== 0)
    throw new Error(
      `${command[0]} in the ${CONTAINER} container failed (${r.status}): ${(r.stderr || r.stdout).trim().slice(-800)}`,
    );
  return r.stdout;
}

function execStatus(command, { input, timeoutMs = 120_000, workdir } = {}) {
  return toolRun(
    [
      "container-exec",
      CONTAINER,
      "--timeout",
      String(Math.ceil(timeoutMs / 1000)),
      ...(workdir ? ["--workdir", workdir] : []),
      ...(input !== undefined ? ["--stdin"] : []),
      "--",
      ...command,
    ],
    { input: input ?? "", timeoutMs },
  );
}

/** A file's content in the container, or undefined when it cannot be read. */
function readIn(path) {
  const r = execStatus(["cat", path], { timeoutMs: 30_000 });
  return r.status === 0 ? r.stdout : undefined;
}

/** Whether a path exists in the container. */
const existsIn = (path) => execStatus(["test", "-e", path], { timeoutMs: 30_000 }).status === 0;

/**
 * The layer of the container: PostgreSQL as postgres, its output appended to the unit's log. The
 * supervisor stops a service (and a pod's deletion its container) with SIGTERM, which is PostgreSQL's
 * smart shutdown: it waits for every client to leave, until the SIGKILL after the grace period, and
 * the server then crashed. The official image says STOPSIGNAL SIGINT for that reason; here a small
 * shell turns SIGTERM into SIGINT, a fast shutdown, and exits with the server's status.
 */
function serverLayer(p) {
  const server = `setpriv --reuid=postgres --regid=postgres --init-groups ${BIN}/postgres -D '${p.data}' >>'${p.log}' 2>&1`;
  const script = [
    `${server} & pid=$!`,
    `trap 'kill -INT "$pid" 2>/dev/null' TERM INT`,
    'while :; do wait "$pid"; rc=$?; kill -0 "$pid" 2>/dev/null || exit "$rc"; done',
  ].join("\n");
  return JSON.stringify({
    summary: "PostgreSQL 15 of the postgresql operator",
    services: {
      [SERVICE]: {
        command: ["/bin/sh", "-c", script],
        startup: "disabled",
        // pg_ctl stop ends it with 0: stopped on purpose. A crash is restarted by the supervisor.
        "on-success": "ignore",
        "on-failure": "restart",
        "kill-delay": "60s",
      },
    },
  });
}

/** A file postgres reads, written in the container when its content differs (0600, postgres's); true when it changed. */
function writeOwnedIn(path, content) {
  if (readIn(path) === content) return false;
  // Staged in the unit's own data directory (0700) only for as long as the push takes.
  const dir = mkdtempSync(join(process.env.STEWARD_UNIT_DATA || "/tmp", ".push-"));
  try {
    const local = join(dir, "file");
    writeFileSync(local, content, { mode: 0o600 });
    const r = toolRun(["container-push", CONTAINER, local, `${path}.tmp`, "--mode", "0600"], { timeoutMs: 60_000 });
    if (r.status !== 0) throw new Error(`container-push ${path}: ${r.stderr.trim()}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  exec(["/bin/sh", "-c", 'chown postgres:postgres "$1" && mv -f "$1" "$2"', "sh", `${path}.tmp`, path]);
  return true;
}

/**
 * The unit's directories on its storage, postgres's (0700), made in the container, and the modes
 * PostgreSQL insists on put back. A kubelet that applies the pod's fsGroup to the volume (every mount,
 * by default) gives every file group read-write and every directory setgid: the server then refuses
 * its data directory (0700 or 0750 only) and a TLS key others may read, and libpq ignores the passfile.
 */
function prepareDirsIn(p) {
  const script = [
    'install -d -m 0700 -o postgres -g postgres "$1" "$2" "$3"',
    // (chmod keeps a directory's setgid unless told: g-s.)
    'if [ -d "$4" ]; then chmod 0700 "$4" && chmod g-s "$4"; fi',
    'for f in "$5" "$6"; do if [ -f "$f" ]; then chmod 0600 "$f"; fi; done',
  ].join(" && ");
  exec(["/bin/sh", "-c", script, "sh", p.base, p.run, p.backups, p.data, p.pgpass, join(p.base, "tls", "server.key")]);
}

/** A command's start that runs the rest as postgres, with the unit's passfile for libpq. */
const asPostgres = (p) => ["env", `PGPASSFILE=${p.pgpass}`, "PGCONNECT_TIMEOUT=5", "runuser", "-u", "postgres", "--"];

/** The local server of a unit whose PostgreSQL runs in its workload container. */
class ContainerPg extends Pg {
  run(program, args, { input = "", timeoutMs = 600_000 } = {}) {
    const r = execStatus([...asPostgres(this.p), join(BIN, program), ...args], {
      input,
      timeoutMs,
      workdir: this.p.base,
    });
    if (r.status !== 0)
      throw new Error(`${program} failed (${r.status}): ${(r.stderr || r.stdout || "").trim().slice(-800)}`);
    this.lastStderr = r.stderr;
    return r.stdout;
  }

  initialized() {
    return existsIn(join(this.p.data, "PG_VERSION"));
  }

  standbySignal() {
    return existsIn(join(this.p.data, "standby.signal"));
  }

  setAsideData() {
    const old = `${this.p.data}.old`;
    exec(["rm", "-rf", old]);
    if (existsIn(this.p.data)) exec(["mv", "-T", this.p.data, old]);
  }

  removeData() {
    exec(["rm", "-rf", this.p.data]);
  }

  readNote(name) {
    return readIn(join(this.p.base, name));
  }

  writeNote(name, text) {
    exec(["/bin/sh", "-c", 'cat >"$1.tmp" && mv -f "$1.tmp" "$1"', "sh", join(this.p.base, name)], { input: text });
  }

  appendNote(name, text) {
    exec(["/bin/sh", "-c", 'cat >>"$1"', "sh", join(this.p.base, name)], { input: text });
  }

  hasBackup(id) {
    return existsIn(join(this.p.backups, id, "PG_VERSION"));
  }

  backupNames() {
    const r = execStatus(["ls", "-1", this.p.backups], { timeoutMs: 30_000 });
    return r.status === 0 ? r.stdout.split("\n").filter(Boolean) : [];
  }

  restoreBackup(id) {
    const script = 'cp -a "$1" "$2" && chown -R postgres:postgres "$2" && rm -f "$2/standby.signal"';
    exec(["/bin/sh", "-c", script, "sh", join(this.p.backups, id), this.p.data], { timeoutMs: 600_000 });
  }

  /** psql in the container (its answer at most the 1 MiB an exec keeps: backup-fetch's listings are far smaller). */
  peerQuery(conninfo, sql) {
    return rowsOf(this.run("psql", ["-XAtq", "-v", "ON_ERROR_STOP=1", "-d", conninfo, "-f", "-"], { input: sql }));
  }

  /** As postgres, from a list on standard input ("d PATH" / "f PATH" lines: paths have no newline). */
  startFetch(partial, entries) {
    const list = [...entries.filter((e) => e.isdir), ...entries.filter((e) => !e.isdir)]
      .map((e) => `${e.isdir ? "d" : "f"} ${e.path}\n`)
      .join("");
    const script = [
      'rm -rf "$1" "$1.segments" && mkdir -m 0700 "$1" "$1.segments" && cd "$1" || exit 1',
      'while IFS= read -r line; do p="./${line#? }"',
      '  case "$line" in d*) mkdir -p -m 0700 "$p" ;; *) : >"$p" && chmod 0600 "$p" ;; esac || exit 1',
      "done",
    ].join("\n");
    exec(["runuser", "-u", "postgres", "--", "/bin/sh", "-c", script, "sh", partial], {
      input: list,
      timeoutMs: 300_000,
    });
  }

  /**
   * The bytes never pass through the agent (an exec's output is cut at 1 MiB): per batch, psql in the
   * container writes each segment, base64, to a file of its own (\g), and the shell decodes it into
   * place. Each segment's decoded size is checked against what was asked.
   */
  fetchBatch(conninfo, dir, partial, segments) {
    // The list goes in argv and the queries on stdin (at most 1 MiB): a batch of many small files in parts.
    if (segments.length > 500)
      return (
        this.fetchBatch(conninfo, dir, partial, segments.slice(0, 500)) +
        this.fetchBatch(conninfo, dir, partial, segments.slice(500))
      );
    // One query a segment, each to the file named by its index in the batch.
    const sql = segments.map(
      (s, k) =>
        `SELECT encode(pg_read_binary_file(${lit(`${dir}/${s.path}`)}, ${s.off}, ${s.len}), 'base64') \\g ${k}\n`,
    );
    const script = [
      'bin="$1" conninfo="$2" files="$3"; shift 3',
      '"$bin/psql" -XAtq -v ON_ERROR_STOP=1 -d "$conninfo" -f - || exit 1',
      "k=0",
      "while [ $# -gt 0 ]; do",
      '  base64 -d "$k" >seg && dd if=seg of="$files/$1" bs=1M seek="$2" oflag=seek_bytes conv=notrunc status=none || exit 1',
      '  wc -c <seg; rm -f "$k" seg; k=$((k + 1)); shift 2',
      "done",
    ].join("\n");
    const out = exec(
      [
        ...asPostgres(this.p),
        "/bin/sh",
        "-c",
        script,
        "sh",
        BIN,
        conninfo,
        partial,
        ...segments.flatMap((s) => [s.path, String(s.off)]),
      ],
      { input: sql.join(""), timeoutMs: 600_000, workdir: `${partial}.segments` },
    );
    const sizes = out.split("\n").filter(Boolean).map(Number);
    segments.forEach((s, k) => {
      if (sizes[k] !== s.len)
        throw new Error(`fetching ${s.path} at ${s.off}: ${sizes[k] ?? "no"} bytes came of the ${s.len} asked`);
    });
    return segments.reduce((n, s) => n + s.len, 0);
  }

  finishFetch(partial, id) {
    const script = 'rm -rf "$1.segments" && chown -R postgres:postgres "$1" && rm -rf "$2" && mv -T "$1" "$2"';
    exec(["/bin/sh", "-c", script, "sh", partial, join(this.p.backups, id)], { timeoutMs: 300_000 });
  }

  /** The supervisor's view of the service: active, inactive, backoff, error. */
  serviceState() {
    const r = toolRun(["container-services", CONTAINER, "--format", "json"], { timeoutMs: 30_000 });
    if (r.status !== 0) return "unknown";
    return JSON.parse(r.stdout || "[]").find((s) => s.name === SERVICE)?.current ?? "inactive";
  }

  running() {
    if (!this.initialized()) return false;
    if (this.serviceState() !== "active") {
      this.clearStalePid();
      return false;
    }
    return (
      execStatus(["runuser", "-u", "postgres", "--", join(BIN, "pg_ctl"), "status", "-D", this.p.data]).status === 0
    );
  }

  /**
   * Called when the supervisor's service is not running: only the supervisor starts a postmaster in
   * this container, so a postmaster.pid is a dead server's (a previous container's, whose PIDs mean
   * nothing here; postgres --single and pg_rewind would refuse it).
   */
  clearStalePid() {
    exec(["rm", "-f", join(this.p.data, "postmaster.pid")]);
  }

  runningPort() {
    return Number(readIn(join(this.p.data, "postmaster.pid"))?.split("\n")[3]) || undefined;
  }

  start() {
    if (this.running()) return;
    const layer = toolRun(["container-layer-set", CONTAINER], { input: serverLayer(this.p), timeoutMs: 60_000 });
    if (layer.status !== 0) throw new Error(`container-layer-set: ${layer.stderr.trim()}`);
    const started = toolRun(["container-start", CONTAINER, SERVICE], { timeoutMs: 330_000 });
    if (started.status !== 0) throw new Error(`container-start ${SERVICE}: ${started.stderr.trim()}`);
    // As pg_ctl -w: until it takes connections (a standby: until it is consistent), or 300 s.
    const until = Date.now() + 300_000;
    for (;;) {
      const ready = execStatus([join(BIN, "pg_isready"), "-q", "-h", this.p.run, "-p", String(this.port)]);
      if (ready.status === 0) {
        require("./stamp").noteStarted(this.p);
        return;
      }
      const state = this.serviceState();
      if (state === "error" || state === "inactive" || Date.now() > until)
        throw new Error(`the postgres service did not come up (${state}): ${this.serverLogTail()}`);
      sleepMs(300);
    }
  }

  stop(mode = "fast") {
    if (this.running()) this.run("pg_ctl", ["-D", this.p.data, "-m", mode, "-w", "-t", "120", "stop"]);
    // Its exit (0) left the service inactive; one in back-off must not start again either.
    if (this.serviceState() !== "inactive") toolRun(["container-stop", CONTAINER, SERVICE], { timeoutMs: 330_000 });
  }

  serverLogTail(lines = 5) {
    const r = execStatus(["tail", "-n", String(lines), this.p.log], { timeoutMs: 30_000 });
    return r.status === 0 ? r.stdout.trim().split("\n").join(" / ") : "";
  }
}

function sleepMs(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

module.exports = { CONTAINER, podWorkload, ContainerPg, writeOwnedIn, prepareDirsIn, existsIn, exec };
