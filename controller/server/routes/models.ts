/**
 * Models: listing what a user may see, making one (superusers), changing its settings and
 * constraints, destroying it (admins), its status, and the integrations between its applications.
 */
import type { CredentialSubstrate } from "../../../api";
import { formatConstraints, hasConstraints, routes, settingsWithDefaults } from "../../../api";
import { renderModelStatusBytes } from "../../state";
import { substrateKind } from "../../../substrates";
import { flag } from "../../access/route";
import type { Route } from "../../access/route";
import { statusFilter, statusForm } from "../status-filter";
import { modelSummaries } from "../summaries";
import type { HttpApiDeps } from "./deps";

export function registerModelRoutes(route: Route, deps: HttpApiDeps): void {
  const { cache, ops } = deps;

  route(routes.listModels, async ({ principal }) => modelSummaries(cache, principal));

  /**
   * `skipCheck=true`: make the model without asking its substrate first (the kind's checkPlacement: a
   * kubernetes cluster reached, with the rights Steward needs; substrates/kubernetes/cluster-checks.ts).
   */
  route(routes.createModel, async ({ principal, body, query, settled }) => {
    const check = substrateKind(body.substrate).checkPlacement;
    if (check && body.credential && !flag(query, "skipCheck")) {
      const attributes = await deps.credentials.open(body.credential, body.substrate as CredentialSubstrate);
      await check(body.credential, attributes, settingsWithDefaults(body.substrate, body, body.settings));
    }
    const { substrate, credential, settings } = body;
    const doc = await ops.models.create(
      principal.user,
      body.name,
      body.config ?? {},
      { substrate, credential, settings },
      body.constraints,
    );
    await settled(doc.revision);
    const placed = doc.placement;
    return {
      name: doc.name,
      uuid: doc.uuid,
      substrate: placed.substrate,
      ...(placed.credential ? { credential: placed.credential } : {}),
      ...(hasConstraints(doc.constraints) ? { constraints: formatConstraints(doc.constraints) } : {}),
    };
  });

  route(routes.destroyModel, async ({ model: idx, query, settled }) => {
    await settled((await ops.models.destroy(idx.uuid, flag(query, "force"))).revision);
  });

  route(routes.updateModel, async ({ model: idx, body, settled }) => {
    const now = (await settled((await ops.models.updateConfig(idx.uuid, body.config, body.constraints)).revision))
      .model;
    return {
      name: idx.model!.name,
      config: now?.config ?? {},
      ...(hasConstraints(now?.constraints) ? { constraints: formatConstraints(now.constraints) } : {}),
    };
  });

  route(routes.status, async ({ req, reply, model: idx }) => {
    // Sent as the renderer's text: a 10,000-unit model is megabytes, mostly unchanged since the last read.
    return reply
      .type("application/json; charset=utf-8")
      .send(renderModelStatusBytes(cache, idx, statusFilter(req.query), new Date(), statusForm(req.query)));
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
