/**
 * A highly available PostgreSQL under Steward on SSH test hosts, with a client writing through the
 * `database` relation: what the fault test and the failover benchmark both stand up, fault and check.
 * Three hosts run the `postgresql` units (the leader is the primary), a fourth `operators/postgresql-client`
 * (it writes the connection it is given to `db.json`, which the ledger re-reads on every reconnect), so
 * killing the primary's host never takes the writer's address book with it.
 *
 * {@link PgCluster.settle} is the check after a fault: writes flowing again, every unit back to
 * active with one primary and every standby streaming from it, every acknowledged commit on the primary (and, once caught up, on every
 * standby), and the timeline evidence read from every unit showing no two primaries at once.
 *
 * Needs root (network namespaces) and PostgreSQL 15 (setup-host.sh installs both).
 */
import { join } from "node:path";
import { Client } from "pg";
import type { TaskInfo, UnitStatusView } from "../../api";
import { eventually } from "./eventually";
import { operatorsDir, startTestController } from "./controller";
import type { TestController } from "./controller";
import { TestLab, sshMachineStarted } from "./hosts";
import type { TestHost } from "./hosts";
import type { PgAddress, PgLedger } from "./pg-ledger";
import { addressFromDbJson } from "./pg-ledger";
import { PG_BIN } from "./pg-server";
import { checkOnePrimaryAtATime } from "./pg-timelines";
import type { TimelineVerdict, UnitTimelines } from "./pg-timelines";

export const PG_APP = "postgresql";
export const CLIENT_APP = "client";

export interface PgClusterOptions {
  /** @default 3 */
  units?: number;
  /**
   * The postgresql application's unit-leadership lease, in seconds: a dead primary's unit loses
   * leadership when it runs out (the controller's default, 60 s, stays for everyone else).
   * @default 10
   */
  leaseSeconds?: number;
  /** Model name. @default "pg" */
  model?: string;
}

/** What one fault did to the writer and what the checks after it found. */
export interface FaultReport {
  fault: string;
  /** The longest time with no acknowledged write, from the fault until the checks passed (ms). */
  unavailableMs: number;
  /** Writes that failed or timed out in that time. */
  failedWrites: number;
  /**
   * From the fault until the writer was first sent to the primary it ended on (its db.json changed),
   * when that is another unit than before the fault (ms).
   */
  toldMs?: number;
  /** From the fault until every unit was active again with one primary and every standby streaming (ms). */
  settledMs: number;
  primary: string;
  acknowledged: number;
  /** Acknowledged commits not on the primary: must be empty. */
  missing: number[];
  /** Standbys that still lacked an acknowledged commit after 60 s, with the first missing seq. */
  standbysBehind: string[];
  timelines: TimelineVerdict;
}

export class PgCluster {
  private operatorPassword?: string;
  private constructor(
    readonly lab: TestLab,
    readonly tc: TestController,
    readonly model: string,
    /** The postgresql units' hosts, by unit name. */
    readonly unitHosts: Map<string, TestHost>,
    readonly clientHost: TestHost,
  ) {}

  static async start(o: PgClusterOptions = {}): Promise<PgCluster> {
    const n = o.units ?? 3;
    const model = o.model ?? "pg";
    const lab = await TestLab.create(n + 1);
    let tc: TestController | undefined;
    try {
      tc = await startTestController({ listenHost: `${lab.subnet}.1` });
      const client = tc.admin;
      // Statuses (a standby's lag) refreshed every 5 s, so "back to active" is seen soon after it is true.
      await client.createModel(model, { updateStatusInterval: 5 }, "ssh");
      const machines = await Promise.all(
        lab.hosts.map(async (h) => {
          await client.addSshMachine(model, lab.sshTarget(h));
          return sshMachineStarted(client, model, h, 300_000);
        }),
      );
      const pgOp = await tc.upload(join(operatorsDir, "postgresql"));
      const clientOp = await tc.upload(join(operatorsDir, "postgresql-client"));
      await client.deploy(model, {
        name: PG_APP,
        operator: pgOp,
        units: n,
        to: machines.slice(0, n),
        leadershipLease: o.leaseSeconds ?? 10,
      });
      await client.deploy(model, { name: CLIENT_APP, operator: clientOp, units: 1, to: [machines[n]!] });
      await client.integrate(model, `${CLIENT_APP}:database`, `${PG_APP}:database`);
      const units = await eventually(
        "the postgresql units on their machines",
        async () => {
          const s = await client.status(model);
          const us = Object.values(s.applications[PG_APP]?.units ?? {});
          return us.length === n && us.every((u) => u.machine) ? us : undefined;
        },
        60_000,
      );
      const machineHost = new Map(machines.map((m, i) => [m, lab.hosts[i]!]));
      const cluster = new PgCluster(
        lab,
        tc,
        model,
        new Map(units.map((u) => [u.name, machineHost.get(u.machine)!])),
        lab.hosts[n]!,
      );
      await cluster.allActive(600_000);
      await eventually("the client's db.json", () => cluster.address().catch(() => undefined), 120_000, 500);
      return cluster;
    } catch (err) {
      await tc?.close();
      await lab.close();
      throw err;
    }
  }

  get pgHosts(): TestHost[] {
    return [...this.unitHosts.values()];
  }

  /** Every host of the model (the client's too). */
  get hosts(): TestHost[] {
    return [...this.pgHosts, this.clientHost];
  }

  /** What the client was last given (its `db.json`): asked by the ledger before every reconnection. */
  async address(): Promise<PgAddress> {
    const r = await this.clientHost.exec(`cat /var/lib/steward/agents/*/units/${CLIENT_APP}-0/data/db.json`);
    if (r.code !== 0) throw new Error("the client has no db.json (yet)");
    return addressFromDbJson(r.stdout);
  }

  async pgUnits(): Promise<UnitStatusView[]> {
    return Object.values((await this.tc.admin.status(this.model)).applications[PG_APP]?.units ?? {});
  }

  /**
   * The primary as its units report it: the one unit whose status says "primary" (a unit whose agent
   * is lost, its host dead or cut off, still shows what it last reported).
   */
  async primary(): Promise<{ unit: string; host: TestHost }> {
    const units = await this.pgUnits();
    const p = units.filter((u) => u.agent.current !== "lost" && /^primary\b/.test(u.workload.message));
    if (p.length !== 1) throw new Error(`${p.length} units report primary: ${describe(units)}`);
    return { unit: p[0]!.name, host: this.unitHosts.get(p[0]!.name)! };
  }

  /** A standby (status "standby…"), the first by name. */
  async standby(): Promise<{ unit: string; host: TestHost }> {
    const s = (await this.pgUnits()).find((u) => /^standby\b/.test(u.workload.message));
    if (!s) throw new Error("no unit reports standby");
    return { unit: s.name, host: this.unitHosts.get(s.name)! };
  }

  /** Waits until every unit (postgresql and client) is active with its agent there, and exactly one reports primary. */
  async allActive(timeoutMs = 300_000): Promise<void> {
    let last = "";
    let failed: string[] = [];
    await eventually(
      "every unit active with one primary",
      async () => {
        const s = await this.tc.admin.status(this.model);
        const all = Object.values(s.applications).flatMap((a) => Object.values(a.units));
        const pg = Object.values(s.applications[PG_APP]?.units ?? {});
        last = describe(all);
        failed = all.filter((u) => u.workload.current !== "active").map((u) => u.name);
        // Active, its agent there (idle or running update-status, every 5 s here): allStreaming checks the rest.
        return (
          all.length === pg.length + 1 &&
          all.every(
            (u) => u.workload.current === "active" && u.agent.current !== "lost" && u.agent.current !== "error",
          ) &&
          pg.filter((u) => /^primary\b/.test(u.workload.message)).length === 1
        );
      },
      timeoutMs,
      500,
    ).catch(async (err: Error) => {
      throw new Error(`${err.message}; last seen: ${last}${await this.hookLogs(failed)}`);
    });
  }

  /** The end of each unit's hook log and server log, read on its host: why a hook failed. */
  private async hookLogs(units: string[]): Promise<string> {
    let out = "";
    for (const unit of units) {
      const host = this.unitHosts.get(unit) ?? this.clientHost;
      const log = await host.exec(`tail -n 30 /var/lib/steward/agents/*/units/${unit.replace("/", "-")}/hooks.log`);
      out += `\n--- ${unit}'s hooks.log (end) ---\n${log.stdout}`;
      // The operator keeps the server's log on its storage (operators/postgresql/lib/paths.js).
      const server = await host.exec("tail -n 15 /srv/postgresql/postgresql.log");
      if (server.code === 0) out += `--- ${unit}'s postgresql.log (end) ---\n${server.stdout}`;
    }
    return out;
  }

  /** Runs `action` on the leader and waits for it to finish (completed, or throws). */
  async leaderAction(action: string, params: Record<string, string> = {}): Promise<TaskInfo> {
    const run = await this.tc.admin.runAction(this.model, [`${PG_APP}/leader`], action, params);
    const id = run.tasks[0]!.id;
    const task = await eventually(
      `${action} task ${id}`,
      async () => {
        const t = await this.tc.admin.task(this.model, id);
        return t.status !== "pending" && t.status !== "running" ? t : undefined;
      },
      180_000,
      250,
    );
    if (task.status !== "completed") throw new Error(`${action} ${task.status}: ${task.message} ${task.output}`);
    return task;
  }

  /**
   * Waits until the primary's `pg_stat_replication` shows every other unit streaming: what units'
   * statuses say can lag (a unit's last report stands until its agent is seen gone), the server does not.
   */
  async allStreaming(primary: { host: string; port: number }, timeoutMs = 120_000): Promise<void> {
    const want = this.unitHosts.size - 1;
    let seen = "";
    await eventually(
      `${want} standbys streaming`,
      async () => {
        const rows = await this.query<{ name: string }>(
          primary,
          "SELECT application_name AS name FROM pg_stat_replication WHERE state = 'streaming'",
        );
        seen = rows.map((r) => r.name).join(", ");
        return rows.length === want;
      },
      timeoutMs,
      1000,
    ).catch((err: Error) => {
      throw new Error(`${err.message} (streaming: ${seen || "none"})`);
    });
  }

  /** A query on one unit's server as the superuser `operator` (its password read once with get-password). */
  async query<R extends object>(at: { host: string; port?: number }, sql: string): Promise<R[]> {
    this.operatorPassword ??= String(
      (await this.leaderAction("get-password", { username: "operator" })).results.password,
    );
    const c = new Client({
      host: at.host,
      port: at.port ?? 5432,
      user: "operator",
      password: this.operatorPassword,
      database: "postgres",
      connectionTimeoutMillis: 3000,
      query_timeout: 5000,
    });
    c.on("error", () => undefined);
    try {
      await c.connect();
      return (await c.query<R>(sql)).rows;
    } finally {
      await c.end().catch(() => undefined);
    }
  }

  /** Runs `switchover` (to `to`, or the operator's choice) on the leader and waits for it to finish. */
  switchover(to?: string): Promise<TaskInfo> {
    return this.leaderAction("switchover", to ? { to } : {});
  }

  /** Each unit's pg_controldata and timeline history files, read on its host. */
  async timelines(): Promise<UnitTimelines[]> {
    return Promise.all(
      [...this.unitHosts].map(async ([unit, host]) => {
        // The data directory is wherever the operator keeps it on its storage: the one holding global/pg_control.
        const found = await host.exec(
          "find /srv /var/lib/steward -path '*/global/pg_control' -not -path '*/backups/*' -printf '%h\\n' 2>/dev/null | head -1",
        );
        const dataDir = found.stdout.trim().replace(/\/global$/, "");
        if (!dataDir) return { unit, host: host.ip, histories: {} };
        const control = await host.exec(`${PG_BIN}/pg_controldata -D '${dataDir}'`);
        const files = (await host.exec(`ls '${dataDir}/pg_wal'`)).stdout
          .split("\n")
          .filter((f) => /\.history$/.test(f));
        const histories: Record<number, string> = {};
        for (const f of files) histories[parseInt(f, 16)] = (await host.exec(`cat '${dataDir}/pg_wal/${f}'`)).stdout;
        return { unit, host: host.ip, histories, ...(control.code === 0 ? { controlData: control.stdout } : {}) };
      }),
    );
  }

  /**
   * After a fault at `faultAt` (and whatever healed it): waits for writes to flow again and every unit
   * to be active with one primary, then checks the ledger against the primary, the standbys and the
   * timeline evidence. Returns what it found; the caller asserts (a test) or reports (a benchmark).
   */
  async settle(ledger: PgLedger, fault: string, faultAt: number): Promise<FaultReport> {
    await ledger.ackAfter(Date.now(), 300_000);
    await this.allActive();
    // The client's address follows the primary (relation data after a failover): wait until it does.
    const primary = await eventually(
      "the client's address pointing at the primary",
      async () => {
        const [p, a] = await Promise.all([this.primary(), this.address()]);
        return a.host === p.host.ip ? { ...p, address: a } : undefined;
      },
      120_000,
      500,
    );
    await this.allStreaming(primary.address);
    const settledAt = Date.now();
    await ledger.ackAfter(Date.now(), 120_000);
    const unavailableMs = ledger.longestGap(faultAt, settledAt);
    const failedWrites = ledger.failures.filter((f) => f.sentAt >= faultAt && f.sentAt <= settledAt).length;
    const verdict = await ledger.verify(primary.address);
    // Standbys apply what the primary has; synchronous ones at once, the others soon.
    const standbysBehind: string[] = [];
    for (const [unit, host] of this.unitHosts) {
      if (unit === primary.unit) continue;
      const behind = await eventually(
        `${unit} to hold every acknowledged commit`,
        async () => {
          const v = await ledger.verify({ ...primary.address, host: host.ip });
          return v.missing.length === 0 ? "none" : undefined;
        },
        60_000,
        1000,
      ).catch(async () => {
        const v = await ledger.verify({ ...primary.address, host: host.ip }).catch((e: Error) => e.message);
        return typeof v === "string"
          ? `${unit}: ${v}`
          : `${unit}: ${v.missing.length} missing from seq ${v.missing[0]}`;
      });
      if (behind !== "none") standbysBehind.push(behind);
    }
    const told = ledger.connects.find((x) => x.at >= faultAt && x.target.startsWith(`${primary.host.ip}:`));
    const before = ledger.acks.filter((a) => a.at < faultAt).at(-1)?.server;
    return {
      fault,
      unavailableMs,
      ...(told && before !== primary.host.ip ? { toldMs: told.at - faultAt } : {}),
      failedWrites,
      settledMs: settledAt - faultAt,
      primary: primary.unit,
      acknowledged: verdict.acknowledged,
      missing: verdict.missing,
      standbysBehind,
      timelines: checkOnePrimaryAtATime(await this.timelines(), ledger.acks),
    };
  }

  async close(): Promise<void> {
    await this.tc.close();
    await this.lab.close();
  }
}

const describe = (units: UnitStatusView[]): string =>
  units.map((u) => `${u.name} ${u.workload.current}/${u.agent.current} "${u.workload.message}"`).join("; ");

/** One line for a log: what a fault cost the writer. */
export function formatFault(r: FaultReport): string {
  return (
    `${r.fault}: writes unavailable ${(r.unavailableMs / 1000).toFixed(2)} s (${r.failedWrites} failed), ` +
    (r.toldMs !== undefined ? `client sent to the new primary after ${(r.toldMs / 1000).toFixed(1)} s, ` : "") +
    `settled in ${(r.settledMs / 1000).toFixed(1)} s, primary ${r.primary}, ${r.acknowledged} acknowledged, ` +
    `${r.missing.length} lost`
  );
}
