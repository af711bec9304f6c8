/**
 * Secrets (issue 33): every secret of a model listed and shown as metadata (owner, revisions, grants,
 * who tracks which revision), a value revealed only to the user who made the secret or a superuser,
 * and users' own secrets added, updated, granted to applications, revoked and removed. `:secret` is a
 * user secret's name or any secret's uri.
 */
import type { RevealedSecret, SecretInfo } from "../../../api";
import { StewardError, invalidRequest, notFound, routes } from "../../../api";
import type { ModelIndex, SecretDoc } from "../../state";
import { secretByRef, secretInfoOf } from "../../state";
import type { Route } from "../../access/route";
import { flag } from "../../access/route";
import type { HttpApiDeps } from "./deps";

export function registerSecretRoutes(route: Route, deps: HttpApiDeps): void {
  const { secrets } = deps;
  const named = (idx: ModelIndex, ref: string): SecretDoc => {
    const doc = secretByRef(idx.secrets.values(), ref);
    if (!doc) throw notFound("secret", ref);
    return doc;
  };

  route(routes.listSecrets, async ({ model: idx }) => ({
    secrets: [...idx.secrets.values()]
      .map(secretInfoOf)
      .sort((a, b) => (a.name ?? a.uri).localeCompare(b.name ?? b.uri) || a.uri.localeCompare(b.uri)),
  }));

  route(routes.showSecret, async ({ model: idx, principal, params, query }): Promise<SecretInfo | RevealedSecret> => {
    const doc = named(idx, params.secret);
    const info = secretInfoOf(doc);
    const revisionAsked = revisionOf(query.revision);
    if (!flag(query, "reveal")) {
      if (revisionAsked !== undefined) throw invalidRequest(`query "revision" goes with reveal=true`);
      return info;
    }
    const mayReveal = principal.superuser || (doc.owner.kind === "model" && doc.createdBy === principal.user);
    if (!mayReveal)
      throw new StewardError(
        "forbidden",
        `only the user who made ${info.name ?? info.uri} or a controller superuser may reveal its values`,
        { reason: "secret-not-readable" },
      );
    const revision = revisionAsked ?? doc.latest;
    if (!doc.revisions.some((r) => r.revision === revision))
      throw notFound("secret revision", `${info.uri} revision ${revision}`);
    return { ...info, content: { revision, values: await secrets.values(idx.uuid, doc.id, revision) } };
  });

  route(routes.addSecret, async ({ reply, model: idx, principal, body, settled }) => {
    const res = await secrets.addUserSecret(idx.uuid, principal.user, body);
    await settled(res.revision);
    reply.code(res.created ? 201 : 200);
    return { uri: res.uri, revision: res.secretRevision };
  });

  route(routes.updateSecret, async ({ model: idx, params, body, settled }) => {
    const res = await secrets.updateUserSecret(idx.uuid, params.secret, body);
    await settled(res.revision);
    return { uri: res.uri, revision: res.secretRevision };
  });

  route(routes.removeSecret, async ({ model: idx, params, query, settled }) => {
    await settled((await secrets.removeUserSecret(idx.uuid, params.secret, revisionOf(query.revision))).revision);
  });

  route(routes.grantSecret, async ({ model: idx, params, body, settled }) => {
    const res = await secrets.grantApps(idx.uuid, params.secret, body.apps, true);
    await settled(res.revision);
    return secretInfoOf(res.doc);
  });

  route(routes.revokeSecret, async ({ model: idx, params, body, settled }) => {
    const res = await secrets.grantApps(idx.uuid, params.secret, body.apps, false);
    await settled(res.revision);
    return secretInfoOf(res.doc);
  });
}

/** A `revision` query parameter: a revision number, or absent. */
function revisionOf(v: string | string[] | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== "string" || !/^[1-9][0-9]{0,8}$/.test(v))
    throw new StewardError("invalid-request", `query "revision" must be a revision number such as 2`, {
      details: { field: "revision" },
    });
  return Number(v);
}
