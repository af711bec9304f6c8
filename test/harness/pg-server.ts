/**
 * A throwaway PostgreSQL 15 on this machine, for testing what talks to a database (the ledger of
 * acknowledged commits) without an operator: `initdb` into a temp directory owned by `postgres`, the
 * server run as that user on loopback, password authentication, fsync left on (a crash test of what
 * was acknowledged means nothing without it). {@link LocalPostgres.crash} kills the whole process
 * group at once, as pulling the power would (killing only the postmaster leaves its backends holding
 * the shared memory, and the restart refuses to run beside them).
 *
 * Needs root (to become `postgres`) and the Debian `postgresql-15` binaries.
 */
import { execFile, spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chown, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { PgAddress } from "./pg-ledger";

const run = promisify(execFile);
export const PG_BIN = "/usr/lib/postgresql/15/bin";

/** Whether a local server can be started here (root, and the binaries present). */
export async function localPostgresAvailable(): Promise<boolean> {
  if (process.getuid?.() !== 0) return false;
  return run(join(PG_BIN, "postgres"), ["--version"]).then(
    () => true,
    () => false,
  );
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
    const uid = Number((await run("id", ["-u", "postgres"])).stdout.trim());
    const gid = Number((await run("id", ["-g", "postgres"])).stdout.trim());
    const dir = await mkdtemp(join(tmpdir(), "steward-pg-"));
    await chown(dir, uid, gid);
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

  /** Starts the server and waits until it accepts connections (crash recovery included). */
  async boot(): Promise<void> {
    this.proc = spawn(
      join(PG_BIN, "postgres"),
      [
        "-D",
        join(this.dir, "data"),
        "-p",
        String(this.address.port),
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        `unix_socket_directories=${this.dir}`,
      ],
      // Its own process group, so a crash takes every backend with it.
      { uid: this.uid, gid: this.gid, cwd: this.dir, detached: true, stdio: ["ignore", "ignore", "ignore"] },
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

  /** SIGKILL to the server and all its backends at once. */
  async crash(): Promise<void> {
    if (!this.proc || this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    try {
      process.kill(-this.proc.pid!, "SIGKILL");
    } catch {
      /* already gone */
    }
    await this.exited;
    // Backends of the group die with it, but not at the same instant: the restart needs them gone.
    for (let i = 0; i < 100; i++) {
      const left = await run("pgrep", ["-g", String(this.proc.pid)]).then(
        () => true,
        () => false,
      );
      if (!left) return;
      await new Promise((r) => setTimeout(r, 50));
    }
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
