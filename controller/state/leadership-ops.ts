/**
 * Unit leadership: one leader per application, held through a store lease of the application's
 * leadership lease (api/leadership.ts; the controller's when it has none). A claim by the holder
 * renews the lease; a claim by another unit wins only once the key is gone (its lease expired, the
 * leader resigned or was removed). Every successful claim answers the TTL the holder now has from
 * the moment the claim was taken: agents hold leadership for that long after they *sent* the claim
 * and answer is-leader true only for the first half of it (agent/leadership.ts).
 *
 * A changed application lease applies at the next claim or renewal. A longer one swaps the store
 * lease at once (the key then lives longer than anything promised). A shorter one must never end
 * leadership before an earlier promise of the longer one runs out: renewals promise the shorter
 * lease at once but keep the longer store lease alive, and swap it for a shorter one only after
 * `shrinkAt`, once every promise of the longer one has run out.
 *
 * leader-resign revokes the leader's lease and deletes its key in one transaction that checks it is
 * still the holder, and leaves a hand-over for one lease period: only the named unit may claim, or
 * (without one) anyone but the resigner.
 */
import type { StatusInfo, WorkloadStatus } from "../../api";
import { DATABAG_LIMIT_BYTES, StewardError, invalidRequest, notFound } from "../../api";
import { LeaseNotFoundError, absent, unchanged } from "../store";
import type { DataBag, LeaderDoc, UnitDoc } from "./documents";
import { keys } from "./keys";
import { sortedBag } from "./relation-ops";
import { docs, put } from "./doc-kinds";
import type { Read } from "./txn";
import { StoreTxns } from "./txn";

/** What a claim answers: whether `unit` leads, and then for how long from the claim on (seconds). */
export interface ClaimResult {
  leader: boolean;
  leaseSeconds?: number;
}

/** Replicas' clocks may differ by this much: a shrink waits this long more than the promise it outlives. */
const CLOCK_SKEW_MS = 1000;

export class LeadershipOps extends StoreTxns {
  /**
   * Claims or renews leadership of `unit`'s application with a lease of `leaseSeconds` (its
   * application's); `defaultLeaseSeconds` is what a leader key written before TTLs were recorded holds.
   */
  async claim(
    uuid: string,
    machine: string,
    unit: string,
    leaseSeconds: number,
    defaultLeaseSeconds = leaseSeconds,
  ): Promise<ClaimResult> {
    const u = await this.unitOn(uuid, machine, unit);
    if (u.doc.life !== "alive") return { leader: false }; // a dying unit never takes leadership
    const app = u.doc.app;
    const key = keys.leader(uuid, app);
    for (let attempt = 0; attempt < 5; attempt++) {
      const cur = await this.get(docs.leader, uuid, app);
      if (cur) {
        if (cur.doc.unit !== unit) return { leader: false };
        try {
          const renewed = await this.renew(uuid, app, cur, leaseSeconds, defaultLeaseSeconds);
          if (renewed !== undefined) return { leader: true, leaseSeconds: renewed };
        } catch (err) {
          if (!(err instanceof LeaseNotFoundError)) throw err;
        }
        continue; // expired this instant (its key is going) or changed meanwhile: look again
      }
      const handover = await this.get(docs.leaderHandover, uuid, app);
      if (handover && (handover.doc.to !== undefined ? handover.doc.to !== unit : handover.doc.from === unit))
        return { leader: false };
      const lease = await this.store.grantLease(leaseSeconds);
      const doc: LeaderDoc = { unit, since: this.stamp(), lease: lease.id, leaseSeconds };
      const res = await this.store.txn({
        compare: [
          absent(key),
          unchanged(keys.unit(uuid, unit), u.rev),
          handover ? unchanged(keys.leaderHandover(uuid, app), handover.rev) : absent(keys.leaderHandover(uuid, app)),
        ],
        success: [
          { ...put(docs.leader, uuid, app, doc), lease: lease.id },
          ...(handover ? [{ type: "delete" as const, key: keys.leaderHandover(uuid, app) }] : []),
        ],
      });
      if (res.succeeded) return { leader: true, leaseSeconds };
      await this.store.revokeLease(lease.id);
    }
    return { leader: false };
  }

  /**
   * Renews the holder's lease, swapping it when the application's lease changed; the seconds now
   * promised, or undefined when the key changed meanwhile (look again).
   */
  private async renew(
    uuid: string,
    app: string,
    cur: Read<LeaderDoc>,
    want: number,
    defaultLeaseSeconds: number,
  ): Promise<number | undefined> {
    const held = cur.doc.leaseSeconds ?? defaultLeaseSeconds;
    const key = keys.leader(uuid, app);
    const { shrinkAt, ...rest } = cur.doc;
    if (want >= held) {
      if (want > held) return (await this.swap(uuid, app, cur, want)) ? want : undefined;
      await this.store.keepAlive(cur.doc.lease);
      // Asked back to the lease it holds before a shrink finished: forget the shrink, or a later one would start early.
      if (shrinkAt !== undefined) {
        const res = await this.store.txn({
          compare: [unchanged(key, cur.rev)],
          success: [{ ...put(docs.leader, uuid, app, rest), lease: cur.doc.lease }],
        });
        if (!res.succeeded) return undefined;
      }
      return held;
    }
    // Shorter: the longer store lease lives on until every promise it made has run out.
    if (shrinkAt !== undefined && Date.now() >= Date.parse(shrinkAt))
      return (await this.swap(uuid, app, cur, want)) ? want : undefined;
    await this.store.keepAlive(cur.doc.lease);
    if (shrinkAt === undefined) {
      const at = new Date(Date.now() + held * 1000 + CLOCK_SKEW_MS).toISOString();
      const res = await this.store.txn({
        compare: [unchanged(key, cur.rev)],
        success: [{ ...put(docs.leader, uuid, app, { ...rest, shrinkAt: at }), lease: cur.doc.lease }],
      });
      if (!res.succeeded) return undefined;
    }
    return want;
  }

  /** Moves the holder's key to a new lease of `seconds`; false when the key changed meanwhile. */
  private async swap(uuid: string, app: string, cur: Read<LeaderDoc>, seconds: number): Promise<boolean> {
    const lease = await this.store.grantLease(seconds);
    const { shrinkAt: _, ...rest } = cur.doc;
    const res = await this.store.txn({
      compare: [unchanged(keys.leader(uuid, app), cur.rev)],
      success: [
        { ...put(docs.leader, uuid, app, { ...rest, lease: lease.id, leaseSeconds: seconds }), lease: lease.id },
      ],
    });
    await this.store.revokeLease(res.succeeded ? cur.doc.lease : lease.id);
    return res.succeeded;
  }

  /**
   * leader-resign: `unit` gives up leadership now. Its lease is revoked and its key deleted in one
   * transaction that checks it still holds it; for the next `leaseSeconds` only `to` (a live unit of
   * the same application) may claim, or without `to` any unit but `unit`.
   */
  async resign(uuid: string, machine: string, unit: string, leaseSeconds: number, to?: string): Promise<number> {
    const u = await this.unitOn(uuid, machine, unit);
    const app = u.doc.app;
    if (to !== undefined) {
      if (to === unit) throw invalidRequest(`${unit} cannot hand leadership to itself`, { field: "to" });
      const target = await this.get(docs.unit, uuid, to);
      if (!target) throw notFound("unit", to);
      if (target.doc.app !== app)
        throw invalidRequest(
          `${to} is a unit of ${target.doc.app}, not of ${app}: leadership stays within an application`,
          {
            field: "to",
          },
        );
      if (target.doc.life !== "alive")
        throw invalidRequest(`${to} is ${target.doc.life}: hand leadership to a live unit`, { field: "to" });
    }
    const cur = await this.get(docs.leader, uuid, app);
    if (cur?.doc.unit !== unit)
      throw new StewardError("forbidden", `${unit} is not the leader of ${app}: only the leader may resign`);
    const lease = await this.store.grantLease(leaseSeconds);
    const handover = { from: unit, ...(to !== undefined ? { to } : {}), at: this.stamp() };
    const res = await this.store.txn({
      compare: [unchanged(keys.leader(uuid, app), cur.rev)],
      success: [
        { type: "delete", key: keys.leader(uuid, app) },
        { ...put(docs.leaderHandover, uuid, app, handover), lease: lease.id },
      ],
    });
    if (!res.succeeded) {
      await this.store.revokeLease(lease.id);
      throw new StewardError("conflict", `leadership of ${app} changed while ${unit} resigned; check is-leader`, {
        retryable: true,
      });
    }
    await this.store.revokeLease(cur.doc.lease);
    return res.revision;
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
