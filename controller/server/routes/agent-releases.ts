/**
 * Agent releases (`steward upgrade-model`): those the controller holds, one release's files for an
 * agent that moves to it, and a model's machines asked to move to one.
 */
import { STEWARD_VERSION, StewardError, contractOf, invalidRequest, routes, versionProblem } from "../../../api";
import type { Route } from "../../access/route";
import { releaseKeyProblem } from "../../releases/release-keys";
import type { ModelIndex } from "../../state";
import type { HttpApiDeps } from "./deps";

/** How long a new agent has to come up and report before it goes back, unless the request says. */
const DEFAULT_TRIAL_SECONDS = 120;
/** Past its trial, how long a machine asked to move counts as still moving (downloading, waiting for a long hook). */
const MOVE_GRACE_MS = 15 * 60_000;

export function registerAgentReleaseRoutes(route: Route, deps: HttpApiDeps): void {
  const { ops, agentReleases } = deps;

  route(routes.listAgentReleases, async () => {
    const { releases, refused, problem } = await agentReleases.list();
    return { releases, ...(refused.length ? { refused } : {}), ...(problem ? { problem } : {}) };
  });

  route(routes.getReleaseKeys, () => agentReleases.keys());

  route(routes.changeReleaseKeys, async ({ body, principal }) => {
    for (const key of [...(body.trust ?? []), ...(body.distrust ?? [])]) {
      const problem = releaseKeyProblem(key);
      if (problem) throw invalidRequest(problem, { field: body.trust?.includes(key) ? "trust" : "distrust" });
    }
    return agentReleases.changeKeys(body, principal.user);
  });

  route(routes.getAgentRelease, async ({ params: { version } }) => (await agentReleases.get(version)).bundle);

  route(routes.upgradeAgents, async ({ model: idx, body, settled }) => {
    // Agents may run their controller's minor version or one older, never a newer one.
    const problem = versionProblem("agent", body.to, STEWARD_VERSION);
    if (problem) throw invalidRequest(`agent release ${body.to}: ${problem}`, { field: "to" });
    const release = (await agentReleases.get(body.to)).info;
    for (const id of body.machines) {
      const m = idx.machines.get(id);
      if (!m) continue; // the state op answers not-found
      const c = contractOf(m.substrate);
      if (c.provisions === "pods")
        throw invalidRequest(
          `machine ${id} is a ${m.substrate} pod: its agent is the StatefulSet's image, which upgrade-model does not roll yet`,
          { field: "machines" },
        );
      if (c.agentsStartedByHand)
        throw new StewardError(
          "invalid-request",
          `machine ${id}'s agent was started by hand (${m.substrate}): nothing would start it again on the new release; install ${body.to} there yourself`,
          { details: { field: "machines" } },
        );
    }
    refuseAnotherMove(idx, body.to);
    const res = await ops.machines.setAgentRelease(idx.uuid, body.machines, {
      version: release.version,
      hash: release.hash,
      trialSeconds: body.trialSeconds ?? DEFAULT_TRIAL_SECONDS,
    });
    await settled(res.revision);
    return { to: release.version, hash: release.hash, machines: res.machines };
  });
}

/**
 * Refuses to move machines to `to` while another machine of the model is still moving to another
 * release: two upgrade-model runs at once would otherwise leave the model split between releases
 * neither asked for. A machine counts as moving from its request until it reports the release,
 * goes back from it, or its trial and a grace period have passed (an agent that is down for good
 * must not block every later upgrade).
 */
function refuseAnotherMove(idx: ModelIndex, to: string): void {
  for (const m of idx.machines.values()) {
    const want = m.agentRelease;
    if (!want || want.version === to || m.life !== "alive") continue;
    const info = idx.machineInfo.get(m.id);
    const failure = info?.agentUpgradeFailure;
    if (info?.agentVersion === want.version || (failure?.version === want.version && failure.attempt === want.attempt))
      continue;
    if (want.requestedAt && Date.now() - Date.parse(want.requestedAt) > want.trialSeconds * 1000 + MOVE_GRACE_MS)
      continue;
    throw new StewardError(
      "conflict",
      `machine ${m.id} is still moving to agent release ${want.version} (attempt ${want.attempt}): another steward upgrade-model may be running. Let it end, or run steward upgrade-model --to ${want.version} to finish that one, before moving agents to ${to}`,
      { reason: "agent-upgrade-in-progress", details: { machine: m.id, version: want.version } },
    );
  }
}
