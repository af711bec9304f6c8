/**
 * The ServiceAccount admission plugin of the fake API server, for pods (the admission controllers
 * reference, "ServiceAccount", and "Configure Service Accounts for Pods"): a pod without
 * `serviceAccountName` gets `default`; a pod naming a ServiceAccount that does not exist is refused
 * (403); unless `automountServiceAccountToken` is false on the pod (or, when the pod does not say,
 * on its ServiceAccount), the pod gets a projected volume `kube-api-access-<suffix>` (a token for
 * its ServiceAccount bound to the pod, 3607 s, file `token`; `ca.crt` from the ConfigMap
 * `kube-root-ca.crt`; `namespace` from the downward API) mounted read-only at
 * /var/run/secrets/kubernetes.io/serviceaccount in each container that mounts nothing there.
 */
import { randomBytes } from "node:crypto";
import { kindFor } from "./kinds";
import type { KubeObject } from "./kinds";
import type { ApiState } from "./state";
import { forbidden } from "./status";

export const SERVICE_ACCOUNT_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount";
export const ROOT_CA_CONFIGMAP = "kube-root-ca.crt";

const SERVICE_ACCOUNTS = kindFor("", "v1", "serviceaccounts")!;
const PODS = kindFor("", "v1", "pods")!;
const ALPHABET = "bcdfghjklmnpqrstvwxz2456789";

type Container = { volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[] };

/** Admits a pod being created in `namespace` (changing it in place), or throws the refusal. */
export function admitServiceAccount(state: ApiState, namespace: string, pod: KubeObject): void {
  const spec = pod.spec;
  if (!spec || typeof spec !== "object") return; // the schema check refuses it
  const name: string = spec.serviceAccountName || spec.serviceAccount || "default";
  spec.serviceAccountName = name;
  spec.serviceAccount = name;
  const account = state.find(SERVICE_ACCOUNTS, namespace, name);
  if (!account)
    throw forbidden(
      PODS,
      pod.metadata.name ?? "",
      `error looking up service account ${namespace}/${name}: serviceaccount "${name}" not found`,
    );
  const automount =
    spec.automountServiceAccountToken ??
    (account as { automountServiceAccountToken?: boolean }).automountServiceAccountToken ??
    true;
  if (automount === false) return;
  const containers = [...(spec.initContainers ?? []), ...(spec.containers ?? [])] as Container[];
  const needing = containers.filter(
    (c) => c && typeof c === "object" && !(c.volumeMounts ?? []).some((m) => m?.mountPath === SERVICE_ACCOUNT_MOUNT),
  );
  if (!needing.length) return;
  const volume = `kube-api-access-${Array.from(randomBytes(5), (b) => ALPHABET[b % ALPHABET.length]).join("")}`;
  spec.volumes = [
    ...(spec.volumes ?? []),
    {
      name: volume,
      projected: {
        defaultMode: 0o644,
        sources: [
          { serviceAccountToken: { expirationSeconds: 3607, path: "token" } },
          { configMap: { name: ROOT_CA_CONFIGMAP, items: [{ key: "ca.crt", path: "ca.crt" }] } },
          {
            downwardAPI: {
              items: [{ path: "namespace", fieldRef: { apiVersion: "v1", fieldPath: "metadata.namespace" } }],
            },
          },
        ],
      },
    },
  ];
  for (const c of needing)
    c.volumeMounts = [...(c.volumeMounts ?? []), { name: volume, readOnly: true, mountPath: SERVICE_ACCOUNT_MOUNT }];
}
