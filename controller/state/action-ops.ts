/**
 * Actions as state (`steward run`): an operation queues one task per unit in one transaction; each
 * unit's agent sees its queue in its view, starts a task, and reports it finished. Task records (with
 * results and logs) live outside the model's prefix, so the state cache never loads them; only the
 * small queue entries are cached and pushed.
 */
import type {
  ActionSpec,
  ActionValue,
  OperationInfo,
  RunActionResult,
  TaskFinish,
  TaskInfo,
  TaskStatus,
} from "../../api";
import { StewardError, TASK_LIMITS, checkActionParams, invalidRequest, notFound } from "../../api";
import type { Compare, Op, Store } from "../store";
import { unchanged } from "../store";
import type { OperationDoc, QueuedTaskDoc, TaskDoc, UnitDoc } from "./documents";
import { unitNumber } from "./agent-views";
import { keys } from "./keys";
import { decode, docs, put } from "./doc-kinds";
import { StoreTxns } from "./txn";

/** Most bytes one run writes (its tasks and queue entries), well under etcd's request limit (10 MiB as the controller runs it). */
const MAX_RUN_BYTES = 8 * 1024 * 1024;
/** Actions that may wait for one unit at once. */
export const MAX_QUEUED_PER_UNIT = 100;
/** Operations kept per model; older ones (and their tasks) are deleted as new ones come. */
export const MAX_OPERATIONS_PER_MODEL = 1000;

export class ActionOps extends StoreTxns {
  constructor(store: Store, now?: () => Date) {
    super(store, now);
  }

  /**
   * Queues `action` on every unit the targets name: a unit, `app/leader` (the unit holding the
   * application's leadership now) or `app` (all its alive units). Every target and parameter is
   * checked first; nothing is queued unless all of it holds.
   */
  async run(
    uuid: string,
    by: string,
    req: { targets: string[]; action: string; params: Record<string, ActionValue> },
    queued: (unit: string) => number = () => 0,
  ): Promise<RunActionResult & { revision: number }> {
    const result = await this.retry<RunActionResult>(`run ${req.action}`, async () => {
      const compare: Compare[] = [];
      const units = new Map<string, UnitDoc>();
      for (const target of req.targets)
        for (const u of await this.targetUnits(uuid, target, compare)) units.set(u.name, u);
      for (const u of units.values()) {
        if (queued(u.name) >= MAX_QUEUED_PER_UNIT)
          throw new StewardError(
            "rate-limited",
            `unit ${u.name} already has ${MAX_QUEUED_PER_UNIT} actions waiting; let them run (steward operations) before queueing more`,
            { details: { field: "targets", unit: u.name } },
          );
      }
      const params = new Map<string, Record<string, ActionValue>>();
      for (const app of new Set([...units.values()].map((u) => u.app)))
        params.set(app, await this.checkedParams(uuid, app, req.action, req.params));
      const seq = await this.store.get(keys.taskSeq(uuid));
      compare.push(unchanged(keys.taskSeq(uuid), seq?.modRevision ?? 0));
      let next = Number(seq?.value ?? "0");
      const operation = ++next;
      const enqueued = this.stamp();
      const ops: Op[] = [];
      const tasks: { id: number; unit: string }[] = [];
      for (const u of [...units.values()].sort((a, b) => compareUnits(a.name, b.name))) {
        const id = ++next;
        const p = params.get(u.app)!;
        tasks.push({ id, unit: u.name });
        const task: TaskDoc = {
          id,
          operation,
          unit: u.name,
          action: req.action,
          params: p,
          status: "pending",
          enqueued,
          message: "",
          results: {},
          log: [],
          output: "",
        };
        const queued: QueuedTaskDoc = { id, action: req.action, params: p, state: "pending" };
        ops.push(put(docs.task, uuid, id, task), put(docs.taskQueue, uuid, u.name, id, queued));
      }
      const doc: OperationDoc = { id: operation, action: req.action, enqueued, by, targets: req.targets, tasks };
      const bytes = ops.reduce((n, o) => n + (o.type === "put" ? o.value.length : 0), 0);
      if (bytes > MAX_RUN_BYTES)
        throw invalidRequest(
          `running ${req.action} on ${tasks.length} units with these parameters would write ${bytes} bytes at once, more than the ${MAX_RUN_BYTES} one run may: run it on fewer units at a time, or pass less data`,
          { field: "targets" },
        );
      ops.push(put(docs.operation, uuid, operation, doc), {
        type: "put",
        key: keys.taskSeq(uuid),
        value: String(next),
      });
      return { compare, ops, result: { operation, tasks } };
    });
    await this.prune(uuid).catch(() => undefined); // best effort: the next run prunes again
    return result;
  }

  private async targetUnits(uuid: string, target: string, compare: Compare[]): Promise<UnitDoc[]> {
    const [app, which] = target.split("/") as [string, string | undefined];
    if (which === undefined) {
      const all = (await this.getAll(docs.unit, uuid, app)).filter((u) => u.doc.life === "alive");
      if (all.length === 0) {
        if (!(await this.get(docs.app, uuid, app))) throw notFound("application", app);
        throw invalidRequest(`application ${app} has no units to run an action on`, { field: "targets" });
      }
      for (const u of all) compare.push(unchanged(u.key, u.rev));
      return all.map((u) => u.doc);
    }
    let name = target;
    if (which === "leader") {
      const leader = await this.get(docs.leader, uuid, app);
      if (!leader) {
        if (!(await this.get(docs.app, uuid, app))) throw notFound("application", app);
        throw invalidRequest(
          `application ${app} has no leader yet (its units are still deciding): name a unit instead`,
          { field: "targets" },
        );
      }
      compare.push(unchanged(keys.leader(uuid, app), leader.rev));
      name = leader.doc.unit;
    }
    const u = await this.get(docs.unit, uuid, name);
    if (!u) throw notFound("unit", name);
    if (u.doc.life !== "alive")
      throw invalidRequest(`unit ${name} is being removed: it runs no more actions`, { field: "targets" });
    compare.push(unchanged(keys.unit(uuid, name), u.rev));
    return [u.doc];
  }

  private async checkedParams(
    uuid: string,
    appName: string,
    action: string,
    params: Record<string, ActionValue>,
  ): Promise<Record<string, ActionValue>> {
    const app = await this.get(docs.app, uuid, appName);
    if (!app) throw notFound("application", appName);
    const op = await this.get(docs.operator, app.doc.operator.hash);
    const actions: Record<string, ActionSpec> = op?.doc.meta.actions ?? {};
    const spec = Object.hasOwn(actions, action) ? actions[action] : undefined;
    if (!spec) {
      const known = Object.keys(actions);
      throw new StewardError(
        "invalid-request",
        `application ${appName} (operator ${app.doc.operator.name}) has no action "${action}"; ${known.length > 0 ? `its actions: ${known.join(", ")}` : "it declares no actions"}`,
        { details: { field: "action" } },
      );
    }
    return checkActionParams(appName, action, spec, params);
  }

  /** Deletes the oldest operations (and their tasks) past {@link MAX_OPERATIONS_PER_MODEL}. */
  private async prune(uuid: string): Promise<void> {
    const all = (await this.store.range(keys.operationsOf(uuid))).kvs;
    const excess = all.length - MAX_OPERATIONS_PER_MODEL;
    if (excess <= 0) return;
    const ops: Op[] = [];
    for (const kv of all.slice(0, excess)) {
      const doc = decode(docs.operation, kv.value);
      ops.push(
        { type: "delete", key: kv.key },
        ...doc.tasks.map((t): Op => ({ type: "delete", key: keys.task(uuid, t.id) })),
      );
    }
    await this.store.txn({ compare: [], success: ops });
  }

  /** The unit's agent starts a task: refused when it is no longer queued (its unit was removed). */
  async start(uuid: string, machine: string, unit: string, id: number): Promise<number> {
    const res = await this.retry(`start task ${id}`, async () => {
      const queued = await this.ownQueued(uuid, machine, unit, id);
      const task = await this.get(docs.task, uuid, id);
      const ops: Op[] = [put(docs.taskQueue, uuid, unit, id, { ...queued.doc, state: "running" })];
      if (task) ops.push(put(docs.task, uuid, id, { ...task.doc, status: "running", started: this.stamp() }));
      return {
        compare: [
          unchanged(keys.taskQueue(uuid, unit, id), queued.rev),
          ...(task ? [unchanged(keys.task(uuid, id), task.rev)] : []),
        ],
        ops,
        result: {},
      };
    });
    return res.revision;
  }

  /** The task ended. Reporting it again (an agent retrying after a lost answer) changes nothing. */
  async finish(uuid: string, machine: string, report: TaskFinish): Promise<number> {
    const resultsBytes = Buffer.byteLength(JSON.stringify(report.results));
    if (resultsBytes > TASK_LIMITS.resultsBytes)
      throw invalidRequest(
        `task ${report.id}'s results are ${resultsBytes} bytes as JSON; at most ${TASK_LIMITS.resultsBytes}`,
        { field: "results" },
      );
    const res = await this.retry(`finish task ${report.id}`, async () => {
      const u = await this.get(docs.unit, uuid, report.unit);
      if (u && u.doc.machine !== machine)
        throw new StewardError("forbidden", `unit ${report.unit} is not on machine ${machine}`);
      const queued = await this.get(docs.taskQueue, uuid, report.unit, report.id);
      const task = await this.get(docs.task, uuid, report.id);
      if (task && task.doc.unit !== report.unit)
        throw new StewardError("forbidden", `task ${report.id} is not ${report.unit}'s`);
      if (!queued) return { compare: [], ops: [], result: {} };
      const ops: Op[] = [{ type: "delete", key: keys.taskQueue(uuid, report.unit, report.id) }];
      if (task) {
        const done: TaskDoc = {
          ...task.doc,
          status: report.status,
          completed: this.stamp(),
          started: task.doc.started ?? this.stamp(),
          message: report.message,
          results: report.results,
          log: report.log,
          output: report.output,
          ...(report.exitCode !== undefined ? { exitCode: report.exitCode } : {}),
        };
        ops.push(put(docs.task, uuid, report.id, done));
      }
      return {
        compare: [
          unchanged(keys.taskQueue(uuid, report.unit, report.id), queued.rev),
          ...(task ? [unchanged(keys.task(uuid, report.id), task.rev)] : []),
        ],
        ops,
        result: {},
      };
    });
    return res.revision;
  }

  private async ownQueued(
    uuid: string,
    machine: string,
    unit: string,
    id: number,
  ): Promise<{ doc: QueuedTaskDoc; rev: number }> {
    const u = await this.get(docs.unit, uuid, unit);
    if (!u || u.doc.machine !== machine)
      throw new StewardError("forbidden", `unit ${unit} is not on machine ${machine}`);
    const queued = await this.get(docs.taskQueue, uuid, unit, id);
    if (!queued) throw notFound("queued task", String(id));
    return queued;
  }

  /** A task as show-task shows it: one whose unit went before it finished reads as aborted. */
  async task(uuid: string, id: number, unitExists: (unit: string) => boolean): Promise<TaskInfo> {
    const t = await this.get(docs.task, uuid, id);
    if (!t) throw notFound("task", String(id));
    return withAbort(t.doc, unitExists);
  }

  /** The newest operations first, at most `limit`, each with its tasks' statuses. */
  async operations(uuid: string, limit: number, unitExists: (unit: string) => boolean): Promise<OperationInfo[]> {
    const ops = (await this.getAll(docs.operation, uuid))
      .slice(-limit)
      .reverse()
      .map((r) => r.doc);
    const out: OperationInfo[] = [];
    for (const o of ops) {
      const tasks: OperationInfo["tasks"] = [];
      for (const t of o.tasks) {
        const doc = (await this.get(docs.task, uuid, t.id))?.doc;
        tasks.push({ id: t.id, unit: t.unit, status: doc ? withAbort(doc, unitExists).status : "aborted" });
      }
      out.push({
        id: o.id,
        action: o.action,
        enqueued: o.enqueued,
        by: o.by,
        targets: o.targets,
        status: operationStatus(tasks.map((t) => t.status)),
        tasks,
      });
    }
    return out;
  }
}

function withAbort(t: TaskDoc, unitExists: (unit: string) => boolean): TaskInfo {
  if ((t.status === "pending" || t.status === "running") && !unitExists(t.unit))
    return { ...t, status: "aborted", message: `unit ${t.unit} was removed before the action finished` };
  return t;
}

/** Running while any task runs, pending while any waits, else failed/aborted if any did, else completed. */
export function operationStatus(statuses: TaskStatus[]): TaskStatus {
  for (const s of ["running", "pending", "failed", "aborted"] as const) if (statuses.includes(s)) return s;
  return "completed";
}

function compareUnits(a: string, b: string): number {
  const appA = a.slice(0, a.lastIndexOf("/"));
  const appB = b.slice(0, b.lastIndexOf("/"));
  return appA === appB ? unitNumber(a) - unitNumber(b) : appA.localeCompare(appB);
}
