/**
 * What the PostgreSQL operator's tests wait for, wherever its units run (SSH test hosts or the fake
 * cluster's pods): one active primary and so many streaming standbys by the units' status messages,
 * and the client's db.json (operators/postgresql-client) listing the standbys. Each test says how it
 * reads the statuses, the servers' logs and the db.json on its substrate.
 */
import type { ControllerClient, TaskInfo, UnitStatusView } from "../../api";
import { eventually } from "./eventually";

/** The client's db.json, as operators/postgresql-client writes it. */
export interface ClientDbJson {
  host: string;
  port: number;
  database: string;
  user: string;
  password: string;
  readOnly: string[];
  /** What the client's libpq is told (prefer, require, verify-ca). */
  sslmode?: string;
}

/** The units' workload status and message ("active primary"), by unit. */
export function workloadMessages(units: Record<string, UnitStatusView>): Record<string, string> {
  return Object.fromEntries(Object.entries(units).map(([u, s]) => [u, `${s.workload.current} ${s.workload.message}`]));
}

/**
 * Waits for one active primary (`want`, when given) and `standbys` streaming standbys among the units
 * not in `except`; the primary's name. A timeout's error carries every unit's message and `logs()`.
 */
export function primaryAndStandbys(o: {
  messages: () => Promise<Record<string, string>>;
  logs: () => Promise<string>;
  standbys: number;
  timeoutMs: number;
  except?: string[];
  want?: string;
}): Promise<string> {
  return eventually(
    `a primary and ${o.standbys} standbys`,
    async () => {
      const m = Object.entries(await o.messages()).filter(([u]) => !(o.except ?? []).includes(u));
      const primaries = m.filter(([, s]) => s === "active primary");
      const streaming = m.filter(([, s]) => /^active standby, lag \d+ bytes$/.test(s));
      const ok = primaries.length === 1 && streaming.length === o.standbys && (!o.want || primaries[0]![0] === o.want);
      return ok ? primaries[0]![0] : undefined;
    },
    o.timeoutMs,
    500,
  ).catch(async (err: Error) => {
    throw new Error(`${err.message}; units: ${JSON.stringify(await o.messages())}\n${await o.logs()}`);
  });
}

/** Waits until the client's db.json lists `standbys` read-only endpoints (the leader republishes as they stream). */
export function dbJsonWithStandbys(
  read: () => Promise<ClientDbJson | undefined>,
  standbys: number,
): Promise<ClientDbJson> {
  return eventually(
    `the client's db.json with ${standbys} standbys`,
    async () => {
      const c = await read();
      return c?.readOnly.length === standbys ? c : undefined;
    },
    120_000,
    500,
  );
}

/** Runs action `name` on `unit` (`pg/leader` too) and waits until its task has finished, however it ended. */
export async function finishedAction(
  admin: ControllerClient,
  model: string,
  unit: string,
  name: string,
  params: Record<string, string> = {},
  timeoutMs = 300_000,
): Promise<TaskInfo> {
  const id = (await admin.runAction(model, [unit], name, params)).tasks[0]!.id;
  return eventually(
    `${name} on ${unit} (task ${id}) finished`,
    async () => {
      const task = await admin.task(model, id);
      return task.status !== "pending" && task.status !== "running" ? task : undefined;
    },
    timeoutMs,
    250,
  );
}
