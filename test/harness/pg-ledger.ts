/**
 * The ledger of acknowledged commits (issue 34's proof): a client that writes one row at a steady rate
 * to whatever primary it is told about, and remembers exactly which writes the database acknowledged.
 * A failover that loses data shows up as an acknowledged sequence number missing from the new primary
 * ({@link PgLedger.verify}); how long writes were refused shows up as the outage windows.
 *
 * What counts as acknowledged is the point, so it is strict:
 * - a write is acknowledged only when its INSERT (its own transaction) returned success on a primary;
 * - a write whose answer did not come within the statement timeout is NOT acknowledged (it may or may
 *   not have committed: both are fine); the timeout is the client's own (`query_timeout`), never the
 *   server's `statement_timeout`: PostgreSQL answers a commit cancelled while waiting for its synchronous
 *   standby with success plus a WARNING ("canceling wait for synchronous replication"), a commit on one
 *   node only; for the same reason a success that came with that warning is not counted either;
 * - after any failure the connection is dropped, and the next attempt asks `address()` again (the
 *   client's relation data can have moved to a new primary).
 *
 * Each acknowledged row also records the server that answered and the WAL timeline it wrote on, which
 * the two-primaries check ({@link ../pg-timelines}) reads.
 */
import { Client } from "pg";

/** Where to write: what a client of the `database` relation is given. */
export interface PgAddress {
  host: string;
  port: number;
  database: string;
  user: string;
  password: string;
}

/** An acknowledged commit. */
export interface LedgerAck {
  seq: number;
  /** When the write was sent and when its success came back (epoch ms). */
  sentAt: number;
  at: number;
  /** The server's address as it saw the connection (`inet_server_addr()`). */
  server: string;
  /** The WAL timeline and insert position the row was written at (a lower bound of its commit record). */
  timeline: number;
  lsn: string;
}

/** A write (or the connection it needed) that failed or was not answered in time. */
export interface LedgerFailure {
  /** The sequence number tried, or undefined when no connection could be made for it. */
  seq?: number;
  sentAt: number;
  at: number;
  /** The host it was going to, as `address()` said. */
  target?: string;
  error: string;
}

/** From the first write that failed or was not answered (sent at `from`) to the next acknowledged one (`to`). */
export interface LedgerOutage {
  from: number;
  /** Undefined while writes still fail. */
  to?: number;
  ms: number;
  failures: number;
}

export interface LedgerVerdict {
  acknowledged: number;
  /** Acknowledged sequence numbers not on the server verified: must be empty. */
  missing: number[];
  /** Rows present whose write was never acknowledged (timed out or failed after committing): allowed. */
  unacknowledgedPresent: number;
}

export interface PgLedgerOptions {
  /** Where to write, asked before every (re)connection. */
  address: () => PgAddress | Promise<PgAddress>;
  /**
   * Time between the starts of two writes; a write that takes longer delays the next, never bunches them.
   * @default 50
   */
  intervalMs?: number;
  /** @default 1000 */
  connectTimeoutMs?: number;
  /**
   * How long a write's answer is waited for (client side) before it counts as failed, unacknowledged.
   * @default 2000
   */
  statementTimeoutMs?: number;
  /** @default "steward_ledger" */
  table?: string;
}

const SYNC_REP_CANCELLED = /synchronous replication/i;

export class PgLedger {
  readonly acks: LedgerAck[] = [];
  readonly failures: LedgerFailure[] = [];
  /** Every connection attempt: when, and to which `host:port` `address()` named. */
  readonly connects: { at: number; target: string }[] = [];
  private readonly o: Required<PgLedgerOptions>;
  private client?: Client;
  private target?: string;
  private seq = 0;
  private stopped = false;
  private loop: Promise<void> = Promise.resolve();
  /** Notices the server sent during the write in flight. */
  private notices: string[] = [];
  private readonly windows: LedgerOutage[] = [];

  private constructor(o: PgLedgerOptions) {
    this.o = { intervalMs: 50, connectTimeoutMs: 1000, statementTimeoutMs: 2000, table: "steward_ledger", ...o };
    if (!/^[a-z_][a-z0-9_]*$/.test(this.o.table)) throw new Error(`ledger table name "${this.o.table}" is not plain`);
  }

  /** Starts writing at once; {@link firstAck} waits until writes are flowing. */
  static start(o: PgLedgerOptions): PgLedger {
    const ledger = new PgLedger(o);
    ledger.loop = ledger.run();
    return ledger;
  }

  get table(): string {
    return this.o.table;
  }

  /** The outage windows so far, the last one open while writes still fail. */
  get outages(): readonly LedgerOutage[] {
    return this.windows;
  }

  /** Resolves with the first acknowledged write after `since` (epoch ms), or throws after `timeoutMs`. */
  async ackAfter(since: number, timeoutMs = 120_000): Promise<LedgerAck> {
    for (const deadline = Date.now() + timeoutMs; ; await sleep(50)) {
      const ack = this.acks.find((a) => a.sentAt >= since);
      if (ack) return ack;
      if (Date.now() > deadline) {
        const last = this.failures.at(-1);
        throw new Error(
          `no acknowledged write within ${timeoutMs} ms${last ? ` (last failure, to ${last.target}: ${last.error})` : ""}`,
        );
      }
    }
  }

  firstAck(timeoutMs?: number): Promise<LedgerAck> {
    return this.ackAfter(0, timeoutMs);
  }

  /**
   * The longest time in [from, to] (epoch ms) without an acknowledged write, counted from the last
   * acknowledgement before `from`: the write unavailability a fault at `from` caused.
   */
  longestGap(from: number, to: number): number {
    let last = this.acks.filter((a) => a.at < from).at(-1)?.at ?? from;
    let gap = 0;
    for (const a of this.acks) {
      if (a.at < from || a.at > to) continue;
      gap = Math.max(gap, a.at - last);
      last = a.at;
    }
    return Math.max(gap, to - last);
  }

  /** Outage windows that overlap [from, to]. */
  outagesBetween(from: number, to: number): LedgerOutage[] {
    return this.windows.filter((w) => w.from <= to && (w.to ?? Infinity) >= from);
  }

  /** Stops writing (the write in flight finishes or times out first) and closes the connection. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    this.drop();
  }

  /**
   * Checks that every acknowledged row is on `primary` (read through a connection of its own) and lists
   * the missing ones.
   */
  async verify(primary: PgAddress): Promise<LedgerVerdict> {
    const c = new Client({ ...primary, connectionTimeoutMillis: 5000, query_timeout: 30_000 });
    c.on("error", () => undefined);
    await c.connect();
    try {
      // The acknowledged set is taken before the SELECT: the writer goes on meanwhile, and a commit
      // acknowledged after the query's snapshot is not missing, only not yet visible to it.
      const acked = new Set(this.acks.map((a) => a.seq));
      const rows = (await c.query<{ seq: string }>(`SELECT seq FROM ${this.o.table}`)).rows;
      const present = new Set(rows.map((r) => Number(r.seq)));
      return {
        acknowledged: acked.size,
        missing: [...acked].filter((s) => !present.has(s)).sort((a, b) => a - b),
        unacknowledgedPresent: [...present].filter((s) => !acked.has(s)).length,
      };
    } finally {
      await c.end().catch(() => undefined);
    }
  }

  private async run(): Promise<void> {
    let next = Date.now();
    while (!this.stopped) {
      const wait = next - Date.now();
      if (wait > 0) await sleep(wait);
      if (this.stopped) break;
      next = Math.max(next + this.o.intervalMs, Date.now());
      await this.writeOnce();
    }
  }

  private async writeOnce(): Promise<void> {
    const sentAt = Date.now();
    let seq: number | undefined;
    try {
      const client = this.client ?? (await this.connect());
      seq = ++this.seq;
      this.notices = [];
      const r = await client.query<{ server: string; walfile: string; lsn: string }>(
        `INSERT INTO ${this.o.table} (seq) VALUES ($1)
           RETURNING host(inet_server_addr()) AS server, pg_walfile_name(pg_current_wal_lsn()) AS walfile,
                     pg_current_wal_lsn()::text AS lsn`,
        [seq],
      );
      const warning = this.notices.find((n) => SYNC_REP_CANCELLED.test(n));
      if (warning) throw new Error(`committed without its synchronous standby: ${warning}`);
      const row = r.rows[0]!;
      const at = Date.now();
      this.acks.push({
        seq,
        sentAt,
        at,
        server: row.server,
        timeline: parseInt(row.walfile.slice(0, 8), 16),
        lsn: row.lsn,
      });
      const open = this.windows.at(-1);
      if (open && open.to === undefined) {
        open.to = at;
        open.ms = at - open.from;
      }
    } catch (err) {
      const at = Date.now();
      this.failures.push({ seq, sentAt, at, target: this.target, error: (err as Error).message });
      this.drop();
      // Failures before the first acknowledgement are the start-up, not an outage.
      if (this.acks.length === 0) return;
      const open = this.windows.at(-1);
      if (open && open.to === undefined) {
        open.failures++;
        open.ms = at - open.from;
      } else this.windows.push({ from: sentAt, ms: at - sentAt, failures: 1 });
    }
  }

  private async connect(): Promise<Client> {
    const address = await this.o.address();
    this.target = `${address.host}:${address.port}`;
    this.connects.push({ at: Date.now(), target: this.target });
    const client = new Client({
      ...address,
      connectionTimeoutMillis: this.o.connectTimeoutMs,
      query_timeout: this.o.statementTimeoutMs,
      keepAlive: true,
      application_name: "steward-ledger",
    });
    // A connection that breaks between writes is found broken by the next write.
    client.on("error", () => undefined);
    client.on("notice", (n) => this.notices.push(`${n.severity ?? ""} ${n.message}`));
    try {
      await client.connect();
      // Fails on a standby (read-only), which is how a write to a demoted primary is refused too.
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${this.o.table} (seq bigint PRIMARY KEY, at timestamptz NOT NULL DEFAULT now())`,
      );
    } catch (err) {
      destroy(client);
      throw err;
    }
    this.client = client;
    return client;
  }

  private drop(): void {
    if (this.client) destroy(this.client);
    this.client = undefined;
  }
}

/**
 * Closes at once, without the goodbye `end()` would wait for: after a timeout the server may be
 * unreachable, and a query the client gave up on would otherwise still hold the connection.
 */
function destroy(client: Client): void {
  (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
  client.end().catch(() => undefined);
}

/** Reads what operators/postgresql-client wrote to its `db.json` (`database` or `db`, `user` or `username`). */
export function addressFromDbJson(text: string): PgAddress {
  const j = JSON.parse(text) as Record<string, unknown>;
  const str = (...keys: string[]): string => {
    for (const k of keys) if (typeof j[k] === "string" || typeof j[k] === "number") return String(j[k]);
    throw new Error(`db.json has none of ${keys.join(", ")}`);
  };
  return {
    host: str("host"),
    port: Number(str("port")),
    database: str("database", "db", "dbname"),
    user: str("user", "username"),
    password: str("password"),
  };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
