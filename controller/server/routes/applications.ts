/**
 * Operators and applications: uploading an operator (any user who may write to some model) and
 * downloading one (users, and agents for what their own model runs), deploying, showing, changing
 * and removing an application, and adding units to it.
 */
import type { ApplicationInfo } from "../../../api";
import {
  DEFAULT_SUBSTRATE,
  LEGACY_HASH_MESSAGE,
  StewardError,
  contractOf,
  formatConstraints,
  hasConstraints,
  notFound,
  operatorHashProblem,
  routes,
} from "../../../api";
import type { ModelIndex, OperatorCharge } from "../../state";
import { effectiveConfig } from "../../state";
import type { Principal } from "../../access/auth";
import { requireUser } from "../../access/auth";
import { checkMachinesPerRequest, checkNewLocalMachines } from "../../access/controller-host";
import { flag } from "../../access/route";
import type { Route } from "../../access/route";
import type { HttpApiDeps } from "./deps";

export function registerApplicationRoutes(route: Route, deps: HttpApiDeps): void {
  const { cache, ops } = deps;
  /** The user an upload, deploy or refresh counts against, with the operator quotas that bind them. */
  const chargeOf = (p: Principal): OperatorCharge => {
    const u = requireUser(p);
    return { by: { user: u.user, superuser: u.superuser }, quotas: deps.operatorQuotas };
  };
  /** Checks the machines a deploy or add-unit would make for `units` units placed on `to`. */
  const checkMachinesForUnits = (
    p: Principal,
    idx: ModelIndex,
    units: number,
    to: string[] | undefined,
    field: string,
  ): void => {
    const substrate = idx.model?.placement.substrate ?? DEFAULT_SUBSTRATE;
    const made = contractOf(substrate).provisions === "pods" ? 0 : Math.max(0, units - (to?.length ?? 0));
    checkMachinesPerRequest(substrate, made, field);
    if (contractOf(substrate).onControllerHost)
      checkNewLocalMachines({ superuser: requireUser(p).superuser, cache, policy: deps.localMachines, count: made });
  };
  /** Whether some application of model `uuid` runs operator `hash`. */
  const modelRuns = (uuid: string, hash: string): boolean => {
    for (const a of cache.models.get(uuid)?.apps.values() ?? []) if (a.operator.hash === hash) return true;
    return false;
  };
  const appInfo = (idx: ModelIndex, name: string): ApplicationInfo => {
    const a = idx.apps.get(name);
    if (!a) throw notFound("application", name);
    const meta = cache.operators.get(a.operator.hash)?.meta;
    return {
      name: a.name,
      operator: a.operator,
      life: a.life,
      config: effectiveConfig(meta, a.config),
      configSchema: meta?.config ?? {},
      actions: meta?.actions ?? {},
      units: [...idx.units.values()]
        .filter((u) => u.app === name)
        .map((u) => u.name)
        .sort(),
      ...(hasConstraints(a.constraints) ? { constraints: formatConstraints(a.constraints) } : {}),
      ...(a.storage ? { storage: a.storage } : {}),
      ...(a.leadershipLeaseSeconds !== undefined ? { leadershipLeaseSeconds: a.leadershipLeaseSeconds } : {}),
    };
  };

  let uploads: Promise<unknown> = Promise.resolve();
  route(
    routes.uploadOperator,
    async ({ reply, principal, body: bundle }) => {
      // One upload at a time per replica, so two cannot both pass the quota check.
      const stored = uploads
        .catch(() => undefined)
        .then(() => ops.operators.upload(bundle, deps.operatorQuotas, chargeOf(principal).by));
      uploads = stored;
      const { doc, created } = await stored;
      reply.code(created ? 201 : 200);
      return { hash: doc.hash, name: doc.name, version: doc.version, created };
    },
    { bodyLimit: 32 * 1024 * 1024 },
  );

  route(routes.getOperator, async ({ req, reply, principal: p, params: { hash } }) => {
    const problem = operatorHashProblem(hash);
    if (problem === LEGACY_HASH_MESSAGE)
      throw new StewardError("invalid-request", problem, { details: { field: "hash" } });
    // An agent gets only what its own model runs, answered as unknown otherwise.
    if (problem || !cache.operators.has(hash) || (p.kind === "agent" && !modelRuns(p.model, hash)))
      throw notFound("operator", hash);
    if (req.method === "HEAD") return reply.code(200).send();
    return ops.operators.bundle(hash);
  });

  route(routes.deploy, async ({ principal, model: idx, body, settled }) => {
    checkMachinesForUnits(principal, idx, body.units, body.to, "units");
    // ops.deploy refuses an existing name itself: here it would also refuse the retry of a deploy that worked.
    const res = await ops.applications.deploy(idx.uuid, body, chargeOf(principal));
    await settled(res.revision);
    return appInfo(idx, body.name);
  });

  route(routes.getApplication, async ({ model: idx, params: { app } }) => appInfo(idx, app));

  route(routes.updateApplication, async ({ principal, model: idx, params: { app }, body, settled }) => {
    await settled((await ops.applications.update(idx.uuid, app, body, chargeOf(principal))).revision);
    return appInfo(idx, app);
  });

  route(routes.removeApplication, async ({ model: idx, params: { app }, query, settled }) => {
    await settled((await ops.applications.remove(idx.uuid, app, flag(query, "force"))).revision);
  });

  route(routes.addUnits, async ({ principal, model: idx, params: { app }, body, settled }) => {
    checkMachinesForUnits(principal, idx, body.count, body.to, "count");
    const res = await ops.applications.addUnits(idx.uuid, app, body.count, body.to, body.attachStorage);
    await settled(res.revision);
    return { units: res.units };
  });
}
