/**
 * The name-resolution files the FAKE kubelet gives each pod, bind-mounted over the container's own
 * /etc files (the process kubelet's containers otherwise see this machine's /etc):
 *
 * - `resolv.conf`, after "Pod's DNS Policy" and "Pod's DNS Config" on the page "DNS for Services and
 *   Pods" (kubernetes.io/docs/concepts/services-networking/dns-pod-service/): for `ClusterFirst`
 *   (the default) and `ClusterFirstWithHostNet`, the cluster DNS as nameserver, the search list
 *   `<ns>.svc.<zone> svc.<zone> <zone>` and `options ndots:5`, so `data` and `data.prod` expand as
 *   the page shows; `None` takes everything from `dnsConfig`; `dnsConfig` is merged in (its
 *   nameservers and searches appended without duplicates, its options overriding by name);
 *   `Default` keeps the node's file (none is written). The real kubelet also appends the node's own
 *   search domains: not here, the pods' network has no uplink.
 * - `hosts`, the kubelet-managed hosts file (kubernetes.io/docs/tasks/network/customize-hosts-file-for-pods/):
 *   localhost, the pod's IP with its hostname (`<hostname>.<subdomain>.<ns>.svc.<zone> <hostname>`
 *   when it has a subdomain, so a pod knows its own name before it is ready), then `hostAliases`.
 * - `nsswitch.conf`: this machine's, with `hosts: files dns`, as a container image has it. This
 *   machine's may put mDNS first (`mdns4_minimal [NOTFOUND=return]`, through the node's avahi
 *   daemon, whose socket the fake's containers would otherwise share); a container has no such
 *   module, and a pod's name lookups should go to the cluster DNS only. (libnss-mdns 0.15 here
 *   passes names of more than two labels on to `dns`, so cluster names resolve either way.)
 */
import type { KubeObject } from "./kinds";

export interface PodDnsFiles {
  /** Undefined when the pod keeps the node's (dnsPolicy Default). */
  "resolv.conf"?: string;
  hosts: string;
  "nsswitch.conf": string;
}

type DnsConfig = { nameservers?: string[]; searches?: string[]; options?: { name: string; value?: string }[] };

export function podDnsFiles(
  pod: KubeObject,
  o: { ip: string; nameserver: string; zone: string; nodeNsswitch: string },
): PodDnsFiles {
  const ns = pod.metadata.namespace!;
  const hostname: string = pod.spec?.hostname ?? pod.metadata.name!;
  const subdomain: string | undefined = pod.spec?.subdomain;
  const hostAliases = (pod.spec?.hostAliases ?? []) as { ip: string; hostnames?: string[] }[];
  const hosts =
    [
      "# Kubernetes-managed hosts file.",
      "127.0.0.1\tlocalhost",
      "::1\tlocalhost ip6-localhost ip6-loopback",
      "fe00::0\tip6-localnet",
      "fe00::0\tip6-mcastprefix",
      "fe00::1\tip6-allnodes",
      "fe00::2\tip6-allrouters",
      subdomain ? `${o.ip}\t${hostname}.${subdomain}.${ns}.svc.${o.zone}\t${hostname}` : `${o.ip}\t${hostname}`,
      ...(hostAliases.length
        ? ["", "# Entries added by HostAliases.", ...hostAliases.map((a) => [a.ip, ...(a.hostnames ?? [])].join("\t"))]
        : []),
    ].join("\n") + "\n";
  const nsswitch = o.nodeNsswitch.replace(/^hosts:.*$/m, "hosts:          files dns");
  return {
    "resolv.conf": resolvConf(pod, o),
    hosts,
    "nsswitch.conf": /^hosts:/m.test(nsswitch) ? nsswitch : `${nsswitch}hosts:          files dns\n`,
  };
}

function resolvConf(pod: KubeObject, o: { nameserver: string; zone: string }): string | undefined {
  const policy: string = pod.spec?.dnsPolicy ?? "ClusterFirst";
  if (policy === "Default") return undefined;
  const ns = pod.metadata.namespace!;
  const cluster = policy !== "None";
  const config: DnsConfig = pod.spec?.dnsConfig ?? {};
  const nameservers = unique([...(cluster ? [o.nameserver] : []), ...(config.nameservers ?? [])]);
  const searches = unique([
    ...(cluster ? [`${ns}.svc.${o.zone}`, `svc.${o.zone}`, o.zone] : []),
    ...(config.searches ?? []),
  ]);
  const options = new Map<string, string | undefined>(cluster ? [["ndots", "5"]] : []);
  for (const opt of config.options ?? []) options.set(opt.name, opt.value);
  return (
    [
      ...nameservers.map((s) => `nameserver ${s}`),
      ...(searches.length ? [`search ${searches.join(" ")}`] : []),
      ...(options.size
        ? [`options ${[...options].map(([k, v]) => (v === undefined ? k : `${k}:${v}`)).join(" ")}`]
        : []),
    ].join("\n") + "\n"
  );
}

const unique = (xs: string[]): string[] => [...new Set(xs)];
