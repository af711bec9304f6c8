/**
 * {@link QuorumKeeper}: run by the controller leader only, it keeps the cluster at its wanted number
 * of voters. Each pass looks at what is (etcd's member list, the replicas' presence) and makes at
 * most one change, so a new leader simply carries on from whatever state the last one left:
 *
 * 1. a learner exists → promote it once it has caught up (or remove it if it never does);
 * 2. a voter has been gone longer than `replaceAfter`, quorum holds, the hourly limit allows and a
 *    host can be had → remove it (etcd 3.4 refuses to add while a voter is dead);
 * 3. fewer voters than wanted and every voter healthy → install a replica on a host from the
 *    {@link ReplicaHostBroker} (the spare pool; a cloud) and add it as a learner (rule 1 promotes it).
 *
 * Nothing happens without quorum (the leader could not write anyway). Every decision is recorded
 * in `/cluster/keeper` for `steward show-controller`. The decision itself is pure (quorum-decision.ts);
 * this file looks, then acts on it: a worker of the leader's (a {@link Reconciler} on a timer).
 */
import type { Logger } from "../../api";
import type { ReplicaHost, ReplicaHostBroker } from "../../substrates";
import type { StateCache } from "../state";
import type { EtcdMemberInfo, EtcdMembership } from "../store/etcd";
import type { Store } from "../store";
import type { HaConfig, KeeperDoc, MemberDoc } from "../state";
import { DEFAULT_HA_CONFIG, HISTORY_LIMIT, clusterKeys, decode, docs, readDoc } from "../state";
import { Reconciler, sleep } from "../workers";
import { peerUrl, replicaName } from "./etcd-member";
import type { KeeperObservation } from "./quorum-decision";
import { decide, lostCandidates, observeGone } from "./quorum-decision";

/**
 * Before each change outside the store (etcd membership, a host: a StatefulSet scaled, an instance
 * launched): the store's writes are fenced, these are not, and a pass a deposed leader began would
 * otherwise go on beside the next leader's (seen under load: a fourth replica). The signal aborts in
 * the election's deposition callback; a call already made is not undone, hence a look before each.
 */
const stillLeading = (signal: AbortSignal): void => signal.throwIfAborted();

/** How often a member add refused as "unhealthy cluster" is tried, a second apart (etcd's window is 5 s). */
const ADD_MEMBER_ATTEMPTS = 15;
type AddedMember = Awaited<ReturnType<EtcdMembership["addLearner"]>>;

export interface QuorumKeeperOptions {
  /** A fenced store: the keeper's writes fail once this replica is no longer leader. */
  store: Store;
  membership: EtcdMembership;
  cache: StateCache;
  /** Where replacement replicas go (the spare pool; see controller.ts). */
  hosts: ReplicaHostBroker;
  log: Logger;
  /** @default 2000 */
  intervalMs?: number;
  /** How long a learner may take to catch up before it is given up. @default 90000 */
  learnerTimeoutMs?: number;
}

export class QuorumKeeper extends Reconciler {
  readonly name = "quorum-keeper";
  /** When this leader first saw each voter gone (a new leader starts counting afresh: conservative). */
  private goneSince = new Map<string, number>();
  private readonly learnerSince = new Map<string, number>();
  /** Removed replicas (retiredKey) whose cloud instance this leader has seen gone, or that had none. */
  private readonly retired = new Set<string>();

  constructor(private readonly o: QuorumKeeperOptions) {
    super({
      log: o.log,
      pollMs: o.intervalMs ?? 2000,
      failure: "quorum keeper pass failed; will retry",
      failureLevel: "warn",
    });
  }

  private get config(): HaConfig {
    return { ...DEFAULT_HA_CONFIG, ...this.o.cache.haConfig };
  }

  /** The replica (member name) of an etcd member: its name, or for a member not started yet, our record of it. */
  private nameOf(m: EtcdMemberInfo): string {
    if (m.name) return m.name;
    for (const d of this.o.cache.clusterMembers.values()) if (d.memberId === m.id) return d.name;
    return `unstarted-${m.id}`;
  }

  /** Looks (etcd, presence, the brokers), decides (quorum-decision.ts), acts. */
  protected async reconcile(signal: AbortSignal): Promise<void> {
    const members = (await this.o.membership.list()).map((member) => ({ member, name: this.nameOf(member) }));
    const present = new Set(this.o.cache.replicas.keys());
    const now = Date.now();
    this.goneSince = observeGone(this.goneSince, members, present, now);
    const seen: KeeperObservation = {
      members,
      present,
      config: this.config,
      now,
      goneSince: this.goneSince,
      replacements: this.o.cache.keeper?.replacements ?? [],
      noHost: this.o.hosts.unavailable(),
    };
    await this.recordRemovedElsewhere(members.map((m) => m.member));
    const lost = new Set<string>();
    for (const m of lostCandidates(seen)) if (await this.knownLost(m.member)) lost.add(m.member.id);
    const action = decide({ ...seen, lost });
    switch (action.kind) {
      case "report":
        await this.retireRemoved(signal);
        return this.report(action.state, action.message);
      case "promote":
        return this.promote(action.learner.member, signal);
      case "remove":
        return this.removeDead(
          action.dead.member,
          action.dead.name,
          action.goneForSeconds,
          action.recent,
          action.lost,
          signal,
        );
      case "grow":
        return this.grow(signal);
    }
  }

  /**
   * A replica etcd no longer lists whose record still says it is in the cluster: a leader removed it
   * and was deposed before it could record so (its fenced write refused). Recorded as removed now,
   * so that it is shown as such and its cloud instance is retired, not left running for nothing.
   * Member ids are never reused, and a record carries one only once etcd has added the member.
   */
  private async recordRemovedElsewhere(listed: EtcdMemberInfo[]): Promise<void> {
    const ids = new Set(listed.map((m) => m.id));
    const names = new Set(listed.map((m) => m.name).filter(Boolean));
    for (const d of this.o.cache.clusterMembers.values()) {
      if (d.state === "removed" || d.memberId === undefined || ids.has(d.memberId) || names.has(d.name)) continue;
      this.o.log.warn("a replica etcd no longer lists was still recorded in the cluster; recorded as removed", {
        replica: d.name,
      });
      await this.markMember(d.name, { state: "removed", reason: "removed from etcd; replaced" });
    }
  }

  /** The broker knows the member's host came back empty (a pod on a new claim): waiting longer cannot bring it back. */
  private async knownLost(v: EtcdMemberInfo): Promise<boolean> {
    const doc = this.o.cache.clusterMembers.get(this.nameOf(v));
    if (!doc?.host || !this.o.hosts.lost) return false;
    return this.o.hosts.lost(doc).catch((err: unknown) => {
      this.o.log.warn("could not tell whether a replica's host was lost", {
        host: doc.host,
        err: (err as Error).message,
      });
      return false;
    });
  }

  private async promote(learner: EtcdMemberInfo, signal: AbortSignal): Promise<void> {
    const name = this.nameOf(learner);
    const since = this.learnerSince.get(learner.id) ?? Date.now();
    this.learnerSince.set(learner.id, since);
    stillLeading(signal);
    try {
      await this.o.membership.promote(learner.id);
    } catch (err) {
      if (Date.now() - since < (this.o.learnerTimeoutMs ?? 90_000))
        return this.report("acting", `waiting for ${name} to catch up before it gets a vote`);
      stillLeading(signal);
      await this.o.membership.remove(learner.id);
      await this.markMember(name, { state: "removed", reason: `never caught up: ${(err as Error).message}` });
      return this.report(
        "blocked",
        `gave up on ${name}: it did not catch up within ${Math.round((this.o.learnerTimeoutMs ?? 90_000) / 1000)} s and was removed`,
        true,
      );
    }
    this.learnerSince.delete(learner.id);
    await this.markMember(name, { state: "member" });
    const host = this.o.cache.clusterMembers.get(name)?.host;
    if (host) await this.o.hosts.joined(host);
    await this.report("acting", `${name} caught up and is now a voter`, true);
  }

  private async removeDead(
    dead: EtcdMemberInfo,
    name: string,
    goneFor: number,
    recent: string[],
    lost: boolean,
    signal: AbortSignal,
  ): Promise<void> {
    const why = lost
      ? `its host came back with an empty volume, so it cannot rejoin (gone ${goneFor} s)`
      : `gone for ${goneFor} s (replaceAfter ${this.config.replaceAfterSeconds} s)`;
    await this.report("acting", `removing ${name} from etcd: ${why}`, true);
    stillLeading(signal);
    await this.o.membership.remove(dead.id);
    this.goneSince.delete(name);
    await this.markMember(name, {
      state: "removed",
      reason: lost ? "its volume was lost; replaced" : `gone for ${goneFor} s; replaced`,
    });
    // Out of the cluster for good: a cloud instance it ran on can go (it could not rejoin anyway).
    const removed = this.o.cache.clusterMembers.get(name);
    if (removed) await this.retire(removed);
    await this.update({ replacements: [...recent, new Date().toISOString()] });
    await this.report("acting", `${name} removed; a replacement is installed next`, true);
  }

  /**
   * Retires every replica removed for good whose instance is not seen gone yet, on each pass that
   * changes nothing else: a cloud call refused under load, a termination not finished yet, or a
   * leader deposed between the removal and the call would otherwise leave its instance running for
   * nothing. A host or instance a member still uses (an address given to a new replica) is left alone.
   */
  private async retireRemoved(signal: AbortSignal): Promise<void> {
    if (!this.o.hosts.retire) return;
    const members = [...this.o.cache.clusterMembers.values()];
    const live = members.filter((m) => m.state !== "removed");
    const inUse = new Set([...live.map((m) => m.host), ...live.flatMap((m) => (m.instance ? [m.instance.id] : []))]);
    for (const m of members) {
      if (m.state !== "removed" || inUse.has(m.host) || (m.instance && inUse.has(m.instance.id))) continue;
      if (this.retired.has(retiredKey(m))) continue;
      stillLeading(signal);
      await this.retire(m);
    }
  }

  private async retire(m: MemberDoc): Promise<void> {
    if (!this.o.hosts.retire) return;
    try {
      if (await this.o.hosts.retire({ host: m.host, ...(m.instance ? { instance: m.instance } : {}) }))
        this.retired.add(retiredKey(m));
    } catch (err) {
      this.o.log.warn("could not retire the replaced replica's host; tried again on a later pass", {
        host: m.host,
        err: (err as Error).message,
      });
    }
  }

  private async grow(signal: AbortSignal): Promise<void> {
    let name = "";
    const step = (s: string): void => {
      void this.report("acting", `${name}: ${s}`).catch(() => undefined);
    };
    await this.report("acting", "getting a host for a new replica", true);
    let host: ReplicaHost;
    stillLeading(signal);
    try {
      host = await this.o.hosts.acquire(
        (address, preferred) => (name = preferred ?? replicaName(address)),
        step,
        signal,
      );
    } catch (err) {
      // Deposed while getting it: the next term says what it does; this one can write nothing more.
      if (signal.aborted) throw err;
      return this.report("blocked", (err as Error).message, true);
    }
    let added: AddedMember;
    try {
      // Getting a host can take minutes (a pod to start, an instance to boot): leadership may have moved meanwhile.
      await this.report("acting", `installing replica ${name} on ${host.address}`, true);
      stillLeading(signal);
      added = await this.addLearnerWhenHealthy(peerUrl(host.address), signal);
    } catch (err) {
      // Not a member: the host would otherwise be left acquired (a cloud instance running for nothing).
      // A deposed leader leaves a spare to the next one, which may be using the same host by now; an
      // instance it launched nobody else knows of, so that one it terminates (seen under load: a fourth).
      if (signal.aborted) {
        await this.o.hosts
          .abandon?.(host)
          .catch((e: unknown) =>
            this.o.log.warn("could not give back a replica host", { host: host.address, err: (e as Error).message }),
          );
        throw err;
      }
      await this.o.hosts.release(host).catch((e: unknown) =>
        this.o.log.warn("could not give back an unused replica host", {
          host: host.address,
          err: (e as Error).message,
        }),
      );
      return this.report("blocked", `could not add ${name} to etcd: ${(err as Error).message}`, true);
    }
    const doc: MemberDoc = {
      name,
      host: host.address,
      apiPort: 0,
      memberId: added.member.id,
      state: "joining",
      addedAt: new Date().toISOString(),
      ...(host.instance ? { instance: host.instance } : {}),
    };
    await this.o.store.put(clusterKeys.member(name), JSON.stringify(doc));
    const initialCluster = added.members
      .map((m) => `${m.id === added.member.id ? name : this.nameOf(m)}=${m.peerUrls[0]}`)
      .join(",");
    try {
      await this.o.hosts.start(host, name, initialCluster, step);
    } catch (err) {
      // A learner does not count towards quorum: taking it out again is safe.
      await this.o.membership.remove(added.member.id).catch(() => undefined);
      await this.markMember(name, { state: "removed", reason: `install failed: ${(err as Error).message}` });
      await this.o.hosts.failed(host, (err as Error).message);
      return this.report("blocked", `host ${host.address} skipped: install failed: ${(err as Error).message}`, true);
    }
    await this.report("acting", `${name} started as a learner; it gets a vote once it has caught up`, true);
  }

  /**
   * etcd refuses a new member for a few seconds after the last one joined ("unhealthy cluster":
   * its leader must have been connected to a quorum for 5 s); that passes, so it is retried.
   */
  private async addLearnerWhenHealthy(peer: string, signal: AbortSignal): Promise<AddedMember> {
    for (let attempt = 1; ; attempt++) {
      stillLeading(signal);
      try {
        return await this.o.membership.addLearner(peer);
      } catch (err) {
        if (attempt >= ADD_MEMBER_ATTEMPTS || !/unhealthy cluster/.test((err as Error).message)) throw err;
        await sleep(1000, signal);
      }
    }
  }

  private async markMember(name: string, change: Partial<MemberDoc>): Promise<void> {
    const kv = await this.o.store.get(clusterKeys.member(name));
    const cur: MemberDoc = kv
      ? decode(docs.clusterMember, kv.value)
      : { name, host: "", apiPort: 0, state: "member", addedAt: new Date().toISOString() };
    await this.o.store.put(
      clusterKeys.member(name),
      JSON.stringify({
        ...cur,
        ...change,
        ...(change.state === "removed" ? { removedAt: new Date().toISOString() } : {}),
      }),
    );
  }

  private async update(change: Partial<KeeperDoc>): Promise<void> {
    const kv = await this.o.store.get(clusterKeys.keeper);
    const cur: KeeperDoc = kv
      ? decode(docs.clusterKeeper, kv.value)
      : { state: "idle", message: "", updatedAt: "", history: [], replacements: [] };
    await this.o.store.put(
      clusterKeys.keeper,
      JSON.stringify({ ...cur, ...change, updatedAt: new Date().toISOString() }),
    );
  }

  /** Records the keeper's state; `event` also appends it to the history. Unchanged states are not rewritten. */
  private async report(state: KeeperDoc["state"], message: string, event = false): Promise<void> {
    const cur = this.o.cache.keeper;
    if (!event && cur?.state === state && cur.message === message) return;
    // The history is appended to the stored document (the cache may lag a write just made).
    if (event) this.o.log.info("quorum keeper", { state, message });
    const stored = (await readDoc(this.o.store, docs.clusterKeeper))?.doc;
    const history = event
      ? [...(stored?.history ?? []), { at: new Date().toISOString(), message }].slice(-HISTORY_LIMIT)
      : (stored?.history ?? []);
    await this.update({ state, message, history });
  }
}

/** A removed replica's host and instance: a host given to a new replica later is another retirement. */
const retiredKey = (m: MemberDoc): string => `${m.host}/${m.instance?.id ?? ""}`;
