/**
 * The FAKE cluster DNS's records: what a cluster's DNS (CoreDNS and its kubernetes plugin) answers
 * for a name, computed at each question from the API's current objects (so a change is seen at
 * once; the real one watches the API and answers with a 5 s TTL). After the page "DNS for Services
 * and Pods" (kubernetes.io/docs/concepts/services-networking/dns-pod-service/) and the DNS-based
 * service discovery specification it points to (github.com/kubernetes/dns, docs/specification.md):
 *
 * - a Service with a cluster IP: `<service>.<ns>.svc.<zone>` → its cluster IP (spec 2.3.1). The fake
 *   API server gives Services cluster IPs (kinds.ts, from 127.96.0.0/16), but nothing here routes
 *   them (no kube-proxy): the name resolves as in a cluster, connecting to it does not (inside a
 *   pod such an address is the pod's own loopback);
 * - a headless Service (`clusterIP: None`): `<service>.<ns>.svc.<zone>` → the addresses of its
 *   _ready_ endpoints, NXDOMAIN when it has none (spec 2.4.1). Endpoints come from the EndpointSlices
 *   labelled `kubernetes.io/service-name: <service>`, whoever manages them, as CoreDNS reads them;
 *   _ready_ is the endpoint's `conditions.ready` (nil counts as ready, as the EndpointSlice API
 *   reference says), which the EndpointSlice controller sets true for not-ready pods when the
 *   Service has `publishNotReadyAddresses` (so the page's "a Pod needs to be ready in order to have
 *   a record unless publishNotReadyAddresses=True" holds through the slice);
 * - `<hostname>.<service>.<ns>.svc.<zone>` → each ready endpoint of the headless Service whose
 *   `hostname` is `<hostname>` (spec 2.4.1); the EndpointSlice controller gives an endpoint the pod's
 *   `spec.hostname` when the pod's `spec.subdomain` is that Service, which is how a StatefulSet's
 *   pods (hostname = pod name, subdomain = `serviceName`) get their stable names;
 * - `<a>-<b>-<c>-<d>.<ns>.pod.<zone>` → a.b.c.d (spec 2.6, CoreDNS's `pods insecure`);
 * - names are compared case-insensitively (spec 2.1). A name under the zone that is none of these
 *   does not exist; so does every name outside the zone (no upstream: nothing beyond loopback and
 *   the pods' bridge is ever addressed).
 * Not modelled: SRV, PTR and the `dns-version` TXT record; ExternalName Services (a CNAME: their
 * names do not resolve here); IPv6 (AAAA).
 */
import type { KubeObject } from "./kinds";

/** Where the records come from: the API's objects (the kubelet's view of the API server). */
export interface ClusterDnsSource {
  read(plural: string, namespace: string, name: string): KubeObject | undefined;
  list(plural: string, namespace: string): KubeObject[];
}

type Endpoint = { addresses?: string[]; hostname?: string; conditions?: { ready?: boolean } };

export class ClusterDns {
  /** @param zone the cluster domain, "cluster.local" unless the cluster was set up with another */
  constructor(
    private readonly source: ClusterDnsSource,
    readonly zone = "cluster.local",
  ) {}

  /**
   * The A records of a fully qualified name (a trailing dot allowed), or undefined when the name
   * does not exist (NXDOMAIN). Never an empty list: a name here exists only with addresses.
   */
  lookup(name: string): string[] | undefined {
    const fqdn = name.toLowerCase().replace(/\.$/, "");
    const zone = this.zone.toLowerCase();
    if (!fqdn.endsWith(`.${zone}`)) return undefined;
    const labels = fqdn.slice(0, -zone.length - 1).split(".");
    if (labels.length === 3 && labels[2] === "pod") {
      const ip = /^(\d{1,3})-(\d{1,3})-(\d{1,3})-(\d{1,3})$/.exec(labels[0]!);
      return ip && ip.slice(1).every((o) => Number(o) <= 255) ? [ip.slice(1).map(Number).join(".")] : undefined;
    }
    if (labels.at(-1) !== "svc" || (labels.length !== 3 && labels.length !== 4)) return undefined;
    const [service, namespace] = labels.length === 3 ? [labels[0]!, labels[1]!] : [labels[1]!, labels[2]!];
    const svc = this.source.read("services", namespace, service);
    if (!svc || svc.spec?.type === "ExternalName") return undefined;
    const headless = svc.spec?.clusterIP === "None";
    if (labels.length === 3 && !headless) return svc.spec?.clusterIP ? [svc.spec.clusterIP as string] : undefined;
    if (!headless) return undefined; // only headless Services have names below them
    const hostname = labels.length === 4 ? labels[0] : undefined;
    const ips = new Set<string>();
    for (const e of this.endpoints(namespace, service)) {
      if (e.conditions?.ready === false) continue;
      if (hostname !== undefined && e.hostname?.toLowerCase() !== hostname) continue;
      for (const ip of e.addresses ?? []) ips.add(ip);
    }
    return ips.size ? [...ips] : undefined;
  }

  private endpoints(namespace: string, service: string): Endpoint[] {
    return this.source
      .list("endpointslices", namespace)
      .filter(
        (s) => s.metadata.labels?.["kubernetes.io/service-name"] === service && (s.addressType ?? "IPv4") === "IPv4",
      )
      .flatMap((s) => (s.endpoints ?? []) as Endpoint[]);
  }
}
