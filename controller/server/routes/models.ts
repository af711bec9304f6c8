/**
 * Models: listing what a user may see, making one (superusers), changing its settings and
 * constraints, destroying it (admins), its status, and the integrations between its applications.
 */
import { formatConstraints, hasConstraints, routes } from "../../../api";
import { renderModelStatusBytes } from "../../state";
import { checkModelCluster } from "../../provisioner/kubernetes-access";
import { flag } from "../../access/route";
import type { Route } from "../../access/route";
import { statusFilter, statusForm } from "../status-filter";
import { modelSummaries } from "../summaries";
import type { HttpApiDeps } from "./deps";

export function registerModelRoutes(route: Route, deps: HttpApiDeps): void {
  const { cache, ops } = deps;

  route(routes.listModels, async ({ principal }) => modelSummaries(cache, principal));

  /** `skipCheck=true`: make a model on a kubernetes credential without asking the cluster first (kubernetes-access.ts). */
  route(routes.createModel, async ({ principal, body, query, settled }) => {
    if (body.substrate === "kubernetes" && body.credential && !flag(query, "skipCheck")) {
      await checkModelCluster(body.credential, await deps.credentials.open(body.credential, "kubernetes"), body.kubernetes?.namespace ?? body.name);
    }
    const doc = await ops.createModel(principal.user, body.name, body.config ?? {}, body.substrate, { credential: body.credential, aws: body.aws, vsphere: body.vsphere, kubernetes: body.kubernetes, constraints: body.constraints });
    await settled(doc.revision);
    return { name: doc.name, uuid: doc.uuid, substrate: doc.substrate, ...(doc.credential ? { credential: doc.credential } : {}), ...(hasConstraints(doc.constraints) ? { constraints: formatConstraints(doc.constraints) } : {}) };
  });

  route(routes.destroyModel, async ({ model: idx, query, settled }) => {
    await settled((await ops.destroyModel(idx.uuid, flag(query, "force"))).revision);
  });

  route(routes.updateModel, async ({ model: idx, body, settled }) => {
    await settled((await ops.updateModelConfig(idx.uuid, body.config, body.constraints)).revision);
    const now = cache.models.get(idx.uuid)?.model;
    return { name: idx.model!.name, config: now?.config ?? {}, ...(hasConstraints(now?.constraints) ? { constraints: formatConstraints(now.constraints) } : {}) };
  });

  route(routes.status, async ({ req, reply, model: idx }) => {
    // Sent as the renderer's text: a 10,000-unit model is megabytes, mostly unchanged since the last read.
    return reply.type("application/json; charset=utf-8").send(renderModelStatusBytes(cache, idx, statusFilter(req.query), new Date(), statusForm(req.query)));
  });

  route(routes.integrate, async ({ model: idx, body, settled }) => {
    const res = await deps.relations.integrate(idx.uuid, body.endpoints[0], body.endpoints[1]);
    await settled(res.revision);
    return { id: res.id, key: res.key };
  });

  route(routes.removeIntegration, async ({ model: idx, body, settled }) => {
    await settled((await deps.relations.removeIntegration(idx.uuid, body.endpoints[0], body.endpoints[1])).revision);
  });
}
