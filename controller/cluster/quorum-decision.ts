/**
 * What the quorum keeper does next, decided from what it sees, with no I/O (HashiCorp raft-autopilot's
 * manner): the keeper's loop gathers a {@link KeeperView} (etcd's members, the replicas' presence, the
 * config, the clock, its own memory of when voters went), calls {@link decide} and carries the action
 * out. One change per pass, in this order: nothing without quorum; a learner is promoted; a voter gone
 * too long (or whose host came back empty) is removed; a missing voter is grown; else idle. The rules
 * and their reasons are in quorum-keeper.ts's header; table tests in test/quorum-decision.test.ts.
 */
import type { EtcdMemberInfo } from "../store/etcd";
import type { HaConfig, KeeperDoc } from "../state";

/** An etcd member and the replica it is (its name, or our record of a member not started yet). */
export interface NamedMember {
  member: EtcdMemberInfo;
  name: string;
}

/** What the keeper sees before it asks any broker anything. */
export interface KeeperObservation {
  members: NamedMember[];
  /** Replicas whose presence lease is alive, by name. */
  present: ReadonlySet<string>;
  config: HaConfig;
  /** Milliseconds since the epoch. */
  now: number;
  /** When this leader first saw each voter gone, by name (see {@link observeGone}). */
  goneSince: ReadonlyMap<string, number>;
  /** When the replacements so far were made (ISO times, the keeper document's). */
  replacements: readonly string[];
  /** Why no replica host can be had now; undefined when one can. */
  noHost: string | undefined;
}

export interface KeeperView extends KeeperObservation {
  /** Member ids whose host is known to have come back empty (asked only of {@link lostCandidates}). */
  lost: ReadonlySet<string>;
}

export type KeeperAction =
  | { kind: "report"; state: Exclude<KeeperDoc["state"], "acting">; message: string }
  | { kind: "promote"; learner: NamedMember }
  /** `recent`: the replacements of the last hour, which this one joins. */
  | { kind: "remove"; dead: NamedMember; goneForSeconds: number; recent: string[]; lost: boolean }
  | { kind: "grow" };

const HOUR_MS = 3600_000;

/** The keeper's memory of gone voters after this look: present ones forgotten, newly gone ones timed from now. */
export function observeGone(
  goneSince: ReadonlyMap<string, number>,
  members: NamedMember[],
  present: ReadonlySet<string>,
  now: number,
): Map<string, number> {
  const next = new Map(goneSince);
  for (const { member, name } of members) {
    if (member.learner) continue;
    if (present.has(name)) next.delete(name);
    else if (!next.has(name)) next.set(name, now);
  }
  return next;
}

function quorumHolds(v: KeeperObservation): { voters: NamedMember[]; healthy: number; holds: boolean } {
  const voters = v.members.filter((m) => !m.member.learner);
  const healthy = voters.filter((m) => v.present.has(m.name)).length;
  return { voters, healthy, holds: healthy >= Math.floor(voters.length / 2) + 1 };
}

const goneFor = (v: KeeperObservation, name: string): number => v.now - v.goneSince.get(name)!;

/** Gone voters not yet overdue whose host the keeper should ask about (only when it would act on the answer). */
export function lostCandidates(v: KeeperObservation): NamedMember[] {
  const { voters, holds } = quorumHolds(v);
  if (!holds || v.members.some((m) => m.member.learner)) return [];
  return voters.filter((m) => v.goneSince.has(m.name) && goneFor(v, m.name) < v.config.replaceAfterSeconds * 1000);
}

export function decide(v: KeeperView): KeeperAction {
  const cfg = v.config;
  const { voters, healthy, holds } = quorumHolds(v);
  if (!holds)
    return {
      kind: "report",
      state: "blocked",
      message: `no quorum: ${healthy} of ${voters.length} voters present; nothing is changed until a majority is back`,
    };

  const learner = v.members.find((m) => m.member.learner);
  if (learner) return { kind: "promote", learner };

  const gone = voters.filter((m) => v.goneSince.has(m.name));
  const overdue = gone.filter((m) => goneFor(v, m.name) >= cfg.replaceAfterSeconds * 1000 || v.lost.has(m.member.id));
  if (overdue.length > 0) {
    const dead = overdue[0]!;
    const goneForSeconds = Math.round(goneFor(v, dead.name) / 1000);
    const recent = v.replacements.filter((t) => v.now - Date.parse(t) < HOUR_MS);
    if (recent.length >= cfg.maxReplacementsPerHour)
      return {
        kind: "report",
        state: "blocked",
        message: `replica ${dead.name} has been gone ${goneForSeconds} s, but ${recent.length} replacements were made in the last hour (limit ${cfg.maxReplacementsPerHour})`,
      };
    if (v.noHost)
      return {
        kind: "report",
        state: "blocked",
        message: `replica ${dead.name} has been gone ${goneForSeconds} s and should be replaced, but ${v.noHost}`,
      };
    // Lost only if it was not overdue by time alone: its removal then says why.
    const lost = goneFor(v, dead.name) < cfg.replaceAfterSeconds * 1000;
    return { kind: "remove", dead, goneForSeconds, recent, lost };
  }
  if (gone.length > 0) {
    const name = gone[0]!.name;
    const left = cfg.replaceAfterSeconds - Math.round(goneFor(v, name) / 1000);
    return {
      kind: "report",
      state: "waiting",
      message: `replica ${name} is gone; it is replaced in ${Math.max(0, left)} s unless it returns`,
    };
  }
  if (voters.length < cfg.replicas) {
    if (v.noHost)
      return {
        kind: "report",
        state: "blocked",
        message: `${voters.length} of ${cfg.replicas} wanted voters; ${v.noHost}`,
      };
    return { kind: "grow" };
  }
  return { kind: "report", state: "idle", message: `${voters.length} of ${cfg.replicas} voters healthy` };
}
