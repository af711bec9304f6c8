/**
 * A throwaway PostgreSQL 15 on this machine, for testing what talks to a database (the ledger of
 * acknowledged commits) without an operator: `initdb` into a temp directory owned by `postgres`, the
 * server run as that user on loopback, password authentication, fsync left on (a crash test of what
 * was acknowledged means nothing without it). {@link LocalPostgres.crash} kills all the
 * server's processes at once, as pulling the power would (killing only the postmaster leaves its
 * backends serving a while and holding the shared memory, which the restart refuses to run beside).
 * {@link LocalPostgres.standbyOf} makes a streaming standby of one, for a real failover (promotion, a
 * new timeline) on one machine.
 *
 * Needs root (to become `postgres`) and the Debian `postgresql-15` binaries.
 */
import { execFile, spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { chown, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { PgAddress } from "./pg-ledger";

const run = promisify(execFile);
export const PG_BIN = "/usr/lib/postgresql/15/bin";

/** SQL with psql from this machine to a server at `at` as `who`; rows of |-separated fields. */
export async function psqlAt(
  at: { host: string; port: number },
  who: { user: string; password: string; database: string },
  query: string,
  /** More conninfo words (sslmode=…). */
  extra = "",
): Promise<string[]> {
  const conninfo = `host=${at.host} port=${at.port} user=${who.user} dbname=${who.database} connect_timeout=3 ${extra}`;
  const { stdout } = await run(join(PG_BIN, "psql"), ["-XAtq", "-v", "ON_ERROR_STOP=1", "-d", conninfo, "-c", query], {
    env: { ...process.env, PGPASSWORD: who.password },
    timeout: 20_000,
  });
  return stdout.split("\n").filter(Boolean);
}

/** "host:port" (an IPv6 host keeps its colons) as {host, port}. */
export function hostAndPort(hostPort: string): { host: string; port: number } {
  const i = hostPort.lastIndexOf(":");
  return { host: hostPort.slice(0, i), port: Number(hostPort.slice(i + 1)) };
}

/** Whether root and the PostgreSQL binaries are here (synchronous: to choose `test` or `test.skip`). */
export function localPostgresPresent(): boolean {
  return process.getuid?.() === 0 && existsSync(join(PG_BIN, "postgres"));
}

/** Whether a local server can be started here (root, and the binaries present and running). */
export async function localPostgresAvailable(): Promise<boolean> {
  if (!localPostgresPresent()) return false;
  return run(join(PG_BIN, "postgres"), ["--version"]).then(
    () => true,
    () => false,
  );
}

function isZombie(pid: number): boolean {
  try {
    return / Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\)/, ""));
  } catch {
    return true;
  }
}

async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const uid = Number((await run("id", ["-u", "postgres"])).stdout.trim());
  const gid = Number((await run("id", ["-g", "postgres"])).stdout.trim());
  return { uid, gid };
}

async function ownedTempDir(uid: number, gid: number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "steward-pg-"));
  await chown(dir, uid, gid);
  return dir;
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

export class LocalPostgres {
  private proc?: ChildProcess;
  private exited?: Promise<void>;

  private constructor(
    readonly dir: string,
    readonly address: PgAddress,
    private readonly uid: number,
    private readonly gid: number,
  ) {}

  /** `initdb` (superuser `postgres` with a random password) and starts the server. */
  static async start(): Promise<LocalPostgres> {
    const { uid, gid } = await postgresUser();
    const dir = await ownedTempDir(uid, gid);
    const password = randomBytes(12).toString("hex");
    const pwfile = join(dir, "pw");
    await writeFile(pwfile, password, { mode: 0o600 });
    await chown(pwfile, uid, gid);
    await run(
      join(PG_BIN, "initdb"),
      ["-D", join(dir, "data"), "-U", "postgres", "--auth=scram-sha-256", `--pwfile=${pwfile}`, "-E", "UTF8"],
      { uid, gid, cwd: dir },
    );
    await rm(pwfile);
    const pg = new LocalPostgres(
      dir,
      { host: "127.0.0.1", port: await freePort(), database: "postgres", user: "postgres", password },
      uid,
      gid,
    );
    await pg.boot();
    return pg;
  }

  /**
   * A streaming standby of `primary` (`pg_basebackup -R` over loopback, which initdb's pg_hba allows for
   * replication), started: what a failover promotes.
   */
  static async standbyOf(primary: LocalPostgres): Promise<LocalPostgres> {
    const { uid, gid } = await postgresUser();
    const dir = await ownedTempDir(uid, gid);
    await run(
      join(PG_BIN, "pg_basebackup"),
      [
        "-h",
        "127.0.0.1",
        "-p",
        String(primary.address.port),
        "-U",
        "postgres",
        "-D",
        join(dir, "data"),
        "-R",
        "-X",
        "stream",
      ],
      { uid, gid, cwd: dir, env: { PGPASSWORD: primary.address.password } },
    );
    const pg = new LocalPostgres(dir, { ...primary.address, port: await freePort() }, uid, gid);
    await pg.boot();
    return pg;
  }

  get dataDir(): string {
    return join(this.dir, "data");
  }

  /** `pg_controldata` of its data directory. */
  async controlData(): Promise<string> {
    return (await run(join(PG_BIN, "pg_controldata"), ["-D", this.dataDir])).stdout;
  }

  /** Its `pg_wal/*.history` files, by timeline. */
  async histories(): Promise<Record<number, string>> {
    const out: Record<number, string> = {};
    for (const f of await readdir(join(this.dataDir, "pg_wal")))
      if (f.endsWith(".history")) out[parseInt(f, 16)] = await readFile(join(this.dataDir, "pg_wal", f), "utf8");
    return out;
  }

  /** A clean shutdown (`pg_ctl stop -m fast`). */
  async stop(): Promise<void> {
    if (!this.proc || this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    await run(join(PG_BIN, "pg_ctl"), ["stop", "-D", this.dataDir, "-m", "fast", "-w"], {
      uid: this.uid,
      gid: this.gid,
      cwd: this.dir,
    });
    await this.exited;
  }

  /** Starts the server and waits until it accepts connections (crash recovery included). */
  async boot(): Promise<void> {
    this.proc = spawn(
      join(PG_BIN, "postgres"),
      [
        "-D",
        this.dataDir,
        "-p",
        String(this.address.port),
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        `unix_socket_directories=${this.dir}`,
      ],
      { uid: this.uid, gid: this.gid, cwd: this.dir, stdio: ["ignore", "ignore", "ignore"] },
    );
    this.proc.on("error", () => undefined);
    this.exited = new Promise((r) => this.proc!.once("exit", () => r()));
    for (let i = 0; i < 300; i++) {
      const ready = await run(join(PG_BIN, "pg_isready"), ["-h", this.dir, "-p", String(this.address.port)]).then(
        () => true,
        () => false,
      );
      if (ready) return;
      if (this.proc.exitCode !== null) throw new Error(`postgres exited with ${this.proc.exitCode} in ${this.dir}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`postgres in ${this.dir} did not accept connections within 30 s`);
  }

  /**
   * SIGKILL to the server and all its processes at once. Each backend is a process group of its own
   * (PostgreSQL calls setsid() in every child), so the postmaster is frozen first (it alone forks),
   * its children listed, and all of them killed.
   */
  async crash(): Promise<void> {
    if (!this.proc || this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    const pid = this.proc.pid!;
    const kill = (p: number, signal: NodeJS.Signals): void => {
      try {
        process.kill(p, signal);
      } catch {
        /* already gone */
      }
    };
    kill(pid, "SIGSTOP");
    const children = (await readFile(`/proc/${pid}/task/${pid}/children`, "utf8").catch(() => ""))
      .split(" ")
      .filter(Boolean)
      .map(Number);
    for (const child of children) kill(child, "SIGKILL");
    kill(pid, "SIGKILL");
    await this.exited;
    // Killed processes are gone when their parent (the postmaster, or init once it died) has reaped them.
    for (let i = 0; i < 100 && children.some((c) => existsSync(`/proc/${c}/stat`) && !isZombie(c)); i++)
      await new Promise((r) => setTimeout(r, 50));
  }

  /** Runs SQL as the superuser through `psql` over the local socket. */
  async sql(query: string, database = "postgres"): Promise<string> {
    const r = await run(
      join(PG_BIN, "psql"),
      ["-h", this.dir, "-p", String(this.address.port), "-U", "postgres", "-d", database, "-XAtq", "-c", query],
      { uid: this.uid, gid: this.gid, cwd: this.dir, env: { PGPASSWORD: this.address.password } },
    );
    return r.stdout.trim();
  }

  async close(): Promise<void> {
    await this.crash();
    await rm(this.dir, { recursive: true, force: true });
  }
}
