/**
 * Unit leadership: one leader per application, held through a store lease. A claim by the holder
 * renews the lease; a claim by another unit wins only once the key is gone (its lease expired or
 * the leader was removed). Agents renew at half the lease, so a leader is guaranteed leadership for
 * half the lease after any successful claim (30 s with the default 60 s).
 */
import type { StatusInfo, WorkloadStatus } from "../../api";
import { DATABAG_LIMIT_BYTES, StewardError, invalidRequest } from "../../api";
import { LeaseNotFoundError, absent, unchanged } from "../store";
import type { DataBag, LeaderDoc, UnitDoc } from "./documents";
import { keys } from "./keys";
import { sortedBag } from "./relation-ops";
import { docs, put } from "./doc-kinds";
import { StoreTxns } from "./txn";

export class LeadershipOps extends StoreTxns {
  /** Claims or renews leadership of `unit`'s application; true when `unit` leads afterwards. */
  async claim(uuid: string, machine: string, unit: string, leaseSeconds: number): Promise<boolean> {
    const u = await this.unitOn(uuid, machine, unit);
    if (u.doc.life !== "alive") return false; // a dying unit never takes leadership
    const key = keys.leader(uuid, u.doc.app);
    for (let attempt = 0; attempt < 5; attempt++) {
      const cur = await this.get(docs.leader, uuid, u.doc.app);
      if (cur) {
        if (cur.doc.unit !== unit) return false;
        try {
          await this.store.keepAlive(cur.doc.lease);
          return true;
        } catch (err) {
          if (!(err instanceof LeaseNotFoundError)) throw err;
          continue; // expired this instant: its key is going, claim afresh
        }
      }
      const lease = await this.store.grantLease(leaseSeconds);
      const doc: LeaderDoc = { unit, since: this.stamp(), lease: lease.id };
      const res = await this.store.txn({
        compare: [absent(key), unchanged(keys.unit(uuid, unit), u.rev)],
        success: [{ ...put(docs.leader, uuid, u.doc.app, doc), lease: lease.id }],
      });
      if (res.succeeded) return true;
      await this.store.revokeLease(lease.id);
    }
    return false;
  }

  /** Changes leader data at once (leader-set); only the leader may. */
  async set(uuid: string, machine: string, unit: string, patch: Record<string, string | null>): Promise<number> {
    const u = await this.unitOn(uuid, machine, unit);
    const res = await this.retry(`leader-set by ${unit}`, async () => {
      const leader = await this.get(docs.leader, uuid, u.doc.app);
      if (leader?.doc.unit !== unit)
        throw new StewardError(
          "forbidden",
          `${unit} is not the leader of ${u.doc.app}: only the leader may leader-set`,
        );
      const cur = await this.get(docs.leaderData, uuid, u.doc.app);
      const data: DataBag = { ...(cur?.doc ?? {}) };
      for (const [k, v] of Object.entries(patch)) {
        if (v === null || v === "") delete data[k];
        else data[k] = v;
      }
      if (JSON.stringify(sortedBag(data)) === JSON.stringify(sortedBag(cur?.doc ?? {})))
        return { compare: [], ops: [], result: {} }; // unchanged: followers see no leader-settings-changed
      const size = Buffer.byteLength(JSON.stringify(data));
      if (size > DATABAG_LIMIT_BYTES)
        throw invalidRequest(
          `leader data of ${u.doc.app} would hold ${size} bytes; the limit is ${DATABAG_LIMIT_BYTES} bytes`,
        );
      return {
        compare: [
          unchanged(keys.leader(uuid, u.doc.app), leader.rev),
          unchanged(keys.leaderData(uuid, u.doc.app), cur?.rev ?? 0),
        ],
        ops: [put(docs.leaderData, uuid, u.doc.app, data)],
        result: {},
      };
    });
    return res.revision;
  }

  /** The application status the leader sets (status-set --application); it overrides the derived one. */
  async setAppStatus(uuid: string, machine: string, unit: string, status: StatusInfo<WorkloadStatus>): Promise<number> {
    const u = await this.unitOn(uuid, machine, unit);
    const leader = await this.get(docs.leader, uuid, u.doc.app);
    if (leader?.doc.unit !== unit)
      throw new StewardError(
        "forbidden",
        `${unit} is not the leader of ${u.doc.app}: only the leader may set the application's status`,
      );
    const res = await this.store.txn({
      compare: [unchanged(keys.leader(uuid, u.doc.app), leader.rev)],
      success: [put(docs.appStatus, uuid, u.doc.app, status)],
    });
    if (!res.succeeded)
      throw new StewardError("conflict", `leadership of ${u.doc.app} changed; try again`, { retryable: true });
    return res.revision;
  }

  private async unitOn(uuid: string, machine: string, unit: string): Promise<{ doc: UnitDoc; rev: number }> {
    const u = await this.get(docs.unit, uuid, unit);
    if (!u || u.doc.machine !== machine)
      throw new StewardError("forbidden", `unit ${unit} is not on machine ${machine}`);
    return u;
  }
}
