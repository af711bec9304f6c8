/**
 * Authentication and RBAC of the fake Kubernetes API server (test/harness/kube/), as the real
 * `@kubernetes/client-node` sees them, asserted as the Kubernetes documentation describes them
 * ("Using RBAC Authorization", "Managing Service Accounts", the TokenRequest API, the
 * ServiceAccount admission plugin), not as any Steward code uses them.
 */
import test from "ava";
import type { ExecutionContext } from "ava";
import type { KubeConfig } from "@kubernetes/client-node" with { "resolution-mode": "import" };
import { FakeKubeApi } from "./harness/kube";
import type { FakeKubeApiOptions } from "./harness/kube";
import { eventually } from "./harness/eventually";

const loadClient = () => import("@kubernetes/client-node");
type K8s = Awaited<ReturnType<typeof loadClient>>;

interface Clients {
  core: InstanceType<K8s["CoreV1Api"]>;
  apps: InstanceType<K8s["AppsV1Api"]>;
  rbac: InstanceType<K8s["RbacAuthorizationV1Api"]>;
  authz: InstanceType<K8s["AuthorizationV1Api"]>;
}
interface Env extends Clients {
  api: FakeKubeApi;
  k8s: K8s;
  as(token: string): Clients;
}

async function start(t: ExecutionContext, o: FakeKubeApiOptions = {}): Promise<Env> {
  const api = await FakeKubeApi.start(o);
  t.teardown(() => api.stop());
  const k8s = await loadClient();
  const clients = (kubeconfig: string): Clients => {
    const kc: KubeConfig = new k8s.KubeConfig();
    kc.loadFromString(kubeconfig);
    return {
      core: kc.makeApiClient(k8s.CoreV1Api),
      apps: kc.makeApiClient(k8s.AppsV1Api),
      rbac: kc.makeApiClient(k8s.RbacAuthorizationV1Api),
      authz: kc.makeApiClient(k8s.AuthorizationV1Api),
    };
  };
  return { api, k8s, ...clients(api.kubeconfig()), as: (token) => clients(api.kubeconfig({ token })) };
}

/** The Status a failed client-node call carries. */
async function statusOf(p: Promise<unknown>): Promise<{
  code: number;
  reason?: string;
  message?: string;
  details?: { name?: string; kind?: string; group?: string };
}> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e as { code: number; body: unknown },
  );
  if (!err) throw new Error("the call succeeded");
  const body = typeof err.body === "string" ? JSON.parse(err.body) : err.body;
  return { code: err.code, ...body };
}

/** A namespace with a ServiceAccount, and a token for it from the TokenRequest API. */
async function account(env: Env, namespace: string, name: string, spec: Record<string, unknown> = {}): Promise<string> {
  if (!(await env.core.listNamespace()).items.some((n) => n.metadata?.name === namespace))
    await env.core.createNamespace({ body: { metadata: { name: namespace } } });
  await env.core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  const review = await env.core.createNamespacedServiceAccountToken({ namespace, name, body: { spec } as never });
  return review.status!.token;
}

type Rule = { verbs: string[]; apiGroups?: string[]; resources?: string[]; resourceNames?: string[] };
const role = (name: string, rules: Rule[]) => ({ metadata: { name }, rules });
const bindTo = (
  name: string,
  roleRef: { kind: string; name: string },
  subjects: { kind: string; name: string; namespace?: string }[],
) => ({ metadata: { name }, roleRef: { apiGroup: "rbac.authorization.k8s.io", ...roleRef }, subjects });

test("a ServiceAccount token is its ServiceAccount: refused (403, worded as kube-apiserver words it) until a RoleBinding grants it, and only in that namespace", async (t) => {
  const env = await start(t);
  const token = await account(env, "shop", "app");
  await env.core.createNamespace({ body: { metadata: { name: "other" } } });
  const app = env.as(token);
  const refused = await statusOf(app.core.listNamespacedPod({ namespace: "shop" }));
  t.like(refused, { code: 403, reason: "Forbidden", details: { kind: "pods" } });
  t.is(
    refused.message,
    'pods is forbidden: User "system:serviceaccount:shop:app" cannot list resource "pods" in API group "" in the namespace "shop"',
  );

  await env.rbac.createNamespacedRole({
    namespace: "shop",
    body: role("pod-reader", [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch"] }]),
  });
  await env.rbac.createNamespacedRoleBinding({
    namespace: "shop",
    body: bindTo("app-reads", { kind: "Role", name: "pod-reader" }, [
      { kind: "ServiceAccount", name: "app", namespace: "shop" },
    ]),
  });
  t.deepEqual((await app.core.listNamespacedPod({ namespace: "shop" })).items, []);
  t.is(
    (await statusOf(app.core.listNamespacedPod({ namespace: "other" }))).message,
    'pods is forbidden: User "system:serviceaccount:shop:app" cannot list resource "pods" in API group "" in the namespace "other"',
  );
  t.is(
    (await statusOf(app.core.listPodForAllNamespaces())).message,
    'pods is forbidden: User "system:serviceaccount:shop:app" cannot list resource "pods" in API group "" at the cluster scope',
  );
  t.is(
    (
      await statusOf(
        app.core.createNamespacedPod({
          namespace: "shop",
          body: { metadata: { name: "p" }, spec: { containers: [{ name: "c", image: "busybox" }] } },
        }),
      )
    ).message,
    'pods is forbidden: User "system:serviceaccount:shop:app" cannot create resource "pods" in API group "" in the namespace "shop"',
  );
  t.is(
    (await statusOf(app.core.readNamespacedSecret({ namespace: "shop", name: "db" }))).message,
    'secrets "db" is forbidden: User "system:serviceaccount:shop:app" cannot get resource "secrets" in API group "" in the namespace "shop"',
    "403 before 404: authorisation comes first",
  );

  // The ServiceAccount deleted (or made again: another uid), its tokens stop working.
  await env.core.deleteNamespacedServiceAccount({ namespace: "shop", name: "app" });
  t.is((await statusOf(app.core.listNamespacedPod({ namespace: "shop" }))).code, 401);
  await env.core.createNamespacedServiceAccount({ namespace: "shop", body: { metadata: { name: "app" } } });
  t.is((await statusOf(app.core.listNamespacedPod({ namespace: "shop" }))).code, 401);
});

test("resourceNames allow only the named objects: never create, nor a list or watch unless it names the object by a metadata.name field selector", async (t) => {
  const env = await start(t);
  const token = await account(env, "shop", "app");
  for (const name of ["mine", "theirs"])
    await env.core.createNamespacedSecret({ namespace: "shop", body: { metadata: { name }, stringData: { k: name } } });
  await env.rbac.createNamespacedRole({
    namespace: "shop",
    body: role("mine", [
      { apiGroups: [""], resources: ["secrets"], resourceNames: ["mine"], verbs: ["get", "list", "update", "create"] },
    ]),
  });
  await env.rbac.createNamespacedRoleBinding({
    namespace: "shop",
    body: bindTo("mine", { kind: "Role", name: "mine" }, [{ kind: "ServiceAccount", name: "app", namespace: "shop" }]),
  });
  const app = env.as(token);
  const mine = await app.core.readNamespacedSecret({ namespace: "shop", name: "mine" });
  t.is(Buffer.from(mine.data!.k!, "base64").toString(), "mine");
  await app.core.replaceNamespacedSecret({
    namespace: "shop",
    name: "mine",
    body: { ...mine, stringData: { k: "changed" } },
  });
  t.is(
    (await statusOf(app.core.readNamespacedSecret({ namespace: "shop", name: "theirs" }))).message,
    'secrets "theirs" is forbidden: User "system:serviceaccount:shop:app" cannot get resource "secrets" in API group "" in the namespace "shop"',
  );
  t.is((await statusOf(app.core.listNamespacedSecret({ namespace: "shop" }))).code, 403);
  t.deepEqual(
    (await app.core.listNamespacedSecret({ namespace: "shop", fieldSelector: "metadata.name=mine" })).items.map(
      (s) => s.metadata?.name,
    ),
    ["mine"],
  );
  t.is(
    (await statusOf(app.core.listNamespacedSecret({ namespace: "shop", fieldSelector: "metadata.name=theirs" }))).code,
    403,
  );
  t.is(
    (await statusOf(app.core.createNamespacedSecret({ namespace: "shop", body: { metadata: { name: "mine" } } }))).code,
    403,
    "create is never allowed by name",
  );
});

test("subresources are their own resources (statefulsets/scale, */scale); * is every resource; verbs are checked one by one", async (t) => {
  const env = await start(t);
  const token = await account(env, "shop", "app");
  await env.apps.createNamespacedStatefulSet({
    namespace: "shop",
    body: {
      metadata: { name: "web" },
      spec: {
        replicas: 1,
        serviceName: "web",
        selector: { matchLabels: { app: "web" } },
        template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "c", image: "busybox" }] } },
      },
    },
  });
  await env.rbac.createNamespacedRole({
    namespace: "shop",
    body: role("scaler", [
      { apiGroups: ["apps"], resources: ["statefulsets/scale"], resourceNames: ["web"], verbs: ["get", "update"] },
    ]),
  });
  await env.rbac.createNamespacedRoleBinding({
    namespace: "shop",
    body: bindTo("scaler", { kind: "Role", name: "scaler" }, [
      { kind: "ServiceAccount", name: "app", namespace: "shop" },
    ]),
  });
  const app = env.as(token);
  const scale = await app.apps.readNamespacedStatefulSetScale({ namespace: "shop", name: "web" });
  await app.apps.replaceNamespacedStatefulSetScale({
    namespace: "shop",
    name: "web",
    body: { ...scale, spec: { replicas: 2 } },
  });
  t.is((await env.apps.readNamespacedStatefulSet({ namespace: "shop", name: "web" })).spec?.replicas, 2);
  const whole = await statusOf(app.apps.readNamespacedStatefulSet({ namespace: "shop", name: "web" }));
  t.like(whole, { code: 403, details: { name: "web", group: "apps", kind: "statefulsets" } });
  t.is(
    whole.message,
    'statefulsets.apps "web" is forbidden: User "system:serviceaccount:shop:app" cannot get resource "statefulsets" in API group "apps" in the namespace "shop"',
  );
  t.regex(
    (await statusOf(app.apps.deleteNamespacedStatefulSet({ namespace: "shop", name: "web" }))).message!,
    /cannot delete resource "statefulsets" in API group "apps"/,
  );

  // */scale: the scale of any resource; * : everything in the group, subresources included.
  const token2 = await account(env, "shop", "ops");
  await env.rbac.createNamespacedRole({
    namespace: "shop",
    body: role("any-scale", [
      { apiGroups: ["apps"], resources: ["*/scale"], verbs: ["get"] },
      { apiGroups: [""], resources: ["*"], verbs: ["list"] },
    ]),
  });
  await env.rbac.createNamespacedRoleBinding({
    namespace: "shop",
    body: bindTo("ops", { kind: "Role", name: "any-scale" }, [
      { kind: "ServiceAccount", name: "ops", namespace: "shop" },
    ]),
  });
  const ops = env.as(token2);
  t.is((await ops.apps.readNamespacedStatefulSetScale({ namespace: "shop", name: "web" })).spec?.replicas, 2);
  t.is(
    (await statusOf(ops.apps.replaceNamespacedStatefulSetScale({ namespace: "shop", name: "web", body: scale }))).code,
    403,
  );
  t.true(Array.isArray((await ops.core.listNamespacedConfigMap({ namespace: "shop" })).items));
  t.is(
    (await statusOf(ops.apps.listNamespacedStatefulSet({ namespace: "shop" }))).code,
    403,
    "* is every resource of the rule's groups only",
  );
});

test("a RoleBinding to a ClusterRole grants it in the binding's namespace only; a ClusterRoleBinding everywhere; Group and User subjects", async (t) => {
  const env = await start(t, { tokens: { [ADMIN]: "admin", [ALICE]: { user: "alice", groups: ["devs"] } } });
  const token = await account(env, "shop", "app");
  await env.core.createNamespace({ body: { metadata: { name: "other" } } });
  await env.rbac.createClusterRole({
    body: role("cm-reader", [{ apiGroups: [""], resources: ["configmaps"], verbs: ["list"] }]),
  });
  await env.rbac.createNamespacedRoleBinding({
    namespace: "shop",
    body: bindTo("all-accounts", { kind: "ClusterRole", name: "cm-reader" }, [
      { kind: "Group", name: "system:serviceaccounts:shop" },
    ]),
  });
  const app = env.as(token);
  t.true(
    Array.isArray((await app.core.listNamespacedConfigMap({ namespace: "shop" })).items),
    "the group of the namespace's ServiceAccounts",
  );
  // A namespace object is in itself: a RoleBinding there may let one read it.
  t.is(
    (await statusOf(app.core.readNamespace({ name: "shop" }))).message,
    'namespaces "shop" is forbidden: User "system:serviceaccount:shop:app" cannot get resource "namespaces" in API group "" in the namespace "shop"',
  );
  await env.rbac.createNamespacedRole({
    namespace: "shop",
    body: role("ns-self", [{ apiGroups: [""], resources: ["namespaces"], verbs: ["get"] }]),
  });
  await env.rbac.createNamespacedRoleBinding({
    namespace: "shop",
    body: bindTo("ns-self", { kind: "Role", name: "ns-self" }, [
      { kind: "ServiceAccount", name: "app", namespace: "shop" },
    ]),
  });
  t.is((await app.core.readNamespace({ name: "shop" })).metadata?.name, "shop");
  t.is((await statusOf(app.core.readNamespace({ name: "other" }))).code, 403);
  t.is(
    (await statusOf(app.core.listNamespacedConfigMap({ namespace: "other" }))).code,
    403,
    "a RoleBinding's ClusterRole stays in its namespace",
  );
  t.is((await statusOf(app.core.listConfigMapForAllNamespaces())).code, 403);

  const alice = env.as(ALICE);
  t.is(
    (await statusOf(alice.core.listNamespacedConfigMap({ namespace: "other" }))).message,
    'configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "other"',
  );
  await env.rbac.createClusterRoleBinding({
    body: bindTo("devs", { kind: "ClusterRole", name: "cm-reader" }, [{ kind: "Group", name: "devs" }]),
  });
  t.true(Array.isArray((await alice.core.listConfigMapForAllNamespaces()).items));
  t.true(Array.isArray((await alice.core.listNamespacedConfigMap({ namespace: "other" })).items));
  t.is(
    (await statusOf(alice.core.listNamespace())).message,
    'namespaces is forbidden: User "alice" cannot list resource "namespaces" in API group "" at the cluster scope',
  );
  await env.rbac.createClusterRole({
    body: role("ns-reader", [{ apiGroups: [""], resources: ["namespaces"], verbs: ["list"] }]),
  });
  await env.rbac.createClusterRoleBinding({
    body: bindTo("alice", { kind: "ClusterRole", name: "ns-reader" }, [{ kind: "User", name: "alice" }]),
  });
  t.true((await alice.core.listNamespace()).items.length >= 2);
  // The administrator's token and client certificates are unrestricted (system:masters).
  t.true(Array.isArray((await env.core.listSecretForAllNamespaces()).items));
});

test("TokenRequest: at least 10 minutes, capped by the server's maximum; a token bound to a pod stops working once the pod is gone", async (t) => {
  const env = await start(t, { serviceAccountTokenMaxSeconds: 700 });
  await account(env, "shop", "app");
  const short = await statusOf(
    env.core.createNamespacedServiceAccountToken({
      namespace: "shop",
      name: "app",
      body: { spec: { expirationSeconds: 599 } } as never,
    }),
  );
  t.like(short, { code: 422, reason: "Invalid" });
  t.regex(short.message!, /may not specify a duration less than 10 minutes/);
  const capped = await env.core.createNamespacedServiceAccountToken({
    namespace: "shop",
    name: "app",
    body: { spec: { expirationSeconds: 3600 } } as never,
  });
  t.is(capped.spec.expirationSeconds, 700);
  t.true(Math.abs(Date.parse(String(capped.status?.expirationTimestamp)) - (Date.now() + 700_000)) < 5000);

  await env.rbac.createNamespacedRole({
    namespace: "shop",
    body: role("r", [{ apiGroups: [""], resources: ["configmaps"], verbs: ["list"] }]),
  });
  await env.rbac.createNamespacedRoleBinding({
    namespace: "shop",
    body: bindTo("r", { kind: "Role", name: "r" }, [{ kind: "ServiceAccount", name: "app", namespace: "shop" }]),
  });
  const pod = await env.core.createNamespacedPod({
    namespace: "shop",
    body: {
      metadata: { name: "p" },
      spec: { serviceAccountName: "app", containers: [{ name: "c", image: "busybox" }] },
    },
  });
  const bound = await env.core.createNamespacedServiceAccountToken({
    namespace: "shop",
    name: "app",
    body: { spec: { boundObjectRef: { kind: "Pod", apiVersion: "v1", name: "p", uid: pod.metadata!.uid } } } as never,
  });
  const inPod = env.as(bound.status!.token);
  t.true(Array.isArray((await inPod.core.listNamespacedConfigMap({ namespace: "shop" })).items));
  await env.core.deleteNamespacedPod({ namespace: "shop", name: "p", gracePeriodSeconds: 0 });
  await eventually("the pod gone", async () => !(await env.core.listNamespacedPod({ namespace: "shop" })).items.length);
  t.is((await statusOf(inPod.core.listNamespacedConfigMap({ namespace: "shop" }))).code, 401);
  t.like(
    await statusOf(
      env.core.createNamespacedServiceAccountToken({
        namespace: "shop",
        name: "app",
        body: {
          spec: { boundObjectRef: { kind: "Pod", apiVersion: "v1", name: "p", uid: pod.metadata!.uid } },
        } as never,
      }),
    ),
    { code: 404 },
  );
});

test("ServiceAccount admission: a namespace gets a default ServiceAccount and kube-root-ca.crt; a pod gets its token volume unless automount is off; an unknown ServiceAccount is refused", async (t) => {
  const env = await start(t);
  await env.core.createNamespace({ body: { metadata: { name: "shop" } } });
  await eventually("the default ServiceAccount", async () =>
    (await env.core.listNamespacedServiceAccount({ namespace: "shop" })).items.some(
      (s) => s.metadata?.name === "default",
    ),
  );
  const ca = await env.core.readNamespacedConfigMap({ namespace: "shop", name: "kube-root-ca.crt" });
  t.is(ca.data?.["ca.crt"], env.api.caCert);

  const pod = await env.core.createNamespacedPod({
    namespace: "shop",
    body: {
      metadata: { name: "p" },
      spec: {
        containers: [
          { name: "a", image: "busybox" },
          { name: "b", image: "busybox", volumeMounts: [] },
        ],
      },
    },
  });
  t.is(pod.spec?.serviceAccountName, "default");
  const volume = pod.spec?.volumes?.find((v) => v.name.startsWith("kube-api-access-"));
  t.truthy(volume?.projected);
  t.deepEqual(
    volume!.projected!.sources!.map(
      (s) => Object.keys(s).filter((k) => (s as Record<string, unknown>)[k] !== undefined)[0],
    ),
    ["serviceAccountToken", "configMap", "downwardAPI"],
  );
  t.is(volume!.projected!.sources![0]!.serviceAccountToken?.expirationSeconds, 3607);
  for (const c of pod.spec!.containers)
    t.like(
      c.volumeMounts?.find((m) => m.name === volume!.name),
      { name: volume!.name, mountPath: "/var/run/secrets/kubernetes.io/serviceaccount", readOnly: true },
    );

  const off = await env.core.createNamespacedPod({
    namespace: "shop",
    body: {
      metadata: { name: "q" },
      spec: { automountServiceAccountToken: false, containers: [{ name: "a", image: "busybox" }] },
    },
  });
  t.is(off.spec?.volumes, undefined);
  const refused = await statusOf(
    env.core.createNamespacedPod({
      namespace: "shop",
      body: {
        metadata: { name: "r" },
        spec: { serviceAccountName: "nobody", containers: [{ name: "a", image: "busybox" }] },
      },
    }),
  );
  t.like(refused, { code: 403, reason: "Forbidden" });
  t.is(
    refused.message,
    'pods "r" is forbidden: error looking up service account shop/nobody: serviceaccount "nobody" not found',
  );
});

test("SelfSubjectAccessReview (kubectl auth can-i) answers what RBAC would decide for the asking user, whoever may ask", async (t) => {
  const env = await start(t);
  const token = await account(env, "shop", "app");
  await env.rbac.createNamespacedRole({
    namespace: "shop",
    body: role("scaler", [
      { apiGroups: ["apps"], resources: ["statefulsets/scale"], resourceNames: ["web"], verbs: ["patch"] },
    ]),
  });
  await env.rbac.createNamespacedRoleBinding({
    namespace: "shop",
    body: bindTo("scaler", { kind: "Role", name: "scaler" }, [
      { kind: "ServiceAccount", name: "app", namespace: "shop" },
    ]),
  });
  const app = env.as(token);
  const canI = async (resourceAttributes: Record<string, string>): Promise<boolean | undefined> =>
    (await app.authz.createSelfSubjectAccessReview({ body: { spec: { resourceAttributes } } })).status?.allowed;
  t.true(
    await canI({
      namespace: "shop",
      verb: "patch",
      group: "apps",
      resource: "statefulsets",
      subresource: "scale",
      name: "web",
    }),
  );
  t.false(
    await canI({
      namespace: "shop",
      verb: "patch",
      group: "apps",
      resource: "statefulsets",
      subresource: "scale",
      name: "db",
    }),
  );
  t.false(await canI({ namespace: "shop", verb: "patch", group: "apps", resource: "statefulsets", name: "web" }));
  t.false(
    await canI({
      namespace: "other",
      verb: "patch",
      group: "apps",
      resource: "statefulsets",
      subresource: "scale",
      name: "web",
    }),
  );
  t.true(
    (
      await env.authz.createSelfSubjectAccessReview({
        body: { spec: { resourceAttributes: { verb: "delete", resource: "namespaces" } } },
      })
    ).status?.allowed,
    "the administrator may do anything",
  );
});

const ADMIN = "admin-token-0123456789abcdef";
const ALICE = "alice-token-0123456789abcdef";
