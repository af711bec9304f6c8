/**
 * What runs code on the controller's own host: local machines. Their agents and hooks sit beside the
 * controller's CA key and store, so write access to a model that has (or makes) them is a superuser's
 * alone, only superusers make them, a controller not bootstrapped locally makes none unless its
 * controller.json turns them on, and their number on the host is capped.
 */
import { MAX_MACHINES_PER_REQUEST, StewardError, contractOf, substratesWhere } from "../../api";
import type { ModelIndex, StateCache, Substrate } from "../state";

/** How this controller treats local machines (from controller.json, see LocalMachinesConfig). */
export interface LocalMachinePolicy {
  /** Bootstrapped locally, or turned on with `localMachines.enabled`. */
  enabled: boolean;
  /** Most local machines on this host at once (`localMachines.maxPerHost`). */
  maxPerHost: number;
}

/** Why a user without superuser may not write to such a model: said at grant time and on each write. */
export const LOCAL_WRITE_RULE = "write on a local model needs superuser: local machines run on the controller's host";

/** A model whose machines are, or would be made as, agent processes on the controller's host. */
export function runsOnControllerHost(idx: ModelIndex): boolean {
  if (contractOf(idx.model?.placement.substrate).onControllerHost) return true;
  for (const m of idx.machines.values()) if (contractOf(m.substrate).onControllerHost) return true;
  return false;
}

export function localWriteRefused(user: string, idx: ModelIndex, needed: string): StewardError {
  return new StewardError(
    "forbidden",
    `${LOCAL_WRITE_RULE}; user ${user} is not a superuser, so has at most read access to model ${idx.model?.name} (use a model on another substrate, or ask a superuser)`,
    { reason: "local-model-write-needs-superuser", details: { rule: "local-model-write-needs-superuser", needed } },
  );
}

/** Machine-making substrates count against the per-request cap; manual machines only issue credentials. */
const STARTS_SOMETHING: readonly Substrate[] = substratesWhere((k) => k.provisions === "machines");

/** Refuses a request that would make more than {@link MAX_MACHINES_PER_REQUEST} machines at once. */
export function checkMachinesPerRequest(substrate: Substrate, count: number, field: string): void {
  if (!STARTS_SOMETHING.includes(substrate) || count <= MAX_MACHINES_PER_REQUEST) return;
  throw new StewardError(
    "invalid-request",
    `${count} new ${substrate} machines in one request is over the limit of ${MAX_MACHINES_PER_REQUEST} per request: make them in several requests`,
    { details: { field, limit: MAX_MACHINES_PER_REQUEST, requested: count } },
  );
}

/**
 * Refuses `count` new local machines unless the caller is a superuser, this controller makes local
 * machines, and the host stays within its cap.
 */
export function checkNewLocalMachines(o: {
  superuser: boolean;
  cache: StateCache;
  policy: LocalMachinePolicy;
  count: number;
}): void {
  if (o.count <= 0) return;
  if (!o.superuser) {
    throw new StewardError(
      "forbidden",
      "only a controller superuser may create local machines: they run on the controller's host, beside its keys",
      { reason: "local-machines-need-superuser", details: { rule: "local-machines-need-superuser" } },
    );
  }
  if (!o.policy.enabled) {
    throw new StewardError(
      "forbidden",
      `this controller was not bootstrapped locally, so it makes no local machines (they would run on its host, beside its keys): add ssh or cloud machines, or turn local machines on with "localMachines": {"enabled": true} in its controller.json and restart it`,
      { reason: "local-machines-disabled", details: { rule: "local-machines-disabled" } },
    );
  }
  let running = 0;
  for (const idx of o.cache.models.values())
    for (const m of idx.machines.values()) if (contractOf(m.substrate).onControllerHost) running++;
  if (running + o.count > o.policy.maxPerHost) {
    throw new StewardError(
      "quota-exceeded",
      `this controller's host has ${running} local machines and takes at most ${o.policy.maxPerHost}: remove some, or raise "localMachines": {"maxPerHost": N} in its controller.json and restart it`,
      {
        reason: "local-machines-per-host",
        details: { rule: "local-machines-per-host", limit: o.policy.maxPerHost, current: running, requested: o.count },
      },
    );
  }
}
