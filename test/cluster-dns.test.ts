/**
 * Cluster DNS of the fake kubelet (test/harness/kube/cluster-dns.ts, dns-server.ts, pod-dns.ts),
 * checked against the page "DNS for Services and Pods" and the DNS-based service discovery
 * specification, from inside pods (glibc's getent and Node's dns.lookup, through the pod's own
 * resolv.conf and nsswitch.conf) and from the host (`kubelet.resolve`): a StatefulSet's pods by
 * `<hostname>.<subdomain>`, headless Services by their ready endpoints (all with
 * publishNotReadyAddresses), a Service by its cluster IP, short names only from their namespace,
 * and a recreated pod's name following its new IP.
 */
import test from "ava";
import type { ExecutionContext } from "ava";
import { Resolver } from "node:dns/promises";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FakeKubeApi, kindFor } from "./harness/kube";
import type { KubeObject } from "./harness/kube";
import { DnsServer } from "./harness/kube/dns-server";
import { podDnsFiles } from "./harness/kube/pod-dns";
import { ProcessKubelet } from "./harness/kube/process-kubelet";
import { eventually } from "./harness/eventually";

const SLICES = kindFor("discovery.k8s.io", "v1", "endpointslices")!;
const loadClient = () => import("@kubernetes/client-node");

async function start(t: ExecutionContext) {
  const dir = await mkdtemp(join(tmpdir(), "steward-dns-"));
  const kubelet = new ProcessKubelet({
    dataDir: join(dir, "node"),
    images: { "steward-test/shell": { entrypoint: ["/bin/sh", "-c"], cmd: ["sleep 3600"] } },
    restartBackoff: { initialMs: 300, maxMs: 2000 },
    maxGraceSeconds: 2,
  });
  const api = await FakeKubeApi.start({ kubelet });
  t.teardown(async () => {
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });
  const k8s = await loadClient();
  const kc = new k8s.KubeConfig();
  kc.loadFromString(api.kubeconfig());
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  for (const name of ["default", "other"]) await core.createNamespace({ body: { metadata: { name } } });
  const pod = async (name: string, namespace = "default"): Promise<KubeObject> =>
    (await core.readNamespacedPod({ name, namespace })) as unknown as KubeObject;
  /** The IPv4 addresses `name` resolves to inside a pod, by glibc's getaddrinfo (sorted; empty when it does not resolve). */
  const getent = async (namespace: string, from: string, name: string): Promise<string[]> => {
    const r = await kubelet.exec(namespace, from, "c", ["getent", "ahostsv4", name]);
    // 2 is getent's "not found"; anything else (the container not running…) must not pass for it.
    if (r.code !== 0 && r.code !== 2) throw new Error(`getent in ${namespace}/${from} exited ${r.code}: ${r.stderr}`);
    return [
      ...new Set(
        r.stdout
          .split("\n")
          .filter(Boolean)
          .map((l) => l.split(/\s+/)[0]!),
      ),
    ].sort();
  };
  /** A StatefulSet of `replicas` sleeping pods whose readiness is the file /state/ready (touch it with `makeReady`). */
  const statefulSet = (name: string, serviceName: string, replicas: number) =>
    apps.createNamespacedStatefulSet({
      namespace: "default",
      body: {
        apiVersion: "apps/v1",
        kind: "StatefulSet",
        metadata: { name },
        spec: {
          replicas,
          serviceName,
          podManagementPolicy: "Parallel",
          selector: { matchLabels: { app: name } },
          template: {
            metadata: { labels: { app: name } },
            spec: {
              terminationGracePeriodSeconds: 1,
              volumes: [{ name: "state", emptyDir: {} }],
              containers: [
                {
                  name: "c",
                  image: "steward-test/shell",
                  volumeMounts: [{ name: "state", mountPath: "/state" }],
                  readinessProbe: {
                    exec: { command: ["test", "-e", "/state/ready"] },
                    periodSeconds: 1,
                    failureThreshold: 1,
                  },
                },
              ],
            },
          },
        },
      } as never,
    });
  const service = (
    name: string,
    selector: Record<string, string>,
    o: { headless?: boolean; publishNotReadyAddresses?: boolean } = {},
  ) =>
    core.createNamespacedService({
      namespace: "default",
      body: {
        metadata: { name },
        spec: {
          selector,
          ports: [{ name: "http", port: 80 }],
          ...(o.headless ? { clusterIP: "None" } : {}),
          ...(o.publishNotReadyAddresses ? { publishNotReadyAddresses: true } : {}),
        },
      } as never,
    });
  const running = (name: string, namespace = "default") =>
    eventually(
      `${namespace}/${name} running`,
      async () => {
        const p = await pod(name, namespace).catch(() => undefined);
        return p?.status?.podIP && p.status.containerStatuses?.[0]?.state?.running ? p : undefined;
      },
      30_000,
    );
  const makeReady = async (name: string): Promise<void> => {
    const r = await kubelet.exec("default", name, "c", ["touch", "/state/ready"]);
    if (r.code !== 0) throw new Error(`could not make ${name} ready: ${r.stderr}`);
  };
  return { api, kubelet, core, pod, getent, statefulSet, service, running, makeReady };
}

test("pods resolve a StatefulSet's pods and Services by their cluster DNS names, short names only in their namespace", async (t) => {
  const { kubelet, core, getent, statefulSet, service, running, makeReady } = await start(t);
  await service("web-peers", { app: "web" }, { headless: true });
  await service("web", { app: "web" });
  await statefulSet("web", "web-peers", 2);
  const [web0, web1] = [await running("web-0"), await running("web-1")];
  await core.createNamespacedPod({
    namespace: "other",
    body: { metadata: { name: "client" }, spec: { containers: [{ name: "c", image: "steward-test/shell" }] } } as never,
  });
  await running("client", "other");
  const ip0: string = web0.status.podIP,
    ip1: string = web1.status.podIP;
  const clusterIp: string = (await core.readNamespacedService({ name: "web", namespace: "default" })).spec!.clusterIP!;

  // The kubelet's resolv.conf for dnsPolicy ClusterFirst, as the page shows it.
  const resolv = (await kubelet.exec("default", "web-0", "c", ["cat", "/etc/resolv.conf"])).stdout;
  t.regex(resolv, /^search default\.svc\.cluster\.local svc\.cluster\.local cluster\.local$/m);
  t.regex(resolv, /^options ndots:5$/m);
  t.regex(resolv, new RegExp(`^nameserver ${kubelet.gateway.replace(/\./g, "\\.")}$`, "m"));
  // A pod knows its own FQDN from its managed /etc/hosts, before it is ready.
  t.deepEqual(await getent("default", "web-0", "web-0.web-peers.default.svc.cluster.local"), [ip0]);
  t.is((await kubelet.exec("default", "web-0", "c", ["hostname"])).stdout.trim(), "web-0");

  // Not ready: no record for the pod, and a headless Service with no ready endpoint does not exist (spec 2.4.1).
  t.deepEqual(await getent("default", "web-0", "web-1.web-peers"), []);
  t.deepEqual(await getent("default", "web-0", "web-peers"), []);
  t.deepEqual(await kubelet.resolve("web-peers.default.svc.cluster.local"), []);
  // A normal Service has its cluster IP whatever its endpoints.
  t.deepEqual(await getent("default", "web-0", "web"), [clusterIp]);

  await makeReady("web-1");
  await eventually(
    "web-1 published",
    async () => (await getent("default", "web-0", "web-1.web-peers")).length > 0,
    15_000,
  );
  t.deepEqual(await getent("default", "web-0", "web-1.web-peers"), [ip1]);
  t.deepEqual(await getent("default", "web-0", "web-1.web-peers.default.svc.cluster.local"), [ip1]);
  t.deepEqual(await getent("default", "web-0", "web-peers"), [ip1], "only the ready pod");
  // The managed /etc/hosts holds only the FQDN and the hostname (no search list there): not ready, web-0.web-peers is unknown even to web-0.
  t.deepEqual(await getent("default", "web-0", "web-0.web-peers"), []);
  await makeReady("web-0");
  await eventually(
    "both ready pods behind the headless Service",
    async () => (await getent("default", "web-0", "web-peers")).length === 2,
    15_000,
  );
  t.deepEqual(await getent("default", "web-0", "web-0.web-peers"), [ip0]);
  t.deepEqual(await getent("default", "web-1", "web-peers.default.svc.cluster.local"), [ip0, ip1].sort());
  t.deepEqual(await getent("default", "web-1", "web-0.web-peers"), [ip0]);

  // Node's dns.lookup (getaddrinfo, what the product uses) inside a pod; any family, so AAAA is asked too (and has no data).
  const lookup = await kubelet.exec("default", "web-0", "c", [
    process.execPath,
    "-e",
    "require('dns').lookup(process.argv[1], { all: true }, (e, a) => { if (e) { console.error(e.code); process.exit(1); } console.log(a.map((x) => x.address).sort().join(' ')); })",
    "web-peers",
  ]);
  t.is(lookup.stdout.trim(), [ip0, ip1].sort().join(" "), lookup.stderr);
  // And c-ares (dns.resolve4), which asks resolv.conf's nameserver, never /etc/hosts (nor the search list: a fully qualified name).
  const resolve4 = await kubelet.exec("default", "web-0", "c", [
    process.execPath,
    "-e",
    "require('dns').resolve4(process.argv[1], (e, a) => { if (e) { console.error(e.code); process.exit(1); } console.log(a.join(' ')); })",
    "web-1.web-peers.default.svc.cluster.local",
  ]);
  t.is(resolve4.stdout.trim(), ip1, resolve4.stderr);

  // From another namespace the short names are another namespace's: the namespace must be named (the page's data / data.prod).
  t.deepEqual(await getent("other", "client", "web-1.web-peers"), []);
  t.deepEqual(await getent("other", "client", "web"), []);
  t.deepEqual(await getent("other", "client", "web-1.web-peers.default"), [ip1]);
  t.deepEqual(await getent("other", "client", "web.default"), [clusterIp]);
  t.deepEqual(await getent("other", "client", "web-peers.default.svc.cluster.local"), [ip0, ip1].sort());
  // Nothing outside the cluster domain resolves (no upstream).
  t.deepEqual(await getent("other", "client", "example.com"), []);

  // The host side asks the same server.
  t.deepEqual(await kubelet.resolve("web-1.web-peers.default.svc.cluster.local"), [ip1]);
  t.deepEqual(await kubelet.resolve("WEB-1.Web-Peers.default.svc.cluster.local."), [ip1], "case-insensitive");
  t.deepEqual(await kubelet.resolve("web-1.web-peers", "default"), [ip1]);
  t.deepEqual(await kubelet.resolve("web-1.web-peers", "other"), []);
  t.deepEqual(await kubelet.resolve("web-1.web-peers"), [], "not fully qualified, no namespace to expand it");
  t.deepEqual(await kubelet.resolve("web.default.svc.cluster.local"), [clusterIp]);
  t.deepEqual(await kubelet.resolve(`${ip1.replace(/\./g, "-")}.default.pod.cluster.local`), [ip1]);
});

test("a recreated pod's name follows its new IP, seen by its running peers", async (t) => {
  const { api, kubelet, core, pod, getent, statefulSet, service, running, makeReady } = await start(t);
  await service("db-peers", { app: "db" }, { headless: true });
  await statefulSet("db", "db-peers", 2);
  await running("db-0");
  const old = await running("db-1");
  await makeReady("db-0");
  await makeReady("db-1");
  await eventually("db-1 published", async () => (await getent("default", "db-0", "db-1.db-peers")).length > 0, 15_000);
  t.deepEqual(await getent("default", "db-0", "db-1.db-peers"), [old.status.podIP]);

  await core.deleteNamespacedPod({ name: "db-1", namespace: "default" });
  const back = await eventually(
    "db-1 back as a new pod",
    async () => {
      const p = await pod("db-1").catch(() => undefined);
      return p &&
        p.metadata.uid !== old.metadata.uid &&
        p.status?.podIP &&
        p.status.containerStatuses?.[0]?.state?.running
        ? p
        : undefined;
    },
    30_000,
  );
  t.not(back.status.podIP, old.status.podIP, "the new pod has a new IP (else this test proves nothing)");
  await makeReady("db-1");
  // Within a couple of seconds of it turning ready (probe period 1 s), db-0 resolves the new IP.
  const since = Date.now();
  let seen: string[] = [];
  await eventually(
    "db-0 resolving db-1's new IP",
    async () => (seen = await getent("default", "db-0", "db-1.db-peers")).join() === back.status.podIP,
    10_000,
  ).catch(async (err: Error) => {
    const raw = await kubelet.exec("default", "db-0", "c", ["getent", "ahostsv4", "db-1.db-peers"]);
    throw new Error(
      `${err.message}; db-0 resolved [${seen.join()}] (${JSON.stringify(raw)}), the host ${JSON.stringify(await kubelet.resolve("db-1.db-peers", "default"))}, the slice: ${JSON.stringify((await api.state.list(SLICES, "default")).map((s) => s.endpoints))}`,
    );
  });
  t.log(`db-0 saw the new IP ${Date.now() - since} ms after db-1 was made ready`);
  t.deepEqual(
    await getent("default", "db-0", "db-peers"),
    [(await pod("db-0")).status.podIP, back.status.podIP].sort(),
  );
});

test("publishNotReadyAddresses publishes not-ready pods, their names included; other Services still list only ready ones", async (t) => {
  const { kubelet, getent, statefulSet, service, running, makeReady } = await start(t);
  await service("boot-peers", { app: "boot" }, { headless: true, publishNotReadyAddresses: true });
  await service("boot-ready", { app: "boot" }, { headless: true });
  await statefulSet("boot", "boot-peers", 2);
  const [p0, p1] = [await running("boot-0"), await running("boot-1")];
  await makeReady("boot-0");
  await eventually(
    "boot-0 ready behind boot-ready",
    async () => (await getent("default", "boot-1", "boot-ready")).length > 0,
    15_000,
  );
  // boot-1 is not ready: published by boot-peers (its name too), not by boot-ready.
  t.deepEqual(await getent("default", "boot-0", "boot-1.boot-peers"), [p1.status.podIP]);
  t.deepEqual(await getent("default", "boot-0", "boot-peers"), [p0.status.podIP, p1.status.podIP].sort());
  t.deepEqual(await getent("default", "boot-0", "boot-ready"), [p0.status.podIP]);
  // Pod names live only under the Service their subdomain names.
  t.deepEqual(await getent("default", "boot-0", "boot-0.boot-ready"), []);
  t.deepEqual(await kubelet.resolve("boot-1.boot-peers.default.svc.cluster.local"), [p1.status.podIP]);
});

test("the DNS server answers as an authoritative server: A records, no data for other types of a name that exists, NXDOMAIN, truncation", async (t) => {
  const many = Array.from({ length: 40 }, (_, i) => `10.0.0.${i + 1}`);
  const server = await DnsServer.listen(
    "127.0.0.1",
    (name) =>
      (({ "a.test": ["10.0.0.1", "10.0.0.2"], "many.test": many }) as Record<string, string[]>)[name.toLowerCase()],
    { port: 0 },
  );
  t.teardown(() => server.close());
  const r = new Resolver({ timeout: 1000, tries: 1 });
  r.setServers([`127.0.0.1:${server.port}`]);
  t.deepEqual(
    (await r.resolve4("A.test", { ttl: true })).map((x) => [x.address, x.ttl]),
    [
      ["10.0.0.1", 5],
      ["10.0.0.2", 5],
    ],
  );
  await t.throwsAsync(r.resolve6("a.test"), { code: "ENODATA" });
  await t.throwsAsync(r.resolve4("b.test"), { code: "ENOTFOUND" });
  // 40 answers do not fit 512 bytes: the reply is cut and flagged, the client retries over TCP, which is not served.
  await t.throwsAsync(r.resolve4("many.test"));
});

test("the kubelet's pod files follow dnsPolicy and dnsConfig as documented; /etc/hosts names the pod and its hostAliases", (t) => {
  const o = {
    ip: "10.1.2.3",
    nameserver: "10.1.2.1",
    zone: "cluster.local",
    nodeNsswitch: "passwd: files\nhosts: files mdns4_minimal [NOTFOUND=return] dns\n",
  };
  const pod = (spec: Record<string, unknown>): KubeObject =>
    ({ metadata: { name: "p", namespace: "shop" }, spec: { containers: [], ...spec } }) as KubeObject;
  t.is(
    podDnsFiles(pod({}), o)["resolv.conf"],
    "nameserver 10.1.2.1\nsearch shop.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n",
  );
  // dnsConfig is merged into ClusterFirst's: nameservers and searches appended without duplicates, options overriding by name.
  const dnsConfig = {
    nameservers: ["10.1.2.1", "10.9.9.9"],
    searches: ["svc.cluster.local", "corp.example"],
    options: [{ name: "ndots", value: "2" }, { name: "edns0" }],
  };
  t.is(
    podDnsFiles(pod({ dnsConfig }), o)["resolv.conf"],
    "nameserver 10.1.2.1\nnameserver 10.9.9.9\nsearch shop.svc.cluster.local svc.cluster.local cluster.local corp.example\noptions ndots:2 edns0\n",
  );
  t.is(
    podDnsFiles(pod({ dnsPolicy: "None", dnsConfig: { nameservers: ["10.9.9.9"] } }), o)["resolv.conf"],
    "nameserver 10.9.9.9\n",
  );
  t.is(podDnsFiles(pod({ dnsPolicy: "Default" }), o)["resolv.conf"], undefined, "the node's own");
  const hosts = podDnsFiles(
    pod({
      hostname: "h",
      subdomain: "peers",
      hostAliases: [{ ip: "10.5.5.5", hostnames: ["a.example", "b.example"] }],
    }),
    o,
  ).hosts;
  t.regex(hosts, /^10\.1\.2\.3\th\.peers\.shop\.svc\.cluster\.local\th$/m);
  t.regex(hosts, /^10\.5\.5\.5\ta\.example\tb\.example$/m);
  t.regex(hosts, /^127\.0\.0\.1\tlocalhost$/m);
  t.regex(podDnsFiles(pod({}), o).hosts, /^10\.1\.2\.3\tp$/m, "no subdomain: the pod's name alone");
  t.is(podDnsFiles(pod({}), o)["nsswitch.conf"], "passwd: files\nhosts:          files dns\n");
});
