/**
 * Waiting on the controller from a client: for a model's units to settle, for a cluster to reach
 * its voters, for a new controller to answer. Shared by the CLI and the Pulumi provider, so both
 * report a timeout the same way (a table of what is not ready, and why).
 */
import type { ControllerClient } from "./client";
import type { ClusterInfo } from "./client";
import { StewardError } from "../errors";
import { configHash } from "../operator";
import type { AppliedChange, ModelStatus, UnitStatusView } from "../status";
import { hasApplied, unitIsReady } from "../status";
import { table } from "../table";
import type { ApplicationInfo } from "../wire";

export interface WaitOptions {
  /** Applications to wait for (default: all in the model). */
  apps?: string[];
  timeoutMs: number;
  progress?: (line: string) => void;
  signal?: AbortSignal;
  /** When a unit counts as ready. @default active/idle ({@link unitIsReady}) */
  ready?: (u: Pick<UnitStatusView, "workload" | "agent">) => boolean;
  /** Milliseconds between polls. @default 300 */
  intervalMs?: number;
  /**
   * Applications just changed, each with the change it wants now ({@link changeOf} the update's
   * answer): the wait holds until the status shows that change (not an earlier state read from a
   * replica that has not caught up) and every unit of it has applied it.
   */
  changed?: Record<string, AppliedChange>;
}

/** What an application wants its units to apply, from the answer to a deploy or update. */
export function changeOf(info: Pick<ApplicationInfo, "operator" | "config">): AppliedChange {
  return { operator: info.operator.hash, config: configHash(info.config) };
}

/**
 * Resolves when every unit of the chosen applications is active/idle, has applied what its
 * application wants (an upgrade or config change is waited for, not only the idle before it reached
 * the unit), and no unit is being removed.
 */
export async function waitForModelReady(client: ControllerClient, model: string, o: WaitOptions): Promise<ModelStatus> {
  const deadline = Date.now() + o.timeoutMs;
  const seen = new Map<string, string>();
  let last: ModelStatus | undefined;
  while (Date.now() < deadline && !o.signal?.aborted) {
    last = await client.status(model);
    const units = unitsOf(last, o.apps);
    const applied = appliedIn(last);
    for (const u of units) {
      const line = `${u.workload.current}/${u.agent.current}${u.workload.message ? ` ${u.workload.message}` : ""}${applied(u) ? "" : " (change not applied yet)"}`;
      if (seen.get(u.name) !== line) {
        seen.set(u.name, line);
        o.progress?.(`  ${u.name.padEnd(14)} ${line}`);
      }
    }
    const appsSettled = (o.apps ?? Object.keys(last.applications)).every(
      (a) => last!.applications[a]?.life !== "dying",
    );
    // An older controller shows no wanted change: then active/idle has to do.
    const changesShown = Object.entries(o.changed ?? {}).every(([a, c]) => {
      const w = last!.applications[a]?.wanted;
      return !w || (w.operator === c.operator && w.config === c.config);
    });
    if (
      appsSettled &&
      changesShown &&
      units.every((u) => (o.ready ?? unitIsReady)(u) && applied(u) && u.life === "alive")
    )
      return last;
    const failed = units.filter((u) => u.agent.current === "error");
    if (failed.length > 0 && !(await retriesHooks(client, model))) {
      // Nothing will retry the hook: waiting longer cannot help, so say so now.
      const first = failed[0]!.name;
      throw notReadyError(
        last,
        o.apps,
        `${failed.map((u) => u.name).join(", ")} failed a hook and model "${model}" does not retry hooks (automatically-retry-hooks=false): fix the cause, then run steward resolve ${first}`,
        o.ready,
        { code: "unavailable", reason: "units-failed" },
        await hookOutputs(client, model, failed),
      );
    }
    await new Promise((r) => setTimeout(r, o.intervalMs ?? 300));
  }
  throw notReadyError(
    last,
    o.apps,
    `timed out after ${Math.round(o.timeoutMs / 1000)} s waiting for units to be ${o.ready ? "ready" : "active/idle"}`,
    o.ready,
    { code: "deadline-exceeded" },
    last ? await hookOutputs(client, model, unitsOf(last, o.apps)) : "",
  );
}

/** At most this many failed units have their hook's output fetched for an error message. */
const FAILED_UNITS_SHOWN = 3;

/**
 * What the failed hooks of `units` printed last (`steward show-unit`'s failure), so the error says
 * why and not only which hook: the first {@link FAILED_UNITS_SHOWN} units in error. A unit that
 * cannot be read (gone, or the controller busy) is left out: the table already names it.
 */
export async function hookOutputs(client: ControllerClient, model: string, units: UnitStatusView[]): Promise<string> {
  const failed = units.filter((u) => u.agent.current === "error").slice(0, FAILED_UNITS_SHOWN);
  const shown = await Promise.all(
    failed.map(async (u) => {
      const failure = (await client.showUnit(model, u.name).catch(() => undefined))?.failure;
      if (!failure) return "";
      const output = failure.output ? failure.output.replace(/^/gm, "  ") : "  (it printed nothing)";
      return `${u.name}'s "${failure.hook}" hook printed:\n${output}`;
    }),
  );
  return shown.filter(Boolean).join("\n");
}

/** Whether the model's agents retry failed hooks by themselves (its `automatically-retry-hooks`). */
async function retriesHooks(client: ControllerClient, model: string): Promise<boolean> {
  const summary = (await client.listModels()).find((m) => m.name === model);
  return summary?.config.automaticallyRetryHooks ?? true;
}

/** Whether a unit of `status` has applied what its application wants. */
function appliedIn(status: ModelStatus): (u: UnitStatusView) => boolean {
  const wanted = new Map(
    Object.values(status.applications).flatMap((a) => Object.keys(a.units).map((n) => [n, a.wanted] as const)),
  );
  return (u) => hasApplied(u.applied, wanted.get(u.name));
}

/** The units of `apps` that are not active/idle in `status` (or have not applied a change), as a table with their messages. */
export function notReadyError(
  status: ModelStatus | undefined,
  apps: string[] | undefined,
  why: string,
  ready = unitIsReady,
  cause: { code: "deadline-exceeded" } | { code: "unavailable"; reason?: "units-failed" } = { code: "unavailable" },
  hookOutput = "",
): StewardError {
  const applied = status ? appliedIn(status) : () => true;
  const notReady = status ? unitsOf(status, apps).filter((u) => !ready(u) || !applied(u)) : [];
  const rows = notReady.map((u) => [
    u.name,
    u.workload.current,
    u.agent.current,
    applied(u)
      ? u.workload.message || u.agent.message
      : `has not applied the change yet (${u.workload.message || u.agent.message})`,
  ]);
  const message = `${why}; not ready:\n${table(["Unit", "Workload", "Agent", "Message"], rows)}${hookOutput ? `\n${hookOutput}` : ""}`;
  const details = { notReady: notReady.map((u) => u.name) };
  return cause.code === "deadline-exceeded"
    ? new StewardError("deadline-exceeded", message, { details })
    : new StewardError("unavailable", message, { details, ...(cause.reason ? { reason: cause.reason } : {}) });
}

export function unitsOf(s: ModelStatus, apps?: string[]): UnitStatusView[] {
  return Object.values(s.applications)
    .filter((a) => !apps || apps.includes(a.name))
    .flatMap((a) => Object.values(a.units));
}

/** Resolves with the cluster once `voters` healthy voters exist; reports each new keeper message. */
export async function waitForVoters(
  client: ControllerClient,
  voters: number,
  timeoutMs: number,
  progress?: (line: string) => void,
): Promise<ClusterInfo> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  let cluster: ClusterInfo | undefined;
  while (Date.now() < deadline) {
    // The controller restarts while it moves into etcd: keep asking.
    cluster = (await client.controllerInfo().catch(() => undefined))?.cluster ?? cluster;
    if (cluster) {
      const line = cluster.keeper.message;
      if (line && line !== last) {
        last = line;
        progress?.(`  ${line}`);
      }
      const healthy = cluster.members.filter((m) => m.hasVote && m.present).length;
      if (cluster.store === "etcd" && healthy >= voters && !cluster.members.some((m) => m.learner)) return cluster;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new StewardError(
    "deadline-exceeded",
    `the controller did not reach ${voters} healthy voters within ${Math.round(timeoutMs / 1000)} s; last: ${last || "no answer"}. See steward show-controller`,
  );
}

/** Resolves once the controller answers its health check; `hint` ends the timeout message. */
export async function waitForHealth(client: ControllerClient, timeoutMs: number, hint: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (
      await client.call("GET", "/v1/health").then(
        () => true,
        () => false,
      )
    )
      return;
    if (Date.now() > deadline)
      throw new StewardError(
        "deadline-exceeded",
        `the controller did not answer within ${Math.round(timeoutMs / 1000)} s: ${hint}`,
      );
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Destroys every model cleanly (stop and remove hooks run), forcing those not gone within `timeoutMs`. */
export async function destroyAllModels(
  client: ControllerClient,
  timeoutMs: number,
  progress?: (line: string) => void,
): Promise<void> {
  for (const m of await client.listModels().catch(() => [])) {
    progress?.(`Destroying model ${m.name}`);
    await client.destroyModel(m.name).catch(() => undefined);
  }
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && (await client.listModels().catch(() => [])).length > 0)
    await new Promise((r) => setTimeout(r, 300));
  for (const m of await client.listModels().catch(() => [])) {
    progress?.(`Model ${m.name} did not finish in time; forcing`);
    await client.destroyModel(m.name, true).catch(() => undefined);
  }
}
