/**
 * The connection a pod has to its own cluster ("Accessing the Kubernetes API from a Pod"): the API
 * server at `KUBERNETES_SERVICE_HOST`:`KUBERNETES_SERVICE_PORT`, its CA and the pod's ServiceAccount
 * token and namespace from the files the kubelet mounts at /var/run/secrets/kubernetes.io/serviceaccount.
 * The token is named by its file, not read once: the kubelet rotates it (projected tokens live an
 * hour by default), and the client reads it again when the file changes.
 */
import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import { join } from "node:path";
import { KubeConnection } from "./kubeconfig";

export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

export interface InClusterOptions {
  /** @default process.env */
  env?: Record<string, string | undefined>;
  /** Where the token, ca.crt and namespace are. @default {@link SERVICE_ACCOUNT_DIR} */
  dir?: string;
}

export function inClusterConnection(o: InClusterOptions = {}): KubeConnection {
  const env = o.env ?? process.env;
  const dir = o.dir ?? SERVICE_ACCOUNT_DIR;
  const host = env.KUBERNETES_SERVICE_HOST,
    port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port)
    throw new Error("not in a Kubernetes pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set");
  const read = (name: string, what: string): string => {
    try {
      return readFileSync(join(dir, name), "utf8");
    } catch (err) {
      throw new Error(
        `in-cluster Kubernetes configuration: cannot read the pod's ${what} ${join(dir, name)} (is automountServiceAccountToken off for this pod?): ${(err as Error).message}`,
      );
    }
  };
  const caCert = read("ca.crt", "cluster CA");
  const namespace = read("namespace", "namespace").trim();
  read("token", "ServiceAccount token"); // there now, or a clear error now rather than at the first call
  return new KubeConnection({
    server: `https://${isIP(host) === 6 ? `[${host}]` : host}:${port}`,
    caCert,
    namespace,
    context: "in-cluster",
    credential: { tokenFile: join(dir, "token") },
  });
}
