/**
 * The EndpointSlice controller of the fake API server, after the EndpointSlices concepts page
 * (kubernetes.io/docs/concepts/services-networking/endpoint-slices): for each Service with a
 * selector, a slice (generateName `<service>-`, addressType IPv4) labelled
 * `kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by:
 * endpointslice-controller.k8s.io`, owned by the Service, listing every selected pod that has an IP
 * and has not finished: its address, `targetRef`, `nodeName`, `hostname` when the pod's subdomain
 * is this Service (the StatefulSet DNS names), and the conditions `ready` (the pod is Ready and not
 * terminating, or the Service publishes not-ready addresses), `serving` (Ready, terminating or
 * not) and `terminating`. Ports are the Service's, each at its numeric targetPort or at the
 * container port its name names. Services without a selector are left to their owners.
 * Not modelled: slices over 100 endpoints (one slice per Service here), topology hints, dual stack.
 */
import { kindFor } from "./kinds";
import type { KubeObject } from "./kinds";
import { podReady } from "./kubelet";
import type { ApiState, StoreEvent } from "./state";
import { WorkQueue } from "./work-queue";

const SERVICES = kindFor("", "v1", "services")!;
const PODS = kindFor("", "v1", "pods")!;
const SLICES = kindFor("discovery.k8s.io", "v1", "endpointslices")!;
const MANAGED_BY = "endpointslice-controller.k8s.io";

type Port = { name?: string; port: number; protocol?: string; targetPort?: number | string };

export class EndpointSliceController {
  private readonly work = new WorkQueue("fake EndpointSlice controller", (key) => this.sync(key));
  private readonly unsubscribe: () => void;

  constructor(private readonly state: ApiState) {
    this.unsubscribe = state.subscribe((e) => this.observe(e));
  }

  stop(): void {
    this.work.stop();
    this.unsubscribe();
  }

  private observe(e: StoreEvent): void {
    const ns = e.object.metadata.namespace!;
    if (e.kind === SERVICES) this.enqueue(`${ns}/${e.object.metadata.name}`);
    else if (e.kind === PODS) for (const s of this.state.list(SERVICES, ns)) this.enqueue(`${ns}/${s.metadata.name}`);
  }

  private enqueue(key: string, afterMs = 0): void {
    this.work.add(key, afterMs);
  }

  private sync(key: string): void {
    const [ns, name] = key.split("/") as [string, string];
    const svc = this.state.find(SERVICES, ns, name);
    if (!svc || svc.metadata.deletionTimestamp) return; // its slices go with it (ownerReferences)
    const selector: Record<string, string> | undefined = svc.spec?.selector;
    if (!selector || !Object.keys(selector).length) return;
    const pods = this.state.list(
      PODS,
      ns,
      (p) =>
        Object.entries(selector).every(([k, v]) => p.metadata.labels?.[k] === v) &&
        !!p.status?.podIP &&
        p.status?.phase !== "Succeeded" &&
        p.status?.phase !== "Failed",
    );
    const publishNotReady = svc.spec?.publishNotReadyAddresses === true;
    const endpoints = pods.map((p) => {
      const ready = podReady(p);
      const terminating = !!p.metadata.deletionTimestamp;
      return {
        addresses: [p.status.podIP as string],
        conditions: { ready: publishNotReady || (ready && !terminating), serving: ready, terminating },
        ...(p.spec?.hostname && p.spec?.subdomain === name ? { hostname: p.spec.hostname } : {}),
        targetRef: { kind: "Pod", namespace: ns, name: p.metadata.name, uid: p.metadata.uid },
        ...(p.spec?.nodeName ? { nodeName: p.spec.nodeName } : {}),
      };
    });
    const ports = ((svc.spec?.ports ?? []) as Port[])
      .map((sp) => ({
        name: sp.name ?? "",
        protocol: sp.protocol ?? "TCP",
        port: resolvePort(sp, pods),
      }))
      .filter((p): p is { name: string; protocol: string; port: number } => p.port !== undefined);
    const existing = this.state.list(
      SLICES,
      ns,
      (s) =>
        s.metadata.labels?.["kubernetes.io/service-name"] === name &&
        s.metadata.labels?.["endpointslice.kubernetes.io/managed-by"] === MANAGED_BY,
    );
    const [slice, ...extra] = existing;
    for (const x of extra) this.state.delete(SLICES, ns, x.metadata.name!, { preconditions: { uid: x.metadata.uid } });
    if (!slice) {
      this.state.create(SLICES, ns, {
        metadata: {
          generateName: `${name}-`,
          labels: { "kubernetes.io/service-name": name, "endpointslice.kubernetes.io/managed-by": MANAGED_BY },
          ownerReferences: [
            {
              apiVersion: "v1",
              kind: "Service",
              name,
              uid: svc.metadata.uid!,
              controller: true,
              blockOwnerDeletion: true,
            },
          ],
        },
        addressType: "IPv4",
        endpoints,
        ports,
      });
      return;
    }
    this.state.mutate(SLICES, ns, slice.metadata.name!, slice.metadata.uid!, (s: KubeObject) => {
      s.endpoints = endpoints;
      s.ports = ports;
    });
  }
}

/** A Service port's target: its numeric targetPort, or the container port its name names in a selected pod. */
function resolvePort(sp: Port, pods: KubeObject[]): number | undefined {
  const target = sp.targetPort ?? sp.port;
  if (typeof target === "number") return target;
  if (/^\d+$/.test(target)) return Number(target);
  for (const p of pods)
    for (const c of p.spec?.containers ?? [])
      for (const cp of c.ports ?? []) if (cp.name === target) return cp.containerPort;
  return undefined;
}
