/**
 * Two of kube-controller-manager's controllers, for every namespace of the fake API server: the
 * ServiceAccount controller (a ServiceAccount `default` in each namespace, made again if deleted)
 * and the root CA publisher (a ConfigMap `kube-root-ca.crt` holding the API server's CA as
 * `ca.crt`, which pods' projected token volumes carry). Namespaces being deleted are left alone.
 */
import { kindFor } from "./kinds";
import { ROOT_CA_CONFIGMAP } from "./service-account-admission";
import type { ApiState, StoreEvent } from "./state";
import { WorkQueue } from "./work-queue";

const NAMESPACES = kindFor("", "v1", "namespaces")!;
const SERVICE_ACCOUNTS = kindFor("", "v1", "serviceaccounts")!;
const CONFIGMAPS = kindFor("", "v1", "configmaps")!;

export class ServiceAccountControllers {
  private readonly work = new WorkQueue("fake ServiceAccount controllers", (ns) => this.sync(ns));
  private readonly unsubscribe: () => void;

  constructor(
    private readonly state: ApiState,
    private readonly caCert: string,
  ) {
    this.unsubscribe = state.subscribe((e) => this.observe(e));
    for (const ns of state.list(NAMESPACES)) this.work.add(ns.metadata.name!);
  }

  stop(): void {
    this.unsubscribe();
    this.work.stop();
  }

  private observe(e: StoreEvent): void {
    if (e.kind === NAMESPACES && e.type !== "DELETED") this.work.add(e.object.metadata.name!);
    else if (
      e.type === "DELETED" &&
      ((e.kind === SERVICE_ACCOUNTS && e.object.metadata.name === "default") ||
        (e.kind === CONFIGMAPS && e.object.metadata.name === ROOT_CA_CONFIGMAP))
    )
      this.work.add(e.object.metadata.namespace!);
  }

  private sync(ns: string): void {
    const space = this.state.find(NAMESPACES, undefined, ns);
    if (!space || space.metadata.deletionTimestamp) return;
    if (!this.state.find(SERVICE_ACCOUNTS, ns, "default"))
      this.state.create(SERVICE_ACCOUNTS, ns, { metadata: { name: "default" } });
    const cm = this.state.find(CONFIGMAPS, ns, ROOT_CA_CONFIGMAP);
    if (!cm)
      this.state.create(CONFIGMAPS, ns, {
        metadata: {
          name: ROOT_CA_CONFIGMAP,
          annotations: {
            "kubernetes.io/description":
              "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.",
          },
        },
        data: { "ca.crt": this.caCert },
      });
  }
}
