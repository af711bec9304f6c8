/**
 * The pod template of an application whose operator declares workload containers: the init
 * container placing the supervisor, the shared volume in every container, the supervisor as each
 * workload container's entrypoint, and probes that ask the supervisor only. Checked against the
 * official schema (kubernetes-models) too.
 */
import test from "ava";
import { StatefulSet } from "kubernetes-models/apps/v1";
import type { WorkloadContainer } from "../api";
import { kubernetes } from "../substrates";

const spec = (containers?: Record<string, WorkloadContainer>) =>
  kubernetes.statefulSetManifest({
    model: "m-uuid",
    namespace: "shop",
    app: "web",
    replicas: 2,
    agentImage: "steward/agent:0.1.0",
    ...(containers ? { containers } : {}),
  });
interface C {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  volumeMounts?: { name: string; mountPath: string }[];
  ports?: unknown[];
  resources?: unknown;
  livenessProbe?: { httpGet?: { port: number; path: string } };
  startupProbe?: { httpGet?: { port: number } };
  readinessProbe?: unknown;
}

test("without containers the pod is as before: the agent alone, no init container, no shared volume", (t) => {
  const s = spec();
  const pod = s.spec!.template.spec!;
  t.is(pod.initContainers, undefined);
  t.deepEqual(
    (pod.containers as C[]).map((c) => c.name),
    ["steward-agent"],
  );
  t.false(/"\/steward[/"]/.test(JSON.stringify(s)), "nothing of the supervisor");
  t.false((pod.containers[0] as C).args!.includes("--workload-sockets"));
});

test("workload containers: init container, shared volume, the supervisor as entrypoint, probes on the supervisor", (t) => {
  const s = spec({
    web: {
      image: "nginx:1.27",
      ports: [{ name: "http", containerPort: 8080 }],
      resources: { requests: { cpu: "100m", memory: "64Mi" }, limits: { memory: "256Mi" } },
    },
    cache: { image: "redis:7" },
  });
  t.notThrows(() => new StatefulSet(structuredClone(s) as never).validate(), "valid against the official schema");
  const pod = s.spec!.template.spec!;
  const init = pod.initContainers as C[];
  t.deepEqual(
    init.map((c) => [c.name, c.image, c.args]),
    [["steward-init", "steward/agent:0.1.0", ["--install-supervisor", "/steward"]]],
  );
  t.deepEqual(init[0]!.volumeMounts, [{ name: kubernetes.WORKLOAD_VOLUME, mountPath: "/steward" }]);
  t.truthy(
    (pod.volumes as { name: string; emptyDir?: object }[]).find(
      (v) => v.name === kubernetes.WORKLOAD_VOLUME && v.emptyDir,
    ),
  );
  const cs = pod.containers as C[];
  t.deepEqual(
    cs.map((c) => c.name),
    ["steward-agent", "cache", "web"],
    "the agent, then the workloads by name",
  );
  const agent = cs[0]!;
  t.true(agent.volumeMounts!.some((m) => m.mountPath === "/steward"));
  t.deepEqual(agent.args!.slice(-2), ["--workload-sockets", "/steward/run"]);
  const [cache, web] = [cs[1]!, cs[2]!];
  t.is(web.image, "nginx:1.27");
  t.deepEqual(cache.command, [
    "/steward/node",
    "/steward/supervisor.js",
    "--socket",
    "/steward/run/cache.sock",
    "--container",
    "cache",
    "--health-port",
    "38814",
  ]);
  t.deepEqual(web.command, [
    "/steward/node",
    "/steward/supervisor.js",
    "--socket",
    "/steward/run/web.sock",
    "--container",
    "web",
    "--health-port",
    "38815",
  ]);
  t.deepEqual(web.ports, [{ name: "http", containerPort: 8080, protocol: "TCP" }]);
  t.deepEqual(web.resources, { requests: { cpu: "100m", memory: "64Mi" }, limits: { memory: "256Mi" } });
  t.deepEqual(web.volumeMounts, [{ name: kubernetes.WORKLOAD_VOLUME, mountPath: "/steward" }]);
  // Liveness and startup ask the container's supervisor; readiness is the unit's, from the agent.
  t.deepEqual(web.livenessProbe!.httpGet, { path: "/v1/health", port: 38815 });
  t.is(web.startupProbe!.httpGet!.port, 38815);
  t.is(web.readinessProbe, undefined);
});

test("the template hash changes with the containers, so an upgraded operator's pods are rolled", (t) => {
  const hash = (c?: Record<string, WorkloadContainer>) => spec(c).metadata!.annotations![kubernetes.TEMPLATE_HASH];
  t.not(hash(), hash({ web: { image: "nginx:1.27" } }));
  t.not(hash({ web: { image: "nginx:1.27" } }), hash({ web: { image: "nginx:1.28" } }));
  t.is(hash({ web: { image: "nginx:1.27" } }), hash({ web: { image: "nginx:1.27" } }));
});
