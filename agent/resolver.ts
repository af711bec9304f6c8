/**
 * Which hook a unit runs next: a pure function of what the controller wants (the unit's view) and
 * what the unit has done (its local state), in Juju's order (Juju's uniter resolver; docs/operators.md
 * lists the hooks). The guarantees that follow:
 *
 * - deploy: install → relation-created (each integration) → leader-elected (leader) or
 *   leader-settings-changed (others) → config-changed → start → per remote unit relation-joined,
 *   immediately followed by relation-changed for that unit;
 * - config change, or a new unit address (the machine came back with another) → config-changed;
 *   new operator content → upgrade → config-changed; a started unit after its machine rebooted →
 *   start (its workload died with the machine);
 * - a remote unit leaving → relation-departed; an integration removed → relation-departed for each
 *   remote unit, then relation-broken (never for peer relations);
 * - storage (issue 32): `<name>-storage-attached` for each instance attached to the unit, once its
 *   volume broker has attached it and before anything else (so before install for the storage a
 *   unit is deployed with: install waits for it, as in Juju); an instance detached from a live unit
 *   (`detach-storage`) → `<name>-storage-detaching`, then it is released;
 * - a unit removed → every relation departed and broken (peer relations last), then
 *   `<name>-storage-detaching` for each attached instance, then stop → remove;
 * - on Kubernetes, once started, `<container>-workload-ready` for each workload container whose
 *   supervisor answers and has not had it (a restarted container's new supervisor has it again);
 * - secrets (issue 33), once the unit has started, after leadership and before everything else
 *   (Juju's order): `secret-rotate` for an owner whose rotation fell due (once per due time),
 *   `secret-expired` once per expired revision, `secret-changed` for a consumer tracking an older
 *   revision than the latest (once per latest revision), `secret-remove` for an owner once per
 *   revision no consumer tracks any more.
 *
 * Where Juju is vague we chose: leadership must be decided before a new unit's config-changed, so
 * the deploy order above always holds; JUJU_DEPARTING_UNIT-style `departingUnit` names the remote
 * unit when it leaves or the integration ends, and the unit itself when it is the one going.
 */
import type { QueuedAction, RelationView, UnitSecretView, UnitView } from "../api/core";
import { configHash, workloadReadyHook } from "../api/core";
import type { HookKind, HookSpec, RelationLocalState, SecretLocalState, UnitLocalState } from "./unit-state";

export type Decision =
  | { kind: "run"; hook: HookSpec }
  /** `steward resolve --no-retry`: record the failed hook as done without running it. */
  | { kind: "skip"; hook: HookSpec }
  /** Leave a relation (no hook): its teardown is complete. */
  | { kind: "leave"; relationId: number }
  /** Leadership was lost: forget it (no hook, as in Juju). */
  | { kind: "resign" }
  /** An instance `detach-storage` asked for has had its detaching hook (or never its attached one): tell the controller. */
  | { kind: "release-storage"; storageId: string }
  | { kind: "dead" }
  | { kind: "idle" };

export interface ResolveOptions {
  /** update-status is due. */
  updateStatusDue: boolean;
  /** A failed hook may run again now (automatic retry enabled and its backoff elapsed). */
  retryDue: boolean;
  /** The unit's address now (unknown until the agent first connects: then it triggers nothing). */
  address?: string;
  /** The machine's boot now (see boot-id.ts; unknown: reboots trigger nothing). */
  bootId?: string;
  /** Workload containers whose supervisor answers now: container → the supervisor's bootId. */
  workloads?: Record<string, string>;
}

// Shared with the controller, which shows the hash an application wants beside the one each unit applied.
export { configHash };

const simple = (kind: HookKind): HookSpec => ({ kind, name: kind });

function relHook(
  kind: HookKind,
  id: number,
  r: { endpoint: string; remoteApp: string },
  extra: Partial<HookSpec> = {},
): HookSpec {
  return { kind, name: `${r.endpoint}-${kind}`, relationId: id, remoteApp: r.remoteApp, ...extra };
}

/** Local relations in Juju's order: regular ones by id, then peer relations by id. */
function orderedLocal(s: UnitLocalState): [number, RelationLocalState][] {
  return Object.entries(s.relations)
    .map(([id, r]) => [Number(id), r] as [number, RelationLocalState])
    .sort(([a, ra], [b, rb]) => (ra.peer === rb.peer ? a - b : ra.peer ? 1 : -1));
}

const sortedUnits = (units: Iterable<string>): string[] =>
  [...units].sort((a, b) => {
    const [aa, an] = a.split("/");
    const [ba, bn] = b.split("/");
    return aa === ba ? Number(an) - Number(bn) : aa!.localeCompare(ba!);
  });

/**
 * The action to run next, asked only when no hook is due (actions queue behind hooks): the oldest
 * queued one this unit has not finished, once it has started and while it is not being removed. A
 * unit in error runs actions too (a repair is what one may be for).
 */
export function nextAction(view: UnitView, s: UnitLocalState): QueuedAction | undefined {
  if (view.life !== "alive" || !s.started || s.stopped) return undefined;
  return view.actions?.find((a) => a.id > s.lastTask);
}

export function nextHook(view: UnitView, s: UnitLocalState, o: ResolveOptions): Decision {
  if (view.life === "dying") {
    for (const [id, r] of orderedLocal(s)) {
      const joined = sortedUnits(Object.keys(r.joined));
      if (joined.length > 0)
        return {
          kind: "run",
          hook: relHook("relation-departed", id, r, { remoteUnit: joined[0], departingUnit: view.name }),
        };
      if (!r.peer && !r.broken) return { kind: "run", hook: relHook("relation-broken", id, r) };
      return { kind: "leave", relationId: id };
    }
    const detaching = [...(s.storage ?? [])].sort()[0];
    if (detaching !== undefined) return { kind: "run", hook: storageHook("storage-detaching", detaching) };
    if (s.started && !s.stopped) return { kind: "run", hook: simple("stop") };
    if (s.installed && !s.removed) return { kind: "run", hook: simple("remove") };
    return { kind: "dead" };
  }
  if (s.failedHook) {
    if (view.resolve === "no-retry") return { kind: "skip", hook: s.failedHook };
    if (view.resolve === "retry" || o.retryDue) return { kind: "run", hook: s.failedHook };
    return { kind: "idle" };
  }
  const storage = storageDecision(view, s);
  if (storage) return storage;
  if (!s.installed) return { kind: "run", hook: simple("install") };
  for (const r of view.relations) {
    if (r.life === "alive" && !(String(r.id) in s.relations))
      return { kind: "run", hook: relHook("relation-created", r.id, r) };
  }
  if (view.leader && !s.leader) return { kind: "run", hook: simple("leader-elected") };
  if (!view.leader && s.leader) return { kind: "resign" };
  // A new unit waits for leadership to be decided, so it runs exactly one of the two leader hooks first.
  if (s.leaderSettingsVersion === -1 && !view.leaderKnown) return { kind: "idle" };
  if (!view.leader && s.leaderSettingsVersion !== view.leaderSettingsVersion)
    return { kind: "run", hook: simple("leader-settings-changed") };
  const rebooted = s.started && o.bootId !== undefined && s.bootId !== undefined && s.bootId !== o.bootId;
  const secret = s.started && !rebooted ? secretHook(view, s) : undefined;
  if (secret) return secret;
  if (s.operatorHash !== view.operator.hash) return { kind: "run", hook: simple("upgrade") };
  if (rebooted) return { kind: "run", hook: simple("start") };
  if (s.configHash !== configHash(view.config) || (o.address !== undefined && s.address !== o.address))
    return { kind: "run", hook: simple("config-changed") };
  if (!s.started) return { kind: "run", hook: simple("start") };
  // Before relation hooks: an operator configures its workload as soon as it can.
  for (const [container, supervisor] of Object.entries(o.workloads ?? {}).sort(([a], [b]) => a.localeCompare(b))) {
    if (s.workloadReady?.[container] !== supervisor)
      return {
        kind: "run",
        hook: { kind: "workload-ready", name: workloadReadyHook(container), container, supervisor },
      };
  }
  const rel = relationHook(view, s);
  if (rel) return rel;
  if (o.updateStatusDue) return { kind: "run", hook: simple("update-status") };
  return { kind: "idle" };
}

/** A storage hook: `<name>-storage-attached` or `-detaching`, for instance `id` (`data/0`). */
function storageHook(kind: "storage-attached" | "storage-detaching", id: string): HookSpec {
  return { kind, name: `${id.slice(0, id.indexOf("/"))}-${kind}`, storageId: id };
}

/**
 * Storage first: an instance being detached has its detaching hook (when its attached one ran) and
 * is released; a unit not yet installed waits until every instance it was deployed with is
 * attached; then `<name>-storage-attached` runs for each attached instance it has not seen.
 */
function storageDecision(view: UnitView, s: UnitLocalState): Decision | undefined {
  const seen = new Set(s.storage ?? []);
  const detaching = (view.storage ?? []).find((v) => v.life === "dying");
  if (detaching)
    return seen.has(detaching.id)
      ? { kind: "run", hook: storageHook("storage-detaching", detaching.id) }
      : { kind: "release-storage", storageId: detaching.id };
  const storage = view.storage ?? [];
  if (!s.installed && storage.some((v) => v.location === undefined)) return { kind: "idle" };
  const next = storage.find((v) => v.location !== undefined && !seen.has(v.id));
  return next ? { kind: "run", hook: storageHook("storage-attached", next.id) } : undefined;
}

/** A secret hook for `sv`, told the secret's uri and label (its revision or due time in `extra`). */
function secretRun(kind: HookKind, sv: UnitSecretView, extra: Partial<HookSpec>): Decision {
  return {
    kind: "run",
    hook: {
      kind,
      name: kind,
      secretUri: sv.uri,
      ...(sv.label !== undefined ? { secretLabel: sv.label } : {}),
      ...extra,
    },
  };
}

/** The next secret hook of a started unit: each kind for every secret (by uri) before the next kind. */
function secretHook(view: UnitView, s: UnitLocalState): Decision | undefined {
  const secrets = [...(view.secrets ?? [])].sort((a, b) => a.uri.localeCompare(b.uri));
  const seen = (uri: string): SecretLocalState => s.secrets?.[uri] ?? {};
  for (const sv of secrets)
    if (sv.owner && sv.rotateDue !== undefined && seen(sv.uri).rotated !== sv.rotateDue)
      return secretRun("secret-rotate", sv, { secretDue: sv.rotateDue });
  for (const sv of secrets) {
    const revision = sv.owner ? sv.expired?.find((r) => !seen(sv.uri).expired?.includes(r)) : undefined;
    if (revision !== undefined) return secretRun("secret-expired", sv, { secretRevision: revision });
  }
  for (const sv of secrets)
    if (!sv.owner && sv.tracked !== undefined && sv.tracked < sv.latest && seen(sv.uri).changed !== sv.latest)
      return secretRun("secret-changed", sv, { secretRevision: sv.latest });
  for (const sv of secrets) {
    const revision = sv.owner ? sv.obsolete?.find((r) => !seen(sv.uri).removed?.includes(r)) : undefined;
    if (revision !== undefined) return secretRun("secret-remove", sv, { secretRevision: revision });
  }
  return undefined;
}

/**
 * What the unit remembers of its secret hooks once `hook` committed: the hook's own mark, kept only
 * for secrets (and revisions) the view still has, so the record does not grow with every revision.
 */
function secretsAfter(s: UnitLocalState, hook: HookSpec, view: UnitView): Record<string, SecretLocalState> | undefined {
  const all: Record<string, SecretLocalState> = { ...s.secrets };
  const uri = hook.secretUri;
  if (uri !== undefined) {
    const mine = { ...all[uri] };
    const rev = hook.secretRevision;
    if (hook.kind === "secret-rotate" && hook.secretDue !== undefined) mine.rotated = hook.secretDue;
    if (hook.kind === "secret-changed" && rev !== undefined) mine.changed = rev;
    if (hook.kind === "secret-expired" && rev !== undefined) mine.expired = [...(mine.expired ?? []), rev];
    if (hook.kind === "secret-remove" && rev !== undefined) mine.removed = [...(mine.removed ?? []), rev];
    all[uri] = mine;
  }
  const kept: Record<string, SecretLocalState> = {};
  for (const sv of view.secrets ?? []) {
    const mine = all[sv.uri];
    if (!mine) continue;
    const next: SecretLocalState = { ...mine };
    if (mine.expired) next.expired = mine.expired.filter((r) => sv.expired?.includes(r));
    if (mine.removed) next.removed = mine.removed.filter((r) => sv.obsolete?.includes(r));
    kept[sv.uri] = next;
  }
  return Object.keys(kept).length > 0 ? kept : undefined;
}

/** The next relation hook for a started unit: per relation, pending changed → departed → broken → app changed → joined → changed. */
function relationHook(view: UnitView, s: UnitLocalState): Decision | undefined {
  const byId = new Map<number, RelationView>(view.relations.map((r) => [r.id, r]));
  for (const [id, r] of orderedLocal(s)) {
    const vr = byId.get(id);
    const ended = !vr || vr.life === "dying";
    const pending = sortedUnits(Object.keys(r.joined)).find(
      (u) => r.joined[u] === -1 && !ended && u in vr!.remoteUnits,
    );
    if (pending)
      return {
        kind: "run",
        hook: relHook("relation-changed", id, r, { remoteUnit: pending, version: vr!.remoteUnits[pending] }),
      };
    const departed = sortedUnits(Object.keys(r.joined)).find((u) => ended || !(u in vr!.remoteUnits));
    if (departed)
      return {
        kind: "run",
        hook: relHook("relation-departed", id, r, { remoteUnit: departed, departingUnit: departed }),
      };
    if (ended) {
      if (!r.peer && !r.broken) return { kind: "run", hook: relHook("relation-broken", id, r) };
      return { kind: "leave", relationId: id };
    }
    if (vr!.remoteAppVersion !== r.appVersion && vr!.remoteAppVersion > 0)
      return { kind: "run", hook: relHook("relation-changed", id, r, { version: vr!.remoteAppVersion }) };
    const joining = sortedUnits(Object.keys(vr!.remoteUnits)).find((u) => !(u in r.joined));
    if (joining) return { kind: "run", hook: relHook("relation-joined", id, r, { remoteUnit: joining }) };
    const changed = sortedUnits(Object.keys(r.joined)).find((u) => r.joined[u] !== vr!.remoteUnits[u]);
    if (changed)
      return {
        kind: "run",
        hook: relHook("relation-changed", id, r, { remoteUnit: changed, version: vr!.remoteUnits[changed] }),
      };
  }
  return undefined;
}

/** How the unit's local state changes when `hook` commits (Juju's commit chaining). */
export function commitHook(
  s: UnitLocalState,
  hook: HookSpec,
  view: UnitView,
  machine: { address?: string; bootId?: string } = {},
): UnitLocalState {
  const next: UnitLocalState = { ...s, relations: { ...s.relations }, committed: [...s.committed, hook.name] };
  delete next.failedHook;
  const id = hook.relationId !== undefined ? String(hook.relationId) : undefined;
  const rel =
    id !== undefined && next.relations[id]
      ? (next.relations[id] = { ...next.relations[id]!, joined: { ...next.relations[id]!.joined } })
      : undefined;
  switch (hook.kind) {
    case "install":
      next.installed = true;
      next.operatorHash = view.operator.hash;
      break;
    case "upgrade":
      next.operatorHash = view.operator.hash;
      next.configHash = "";
      break; // upgrade is always followed by config-changed
    case "config-changed":
      next.configHash = configHash(view.config);
      if (machine.address !== undefined) next.address = machine.address;
      break;
    case "start":
      next.started = true;
      next.bootId = machine.bootId;
      break;
    case "stop":
      next.stopped = true;
      break;
    case "remove":
      next.removed = true;
      break;
    case "update-status":
      break;
    case "workload-ready":
      next.workloadReady = { ...s.workloadReady, [hook.container!]: hook.supervisor ?? "" };
      break;
    case "storage-attached":
      next.storage = [...new Set([...(s.storage ?? []), hook.storageId!])].sort();
      break;
    case "storage-detaching":
      next.storage = (s.storage ?? []).filter((id) => id !== hook.storageId);
      break;
    case "leader-elected":
      next.leader = true;
      next.leaderSettingsVersion = view.leaderSettingsVersion;
      break;
    case "leader-settings-changed":
      next.leaderSettingsVersion = view.leaderSettingsVersion;
      break;
    case "relation-created": {
      const vr = view.relations.find((r) => r.id === hook.relationId);
      next.relations[id!] = {
        endpoint: vr?.endpoint ?? hook.name.replace(/-relation-created$/, ""),
        remoteApp: vr?.remoteApp ?? hook.remoteApp ?? "",
        peer: vr?.role === "peer",
        joined: {},
        appVersion: 0,
        broken: false,
      };
      break;
    }
    case "relation-joined":
      if (rel) rel.joined[hook.remoteUnit!] = -1;
      break;
    case "relation-changed":
      if (rel && hook.remoteUnit) rel.joined[hook.remoteUnit] = hook.version ?? 0;
      else if (rel) rel.appVersion = hook.version ?? 0;
      break;
    case "relation-departed":
      if (rel) delete rel.joined[hook.remoteUnit!];
      break;
    case "relation-broken":
      if (rel) rel.broken = true;
      break;
    case "secret-changed":
    case "secret-rotate":
    case "secret-expired":
    case "secret-remove":
      break; // below, with every hook: the record of secrets the view no longer has is dropped
  }
  if (s.secrets !== undefined || hook.secretUri !== undefined) {
    const secrets = secretsAfter(s, hook, view);
    if (secrets) next.secrets = secrets;
    else delete next.secrets;
  }
  // A unit started before boots were recorded belongs to the boot it is first seen in.
  if (next.started && next.bootId === undefined) next.bootId = machine.bootId;
  return next;
}

/** The local effect of a no-hook decision. */
export function applyDecision(
  s: UnitLocalState,
  d: { kind: "leave"; relationId: number } | { kind: "resign" },
): UnitLocalState {
  if (d.kind === "resign") return { ...s, leader: false };
  const relations = { ...s.relations };
  delete relations[String(d.relationId)];
  return { ...s, relations };
}
