/**
 * The controller and its cluster: what every user sees of it, and a superuser's levers (enable-ha,
 * spare hosts, the replica cloud, the upgrade record), and the stored credentials clouds are
 * reached with: only superusers see that they exist, and no answer ever holds a secret attribute.
 */
import { routes } from "../../../api";
import { substrateKind } from "../../../substrates";
import { flag } from "../../access/route";
import type { Route } from "../../access/route";
import { controllerOverview, describeController } from "../summaries";
import type { HttpApiDeps } from "./deps";

export function registerControllerRoutes(route: Route, deps: HttpApiDeps): void {
  const { cache } = deps;

  route(routes.controllerOverview, async ({ principal }) => {
    // The cluster's layout (hosts, spares, the replica cloud) is a superuser's business.
    if (!principal.superuser) return controllerOverview(cache, deps.controllerAddresses(), deps.caFingerprint);
    return describeController(cache, deps.cluster, deps.controllerAddresses(), deps.caFingerprint);
  });

  route(routes.enableHa, async ({ body }) => deps.cluster.enableHa(body));

  route(routes.recordUpgrade, async ({ body }) => {
    await deps.cluster.recordUpgrade(body);
    return body;
  });

  route(routes.addSpares, async ({ body }) => {
    const spares = await deps.cluster.addSpares(body.hosts);
    return { spares: spares.map((s) => ({ host: s.host, hostKey: s.hostKey })) };
  });

  route(routes.setReplicaCloud, async ({ body }) => {
    // Refuses a missing credential, or one for another cloud, now rather than when a replica is lost.
    if (body.credential) await deps.credentials.open(body.credential, body.substrate);
    await deps.cluster.setReplicaCloud(body);
    return body;
  });

  route(routes.clearReplicaCloud, async () => {
    await deps.cluster.setReplicaCloud(undefined);
  });

  route(routes.listCredentials, async () => ({ credentials: await deps.credentials.list() }));

  /** `skipCheck=true`: store a credential without asking its substrate first (the kind's checkCredential: a kubernetes cluster's, substrates/kubernetes/cluster-checks.ts). */
  route(routes.putCredential, async ({ reply, principal, params: { name }, body, query }) => {
    const replace = query.replace === "true";
    if (!flag(query, "skipCheck")) await substrateKind(body.substrate).checkCredential?.(name, body.attributes);
    const res = await deps.credentials.put(principal.user, name, body, replace);
    reply.code(res.created ? 201 : 200);
    return { name, substrate: body.substrate, created: res.created, changed: res.changed };
  });

  route(routes.removeCredential, async ({ params: { name } }) => {
    await deps.credentials.remove(name);
  });
}
