/**
 * Checks that a Kubernetes cluster answers and that the credential's user may do what the
 * controller's provisioner (controller/provisioner/kubernetes-units.ts) does, when a cluster credential is stored (`steward add-k8s`)
 * and when a model is made on it (`steward add-model --substrate kubernetes:CLUSTER`): otherwise
 * either goes through and the model's units wait for pods forever, the reason only in the
 * controller's log. Refusals are invalid-request errors naming the server and what failed
 * (`details.check`: `reachable` or `rights`, with `details.missing`), asked of the cluster's own
 * authorizer through SelfSubjectAccessReviews. The routes take `skipCheck=true` for a cluster not
 * up yet (or not reachable from where the controller runs now).
 */
import { StewardError } from "../../api/core";
import type { ResourceAttributes } from "./resources";
import { KUBE_RESOURCES } from "./resources";
import { deniedRights, describeRight, describeRights } from "./access-review";
import type { KubeConnection } from "./kubeconfig";
import { connectionOfCredential } from "./kubeconfig";
import { KubeApi, KubeApiError, KubeUnreachableError } from "./kube-api";
import { describeClusterFailure } from "./cluster-failures";

/**
 * Every call the provisioner makes in a model's namespace (kubernetes-units.ts: the agents Secret
 * read, made and replaced; the Services read and made; the StatefulSet read, listed, made, patched,
 * scaled through `/scale` and deleted; pods listed; the objects of a removed application deleted).
 * Kept in step with it: test/kubernetes-cluster-checks.test.ts runs a model under a user granted
 * exactly these.
 */
export const MODEL_NAMESPACE_RIGHTS: readonly ResourceAttributes[] = [
  ...["get", "create", "update", "delete"].map((verb) => ({ verb, resource: "secrets" })),
  ...["get", "create", "delete"].map((verb) => ({ verb, resource: "services" })),
  ...["get", "list", "create", "patch", "delete"].map((verb) => ({ verb, group: "apps", resource: "statefulsets" })),
  { verb: "patch", group: "apps", resource: "statefulsets", subresource: "scale" },
  { verb: "list", resource: "pods" },
  // Units' storage is claims of their StatefulSet (storage-claims.ts): marked, kept, destroyed; agents' state claims deleted.
  ...["get", "list", "update", "delete"].map((verb) => ({ verb, resource: "persistentvolumeclaims" })),
];

/** The namespace itself: looked up on every pass, made when missing, deleted with the model when Steward made it. */
const lookUpNamespace = (ns: string): ResourceAttributes => ({
  verb: "get",
  resource: "namespaces",
  name: ns,
  namespace: ns,
});
const MAKE_NAMESPACES: ResourceAttributes = { verb: "create", resource: "namespaces" };
const deleteNamespace = (ns?: string): ResourceAttributes => ({
  verb: "delete",
  resource: "namespaces",
  ...(ns ? { name: ns, namespace: ns } : {}),
});
const rightsIn = (namespace: string | undefined): ResourceAttributes[] =>
  MODEL_NAMESPACE_RIGHTS.map((r) => ({ ...r, ...(namespace ? { namespace } : {}) }));

/** Each check's calls; a cluster that does not answer in this long is refused (the request does not hang). */
const CHECK_TIMEOUT_MS = 10_000;
const SKIP_HINTS = {
  credential: "if the cluster is not up yet, register it anyway with steward add-k8s --skip-check",
  model: "if the cluster is not up yet, make the model anyway with --skip-check (its units then wait for the cluster)",
} as const;

/**
 * For `add-k8s`: the server answers and accepts the credential, and its user may either make a
 * namespace per model and work in any namespace, or work in its kubeconfig context's namespace
 * (models then need `--namespace` of one it has the rights in).
 */
export async function checkClusterCredential(name: string, attributes: Record<string, string>): Promise<void> {
  await withCluster(name, attributes, SKIP_HINTS.credential, async (api) => {
    const mayMakeNamespaces = (await deniedRights(api, [MAKE_NAMESPACES])).length === 0;
    if (mayMakeNamespaces) {
      const missing = await deniedRights(api, [...rightsIn(undefined), deleteNamespace()]);
      if (missing.length > 0)
        throw missingRights(name, api, missing, "it may create namespaces but not work in every namespace");
      return;
    }
    const ns = api.namespace;
    const missing = await deniedRights(api, [lookUpNamespace(ns), ...rightsIn(ns)]);
    if (missing.length > 0)
      throw missingRights(
        name,
        api,
        [MAKE_NAMESPACES, ...missing],
        `it may not create namespaces, nor work in namespace ${ns} (its kubeconfig context's)`,
      );
  });
}

/** For `add-model`: the rights in the model's namespace, and to make (and later delete) it when it does not exist. */
export async function checkModelCluster(
  name: string,
  attributes: Record<string, string>,
  namespace: string,
): Promise<void> {
  await withCluster(name, attributes, SKIP_HINTS.model, async (api) => {
    const lookUp = lookUpNamespace(namespace);
    const mayLookUp = (await deniedRights(api, [lookUp])).length === 0;
    const exists = mayLookUp
      ? (await api.find(KUBE_RESOURCES.namespaces, namespace, { timeoutMs: CHECK_TIMEOUT_MS })) !== undefined
      : true;
    const missing = await deniedRights(api, [
      ...(exists ? [] : [MAKE_NAMESPACES, deleteNamespace(namespace)]),
      ...rightsIn(namespace),
    ]);
    if (!mayLookUp) missing.unshift(lookUp);
    if (missing.length > 0)
      throw missingRights(
        name,
        api,
        missing,
        `it may not run a model in namespace ${namespace}${exists ? "" : " (which does not exist yet)"}`,
      );
  });
}

/** Opens the credential's cluster for `check`; a server not reached, or refusing the credential, is a refusal naming it. */
async function withCluster(
  name: string,
  attributes: Record<string, string>,
  skipHint: string,
  check: (api: KubeApi) => Promise<void>,
): Promise<void> {
  let connection: KubeConnection;
  try {
    connection = connectionOfCredential(attributes);
  } catch (err) {
    throw new StewardError("invalid-request", `cluster "${name}": ${(err as Error).message}`, {
      details: { field: "kubeconfig" },
    });
  }
  const api = new KubeApi(connection, { timeoutMs: CHECK_TIMEOUT_MS });
  try {
    await check(api);
  } catch (err) {
    if (StewardError.isInstance(err)) throw err;
    if (!(err instanceof KubeUnreachableError) && !(err instanceof KubeApiError)) throw err;
    const failure = describeClusterFailure(err, connection.server);
    throw new StewardError(
      "invalid-request",
      `cluster "${name}": ${failure}. Check the kubeconfig's server, CA and user; ${skipHint}`,
      {
        details: { field: "kubeconfig", check: "reachable", server: connection.server },
      },
    );
  } finally {
    api.close();
  }
}

function missingRights(name: string, api: KubeApi, missing: ResourceAttributes[], what: string): StewardError {
  const rights = missing.map(describeRight);
  return new StewardError(
    "invalid-request",
    `cluster "${name}" (${api.connection.server}): the kubeconfig's user cannot do what Steward needs: ${what}. Missing: ${describeRights(missing)}. Grant them (a Role and RoleBinding in the namespace, or a ClusterRole such as "admin" bound to the user) and try again`,
    { details: { field: "kubeconfig", check: "rights", server: api.connection.server, missing: rights } },
  );
}
