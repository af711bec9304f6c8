/**
 * The fake API server's authorizer, after the RBAC page (kubernetes.io/docs/reference/access-authn-authz/rbac)
 * and the authorization overview ("Determine the request verb"):
 * - a request's attributes: user and groups; for resource requests the verb (GET of one object
 *   `get`, of a collection `list`, or `watch` with `?watch=true`; POST `create`; PUT `update`; PATCH
 *   `patch`; DELETE of one object `delete`, of a collection `deletecollection`), the API group, the
 *   resource and subresource, the namespace and the name; a list or watch with a `metadata.name=`
 *   field selector carries that name, so `resourceNames` can allow watching one object;
 * - allowed when some rule of a role bound to the user allows it: ClusterRoleBindings grant their
 *   ClusterRole everywhere, RoleBindings their Role (or a ClusterRole) in their own namespace only;
 *   subjects are a User by name, a Group, or a ServiceAccount (`system:serviceaccount:<ns>:<name>`);
 * - a rule matches when its verbs, apiGroups and resources hold the request's (`*` for any;
 *   `pods/log` for a subresource, `*` for every resource and subresource, `*` slash `scale` for
 *   one subresource of any resource), and its resourceNames, if any, hold the request's name (so
 *   such a rule never allows create, nor list, watch or deletecollection without a name);
 *   nonResourceURLs rules (ClusterRoles) match a path exactly or by a trailing `*`;
 * - the group `system:masters` is allowed everything, ahead of RBAC, as kube-apiserver's
 *   privileged-groups authorizer does; every authenticated user may reach the discovery paths
 *   (the default `system:discovery` and `system:public-info-viewer` bindings) and create
 *   SelfSubjectAccessReviews (`system:basic-user`), which the fake grants without storing those
 *   default roles and bindings.
 * Refusals are 403 Forbidden Status objects worded as kube-apiserver words them.
 * Not modelled: aggregated ClusterRoles (`aggregationRule`), impersonation, and the escalation
 * check on writing roles and bindings (`bind`, `escalate`): no Steward code writes RBAC objects
 * with a restricted identity.
 */
import { kindFor } from "./kinds";
import type { KindInfo, KubeObject } from "./kinds";
import type { ApiState } from "./state";
import { KubeStatusError } from "./status";

export interface UserInfo {
  name: string;
  groups: string[];
}

export interface RequestAttributes {
  verb: string;
  /** Absent for a non-resource request (`/api`, `/version`). */
  resource?: { group: string; resource: string; subresource?: string; namespace?: string; name?: string };
  /** The path of a non-resource request. */
  path?: string;
}

interface PolicyRule {
  verbs?: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}
interface Subject {
  kind?: string;
  name?: string;
  namespace?: string;
}

export const MASTERS = "system:masters";
export const AUTHENTICATED = "system:authenticated";

const CLUSTER_ROLES = kindFor("rbac.authorization.k8s.io", "v1", "clusterroles")!;
const CLUSTER_ROLE_BINDINGS = kindFor("rbac.authorization.k8s.io", "v1", "clusterrolebindings")!;
const ROLES = kindFor("rbac.authorization.k8s.io", "v1", "roles")!;
const ROLE_BINDINGS = kindFor("rbac.authorization.k8s.io", "v1", "rolebindings")!;
const DISCOVERY = [
  "/api",
  "/api/*",
  "/apis",
  "/apis/*",
  "/version",
  "/version/",
  "/healthz",
  "/livez",
  "/readyz",
  "/openapi/*",
];
const ALWAYS_ALLOWED: PolicyRule[] = [
  { verbs: ["get"], nonResourceURLs: DISCOVERY },
  {
    verbs: ["create"],
    apiGroups: ["authorization.k8s.io"],
    resources: ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
  },
];

const VERB_OF_METHOD: Record<string, string> = { POST: "create", PUT: "update", PATCH: "patch" };

/** The verb and resource a request to a resource path asks for (see the overview's table). */
export function resourceAttributes(
  method: string,
  kind: KindInfo,
  t: { namespace?: string; name?: string; subresource?: string },
  query: URLSearchParams,
): RequestAttributes {
  const collection = t.name === undefined;
  let verb = VERB_OF_METHOD[method] ?? "";
  if (method === "GET" || method === "HEAD")
    verb = !collection ? "get" : ["true", "1"].includes(query.get("watch") ?? "") ? "watch" : "list";
  else if (method === "DELETE") verb = collection ? "deletecollection" : "delete";
  // A list or watch of one object by name is authorised as that name (the RBAC page, "Referring to resources").
  let name = t.name;
  if (collection && (verb === "list" || verb === "watch")) name = nameFromFieldSelector(query.get("fieldSelector"));
  // A namespace is in itself (`/api/v1/namespaces/foo` is namespace foo's), as kube-apiserver's RequestInfo reads the path.
  const namespace = kind.group === "" && kind.plural === "namespaces" ? t.name : t.namespace;
  return {
    verb: verb || method.toLowerCase(),
    resource: {
      group: kind.group,
      resource: kind.plural,
      ...(t.subresource ? { subresource: t.subresource } : {}),
      ...(namespace ? { namespace } : {}),
      ...(name !== undefined ? { name } : {}),
    },
  };
}

function nameFromFieldSelector(selector: string | null): string | undefined {
  for (const term of (selector ?? "").split(",")) {
    const m = /^\s*metadata\.name\s*(==|=)\s*(\S+)\s*$/.exec(term);
    if (m) return m[2];
  }
  return undefined;
}

/** Whether RBAC (and the privileged group) allows the request. */
export function authorize(state: ApiState, user: UserInfo, a: RequestAttributes): boolean {
  if (user.groups.includes(MASTERS)) return true;
  if (ALWAYS_ALLOWED.some((r) => ruleAllows(r, a)) && user.groups.includes(AUTHENTICATED)) return true;
  for (const b of state.list(CLUSTER_ROLE_BINDINGS)) {
    if (!appliesTo(b.subjects, user, undefined)) continue;
    if (rulesOf(state, b.roleRef, undefined).some((r) => ruleAllows(r, a))) return true;
  }
  const ns = a.resource?.namespace;
  if (!ns) return false;
  for (const b of state.list(ROLE_BINDINGS, ns)) {
    if (!appliesTo(b.subjects, user, ns)) continue;
    // Non-resource rules mean nothing in a namespace: only resource rules are looked at here.
    if (rulesOf(state, b.roleRef, ns).some((r) => !r.nonResourceURLs?.length && ruleAllows(r, a))) return true;
  }
  return false;
}

/** The 403 kube-apiserver answers (its `forbiddenMessage`, inside a Forbidden Status of the resource). */
export function forbiddenError(user: UserInfo, a: RequestAttributes): KubeStatusError {
  const r = a.resource;
  if (!r)
    return new KubeStatusError(
      403,
      "Forbidden",
      `forbidden: User ${JSON.stringify(user.name)} cannot ${a.verb} path ${JSON.stringify(a.path ?? "")}`,
      {},
    );
  const what = r.subresource ? `${r.resource}/${r.subresource}` : r.resource;
  const where = r.namespace ? `in the namespace ${JSON.stringify(r.namespace)}` : "at the cluster scope";
  const qualified = r.group ? `${r.resource}.${r.group}` : r.resource;
  const subject = r.name ? `${qualified} ${JSON.stringify(r.name)}` : qualified;
  return new KubeStatusError(
    403,
    "Forbidden",
    `${subject} is forbidden: User ${JSON.stringify(user.name)} cannot ${a.verb} resource ${JSON.stringify(what)} in API group ${JSON.stringify(r.group)} ${where}`,
    { ...(r.name ? { name: r.name } : {}), ...(r.group ? { group: r.group } : {}), kind: r.resource },
  );
}

function appliesTo(subjects: unknown, user: UserInfo, bindingNamespace: string | undefined): boolean {
  for (const s of (Array.isArray(subjects) ? subjects : []) as Subject[]) {
    if (s.kind === "User" && s.name === user.name) return true;
    if (s.kind === "Group" && s.name !== undefined && user.groups.includes(s.name)) return true;
    if (s.kind === "ServiceAccount" && s.name) {
      const ns = s.namespace || bindingNamespace;
      if (ns && user.name === `system:serviceaccount:${ns}:${s.name}`) return true;
    }
  }
  return false;
}

/** The rules of a binding's role; a binding to a role that does not exist grants nothing. */
function rulesOf(state: ApiState, ref: unknown, namespace: string | undefined): PolicyRule[] {
  const r = (ref ?? {}) as { kind?: string; name?: string };
  if (!r.name) return [];
  let role: KubeObject | undefined;
  if (r.kind === "ClusterRole") role = state.find(CLUSTER_ROLES, undefined, r.name);
  else if (r.kind === "Role" && namespace) role = state.find(ROLES, namespace, r.name);
  return Array.isArray(role?.rules) ? (role.rules as PolicyRule[]) : [];
}

function ruleAllows(rule: PolicyRule, a: RequestAttributes): boolean {
  if (!(rule.verbs ?? []).some((v) => v === "*" || v === a.verb)) return false;
  if (!a.resource)
    return (rule.nonResourceURLs ?? []).some(
      (u) => u === "*" || u === a.path || (u.endsWith("*") && (a.path ?? "").startsWith(u.slice(0, -1))),
    );
  const r = a.resource;
  if (!(rule.apiGroups ?? []).some((g) => g === "*" || g === r.group)) return false;
  const combined = r.subresource ? `${r.resource}/${r.subresource}` : r.resource;
  const resourceMatches = (rule.resources ?? []).some(
    (x) => x === "*" || x === combined || (!!r.subresource && x === `*/${r.subresource}`),
  );
  if (!resourceMatches) return false;
  const names = rule.resourceNames ?? [];
  return names.length === 0 || (r.name !== undefined && names.includes(r.name));
}
