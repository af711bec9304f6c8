/**
 * What the credential's user may do on a cluster, asked of the API server itself: one
 * SelfSubjectAccessReview per right (POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews
 * with `spec.resourceAttributes`, what `kubectl auth can-i` sends), so the answer is the cluster's
 * own authorizer's (RBAC or any other), not our reading of its roles. Every authenticated user may
 * create these reviews (the default `system:basic-user` ClusterRole), so the first one also tells
 * whether the server is reached and the credential accepted.
 */
import type { CallOptions, KubeApi } from "./kube-api";
import { KUBE_RESOURCES } from "./resources";
import type { ResourceAttributes } from "./resources";

/** The rights of `rights` the server does not allow, in their order. */
export async function deniedRights(
  api: KubeApi,
  rights: readonly ResourceAttributes[],
  o: CallOptions = {},
): Promise<ResourceAttributes[]> {
  const answers = await Promise.all(
    rights.map(async (resourceAttributes) => {
      const review = await api.create(
        KUBE_RESOURCES.selfSubjectAccessReviews,
        {
          apiVersion: "authorization.k8s.io/v1",
          kind: "SelfSubjectAccessReview",
          metadata: {},
          spec: { resourceAttributes: { ...resourceAttributes, group: resourceAttributes.group ?? "" } },
        },
        o,
      );
      return review.status?.allowed === true;
    }),
  );
  return rights.filter((_, i) => !answers[i]);
}

/** A right as `kubectl auth can-i` takes it: `create statefulsets.apps/scale in namespace shop`, `create namespaces`. */
export function describeRight(r: ResourceAttributes): string {
  return `${r.verb} ${whatAndWhere(r)}`;
}

/** Rights on the same resources joined, in their order: `get/create/delete services in namespace shop, list pods in namespace shop`. */
export function describeRights(rights: readonly ResourceAttributes[]): string {
  const verbs = new Map<string, string[]>();
  for (const r of rights) {
    const key = whatAndWhere(r);
    verbs.set(key, [...(verbs.get(key) ?? []), r.verb]);
  }
  return [...verbs].map(([what, v]) => `${v.join("/")} ${what}`).join(", ");
}

function whatAndWhere(r: ResourceAttributes): string {
  const resource = `${r.resource}${r.group ? `.${r.group}` : ""}${r.subresource ? `/${r.subresource}` : ""}`;
  const name = r.name ? ` ${r.name}` : "";
  // A namespace is cluster-scoped (its own name is where it is).
  const where = r.resource === "namespaces" ? "" : r.namespace ? ` in namespace ${r.namespace}` : " in every namespace";
  return `${resource}${name}${where}`;
}
