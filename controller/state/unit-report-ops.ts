/**
 * What agents report of their units: workload and agent status (with the capped status history and
 * the last failed hook's output, written with it), and the reads of that history and failure.
 */
import type { StatusLogEntry, UnitStatusReport } from "../../api";
import { STATUS_HISTORY_ENTRIES, STATUS_HISTORY_MESSAGE_CHARS, StewardError } from "../../api";
import type { Compare, Op } from "../store";
import { unchanged } from "../store";
import type { UnitFailureDoc, UnitStatusDoc } from "./documents";
import { keys } from "./keys";
import { docs, put } from "./doc-kinds";
import { StoreTxns } from "./txn";

export class UnitReportOps extends StoreTxns {
  /** Records a unit's status from its machine's agent; refuses units on other machines. */
  async setUnitStatus(uuid: string, machine: string, report: UnitStatusReport): Promise<{ revision: number }> {
    return this.retry(`status of ${report.unit}`, async () => {
      const u = await this.get(docs.unit, uuid, report.unit);
      if (!u || u.doc.machine !== machine)
        throw new StewardError("forbidden", `unit ${report.unit} is not on machine ${machine}`);
      const old = await this.get(docs.unitStatus, uuid, report.unit);
      const now = this.stamp();
      const prev: UnitStatusDoc = old?.doc ?? {
        workload: { current: "waiting", message: "agent initialising", since: now },
        agent: { current: "allocating", message: "", since: now },
        version: "",
      };
      const next: UnitStatusDoc = { ...prev };
      if (
        report.workload &&
        (report.workload.current !== prev.workload.current || report.workload.message !== prev.workload.message)
      )
        next.workload = { ...report.workload, since: now };
      if (report.agent && (report.agent.current !== prev.agent.current || report.agent.message !== prev.agent.message))
        next.agent = { ...report.agent, since: now };
      if (report.version !== undefined) next.version = report.version;
      if (report.applied) next.applied = report.applied;
      // A failed hook's output goes with the status that shows the failure, in the same write.
      const failure: Op[] = report.failure
        ? [put(docs.unitFailure, uuid, report.unit, { ...report.failure, since: now })]
        : [];
      if (old && failure.length === 0 && JSON.stringify(next) === JSON.stringify(old.doc))
        return { compare: [], ops: [], result: {} };
      const status = put(docs.unitStatus, uuid, report.unit, next);
      const compare = [
        unchanged(keys.unitStatus(uuid, report.unit), old?.rev ?? 0),
        unchanged(keys.unit(uuid, report.unit), u.rev),
      ];
      return {
        compare,
        ops: [
          status,
          ...failure,
          ...(await this.statusHistoryOps(uuid, report.unit, old ? prev : undefined, next, compare)),
        ],
        result: {},
      };
    });
  }
  /** Appends what changed between `prev` (none: the first report) and `next` to the unit's status history. */
  private async statusHistoryOps(
    uuid: string,
    unit: string,
    prev: UnitStatusDoc | undefined,
    next: UnitStatusDoc,
    compare: Compare[],
  ): Promise<Op[]> {
    const added: StatusLogEntry[] = [];
    for (const type of ["agent", "workload"] as const) {
      const s = next[type];
      if (prev && s.current === prev[type].current && s.message === prev[type].message) continue;
      added.push({
        since: s.since,
        type,
        status: s.current,
        message: s.message.slice(0, STATUS_HISTORY_MESSAGE_CHARS),
      });
    }
    if (added.length === 0) return [];
    const history = await this.get(docs.statusHistory, uuid, unit);
    compare.push(unchanged(keys.statusHistory(uuid, unit), history?.rev ?? 0));
    const entries = [...(history?.doc ?? []), ...added].slice(-STATUS_HISTORY_ENTRIES);
    return [put(docs.statusHistory, uuid, unit, entries)];
  }
  /** The unit's recent status changes, oldest first. */
  async statusHistory(uuid: string, unit: string): Promise<StatusLogEntry[]> {
    return (await this.get(docs.statusHistory, uuid, unit))?.doc ?? [];
  }
  /** The unit's last failed hook, if its agent reported one. */
  async unitFailure(uuid: string, unit: string): Promise<UnitFailureDoc | undefined> {
    return (await this.get(docs.unitFailure, uuid, unit))?.doc;
  }
}
