/**
 * Workload containers: what an operator declares under `containers:` in operator.yaml (one
 * container per name beside the agent container, Kubernetes only), and what the provisioner and
 * the agent agree on about them: the shared volume the supervisor is placed in, each supervisor's
 * socket, its health port, and the `<container>-workload-ready` hook. Browser-safe.
 *
 * ```yaml
 * containers:
 *   web:
 *     image: nginx:1.27
 *     ports: [{ name: http, containerPort: 8080 }]
 *     resources: { requests: { cpu: 100m, memory: 64Mi }, limits: { memory: 256Mi } }
 * ```
 */
import { POD_HEALTH_PORT } from "./kubernetes-pods";
import type { FormatFail as Fail } from "./operator-sections";
import { sectionEntries } from "./operator-sections";

export interface WorkloadContainerPort {
  name?: string;
  containerPort: number;
  protocol?: "TCP" | "UDP" | "SCTP";
}
export interface WorkloadResources {
  cpu?: string;
  memory?: string;
}
export interface WorkloadContainer {
  image: string;
  ports?: WorkloadContainerPort[];
  resources?: { requests?: WorkloadResources; limits?: WorkloadResources };
}

/** At most this many workload containers per operator (each gets its own supervisor health port). */
export const MAX_WORKLOAD_CONTAINERS = 16;
/** The agent container's name: no workload container may take it. */
export const AGENT_CONTAINER_NAME = "steward-agent";
/** The init container that places the supervisor. */
export const SUPERVISOR_INIT_CONTAINER = "steward-init";

/** The emptyDir shared by the init, agent and workload containers of a pod. */
export const WORKLOAD_SHARED_DIR = "/steward";
/** Where each supervisor listens, in the shared volume: the agent finds the containers there. */
export const WORKLOAD_SOCKET_DIR = `${WORKLOAD_SHARED_DIR}/run`;
export const SUPERVISOR_NODE = `${WORKLOAD_SHARED_DIR}/node`;
export const SUPERVISOR_SCRIPT = `${WORKLOAD_SHARED_DIR}/supervisor.js`;
export const supervisorSocket = (container: string, dir: string = WORKLOAD_SOCKET_DIR): string =>
  `${dir}/${container}.sock`;
/**
 * The supervisor of the i-th workload container (by name order) answers its container's probes on
 * this port (all containers share the pod's network, so each needs its own), as Juju gives each
 * workload's Pebble a port of its own.
 */
export const supervisorHealthPort = (index: number): number => POD_HEALTH_PORT + 1 + index;
export const SUPERVISOR_HEALTH_PATH = "/v1/health";
/** Ports an operator's container may not declare: the agent's and the supervisors'. */
export const RESERVED_PORTS = { from: POD_HEALTH_PORT, to: POD_HEALTH_PORT + MAX_WORKLOAD_CONTAINERS };

/** The hook a unit runs when a container's supervisor first answers (per supervisor start), as Juju's `<container>-pebble-ready`. */
export const WORKLOAD_READY_SUFFIX = "workload-ready";
export const workloadReadyHook = (container: string): string => `${container}-${WORKLOAD_READY_SUFFIX}`;

/** A DNS label (RFC 1123), as Kubernetes requires of container names. */
const DNS_LABEL = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
/** An IANA service name, as Kubernetes requires of port names: at most 15 characters, a letter, no `--`. */
const PORT_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
/** Kubernetes quantities: a decimal number with an optional binary (Ki…Ei), decimal (m, k, M…E) or exponent suffix. */
const QUANTITY = /^\+?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$/;
/** Image references: no spaces or control characters, not empty; the registry decides the rest. */
const IMAGE = /^[a-zA-Z0-9][a-zA-Z0-9._\-/:@]*$/;

const mapping = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function onlyKeys(
  o: Record<string, unknown>,
  known: string[],
  path: (string | number)[],
  fail: Fail,
  what: string,
): void {
  for (const k of Object.keys(o))
    if (!known.includes(k)) fail([...path, k], `is not a known ${what} field (known: ${known.join(", ")})`);
}

/** Why `q` is not a Kubernetes quantity, or undefined. */
export function quantityProblem(q: unknown, example: string): string | undefined {
  if (typeof q === "number" && Number.isFinite(q) && q >= 0) return undefined;
  if (typeof q !== "string" || !QUANTITY.test(q))
    return `must be a Kubernetes quantity such as ${example} (got ${JSON.stringify(q)})`;
  return undefined;
}

const SUFFIX: Record<string, number> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};

/** A quantity's value (cores or bytes), for comparing a request with its limit. */
export function quantityValue(q: string): number {
  const m = /^\+?([0-9.]+)(.*)$/.exec(q);
  if (!m) return NaN;
  const [, num, suffix] = m;
  if (!suffix) return Number(num);
  if (/^[eE]/.test(suffix)) return Number(`${num}${suffix}`);
  return Number(num) * (SUFFIX[suffix] ?? NaN);
}

function resources(raw: unknown, path: (string | number)[], fail: Fail): WorkloadResources {
  if (!mapping(raw)) return fail(path, "must be a mapping with cpu and/or memory, e.g. {cpu: 250m, memory: 128Mi}");
  onlyKeys(raw, ["cpu", "memory"], path, fail, "resource");
  const out: WorkloadResources = {};
  for (const k of ["cpu", "memory"] as const) {
    if (raw[k] === undefined) continue;
    const problem = quantityProblem(raw[k], k === "cpu" ? "500m or 2" : "128Mi or 1Gi");
    if (problem) fail([...path, k], problem);
    out[k] = String(raw[k]);
  }
  return out;
}

/**
 * Reads the `containers:` section (absent: none). `fail(path, problem)` throws the operator
 * format's error naming the field and its line.
 */
export function parseContainersSection(raw: unknown, fail: Fail): Record<string, WorkloadContainer> {
  const entries = sectionEntries(
    raw,
    "containers",
    {
      shape: "container name to {image, ports, resources}, e.g. containers: {web: {image: nginx:1.27}}",
      noun: "containers",
      max: MAX_WORKLOAD_CONTAINERS,
    },
    fail,
  );
  const names = entries.map(([name]) => name);
  const out: Record<string, WorkloadContainer> = {};
  const portNames = new Set<string>();
  for (const name of names.sort()) {
    const path = ["containers", name];
    if (name.length > 63 || !DNS_LABEL.test(name))
      fail(
        path,
        "is not a valid container name: lower-case letters, digits and hyphens, starting and ending with a letter or digit, at most 63 characters (a DNS label)",
      );
    if (name === AGENT_CONTAINER_NAME || name === SUPERVISOR_INIT_CONTAINER)
      fail(path, `is the name of a container Steward adds to every pod; choose another name`);
    const def = (raw as Record<string, unknown>)[name];
    if (!mapping(def)) fail(path, "must be a mapping with at least an image, e.g. {image: nginx:1.27}");
    const d = def as Record<string, unknown>;
    onlyKeys(d, ["image", "ports", "resources"], path, fail, "container");
    if (typeof d.image !== "string" || d.image.length === 0)
      fail(
        [...path, "image"],
        "is required: the OCI image the container runs, e.g. nginx:1.27 or registry.example.com/app@sha256:…",
      );
    if ((d.image as string).length > 512 || !IMAGE.test(d.image as string))
      fail([...path, "image"], "is not an image reference (no spaces or control characters), e.g. nginx:1.27");
    const c: WorkloadContainer = { image: d.image as string };
    if (d.ports !== undefined && d.ports !== null) {
      if (!Array.isArray(d.ports))
        fail(
          [...path, "ports"],
          "must be a list of {name, containerPort, protocol}, e.g. [{name: http, containerPort: 8080}]",
        );
      const seen = new Set<string>();
      c.ports = (d.ports as unknown[]).map((p, i) => {
        const pp = [...path, "ports", i];
        if (!mapping(p))
          return fail(pp, "must be a mapping with a containerPort, e.g. {name: http, containerPort: 8080}");
        onlyKeys(p, ["name", "containerPort", "protocol"], pp, fail, "port");
        const port = p.containerPort;
        if (!Number.isInteger(port) || (port as number) < 1 || (port as number) > 65535)
          fail([...pp, "containerPort"], "is required and must be a port number from 1 to 65535");
        if ((port as number) >= RESERVED_PORTS.from && (port as number) <= RESERVED_PORTS.to)
          fail(
            [...pp, "containerPort"],
            `is reserved for the agent's and the supervisors' probes (${RESERVED_PORTS.from}-${RESERVED_PORTS.to}); use another port`,
          );
        const protocol = p.protocol ?? "TCP";
        if (!["TCP", "UDP", "SCTP"].includes(protocol as string)) fail([...pp, "protocol"], "must be TCP, UDP or SCTP");
        const key = `${String(port)}/${String(protocol)}`;
        if (seen.has(key)) fail([...pp, "containerPort"], `declares ${key} twice in this container`);
        seen.add(key);
        const out: WorkloadContainerPort = {
          containerPort: port as number,
          ...(p.protocol !== undefined ? { protocol: protocol as "TCP" } : {}),
        };
        if (p.name !== undefined) {
          if (
            typeof p.name !== "string" ||
            p.name.length > 15 ||
            !PORT_NAME.test(p.name) ||
            !/[a-z]/.test(p.name) ||
            p.name.includes("--")
          ) {
            fail(
              [...pp, "name"],
              'must be at most 15 lower-case letters, digits and hyphens, with at least one letter and no "--" (an IANA service name), e.g. http',
            );
          }
          if (portNames.has(p.name as string))
            fail(
              [...pp, "name"],
              `is used by another port of this operator's containers; port names must be unique in the pod`,
            );
          portNames.add(p.name as string);
          out.name = p.name as string;
        }
        return out;
      });
    }
    if (d.resources !== undefined && d.resources !== null) {
      if (!mapping(d.resources))
        fail(
          [...path, "resources"],
          "must be a mapping with requests and/or limits, e.g. {requests: {cpu: 100m, memory: 64Mi}}",
        );
      const r = d.resources as Record<string, unknown>;
      onlyKeys(r, ["requests", "limits"], [...path, "resources"], fail, "resources");
      c.resources = {};
      if (r.requests !== undefined)
        c.resources.requests = resources(r.requests, [...path, "resources", "requests"], fail);
      if (r.limits !== undefined) c.resources.limits = resources(r.limits, [...path, "resources", "limits"], fail);
      for (const k of ["cpu", "memory"] as const) {
        const req = c.resources.requests?.[k],
          lim = c.resources.limits?.[k];
        // Kubernetes refuses such a pod; say so at upload rather than in a pod that never starts.
        if (req !== undefined && lim !== undefined && quantityValue(req) > quantityValue(lim))
          fail(
            [...path, "resources", "requests", k],
            `asks for ${req}, more than its limit ${lim}; a request may not exceed its limit`,
          );
      }
    }
    out[name] = c;
  }
  return out;
}
