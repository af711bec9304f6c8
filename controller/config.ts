/**
 * A controller's data directory and its configuration file. Layout:
 * `controller.json`, `ca.crt`, `ca.key` and `server.key` (0600), `server.crt`, `store/`,
 * `machines/` (local substrate), `api-address` (written once listening).
 */
import { readFile } from "node:fs/promises";
import { isAbsolute, join, resolve } from "node:path";
import { STEWARD_VERSION, StewardError } from "../api";
import { dataFiles } from "../substrates";
import { releaseKeyProblem } from "./releases/release-keys";
import type { ReleaseSourceConfig } from "./releases/release-source";
import type { PodProbeSettings } from "../substrates";

/** The controller's settings for models whose units are pods: their agent image and the agent container's probes. */
export interface PodModelsConfig {
  agentImage?: string;
  probes?: PodProbeSettings;
}
import type { StoreConfig } from "./store";

/**
 * What a replica's configuration says about its etcd member (cluster/etcd-member.ts runs it). Here, with the
 * rest of controller.json, so that reading the configuration does not import the cluster.
 */
export interface MemberConfig {
  /** The member's etcd name, also the replica's id: unique per incarnation (`<host>-<4 hex>`). */
  name: string;
  /** The host's address other members and the controller's peers dial. */
  host: string;
  /** @default 2379 */
  clientPort?: number;
  /** @default 2380 */
  peerPort?: number;
  /** `name=https://host:port,...` as etcd wants it: used only when the data directory is empty. */
  initialCluster: string;
  initialState: "new" | "existing";
  /** Shared by the members of one cluster (the controller's uuid or name). */
  clusterToken: string;
  /** The etcd binary. @default `etcd` on the PATH */
  binary?: string;
  /** etcd raft timing in ms; all members must agree. @default 100 and 1000 (etcd's defaults) */
  heartbeatMs?: number;
  electionMs?: number;
}

export interface ControllerConfig {
  name: string;
  /** Where the API listens. Port 0 picks a free port (tests). */
  listen: { host: string; port: number };
  /** Addresses given to clients and agents; default: the listen address (127.0.0.1 for 0.0.0.0). */
  advertise?: string[];
  /** `embedded` (default, single replica) or an etcd cluster (required for 3/5/7 replicas). */
  store: StoreConfig;
  /** Seconds a unit leadership claim lasts (default 60). */
  leadershipLeaseSeconds?: number;
  /** The etcd member this replica runs (replicas of an HA controller); absent on the embedded store. */
  member?: MemberConfig;
  /** Operator storage; defaults in api/limits.ts. */
  operators?: OperatorStorageConfig;
  /** Backups kept on the controller: `{keep, quotaBytes}` (defaults in backup/kept-backups.ts). */
  backups?: { keep?: number; quotaBytes?: number };
  /** The cloud instance or VM a bootstrap launched this replica on: recorded with it once it is an etcd member (show-controller). */
  instance?: { id: string };
  /**
   * Kubernetes models: the image of the agent container in their pods (default {@link DEFAULT_AGENT_IMAGE}:
   * push the build's image to your registry and name it here), and the agent container's probes
   * (default Juju's: liveness every 5 s, timeout 1 s, 3 failures; startup every 1 s, 30 failures).
   */
  kubernetes?: PodModelsConfig;
  /**
   * Where this controller was bootstrapped: `local` (steward bootstrap local), or a remote host.
   * Absent in files written before it was recorded: then local when it listens on loopback only.
   */
  substrate?: "local" | "remote";
  /** Local machines: agent processes on this controller's host (see {@link LocalMachinesConfig}). */
  localMachines?: LocalMachinesConfig;
  /**
   * Signed releases this controller offers (`steward upgrade-model`; nothing is applied on its own):
   * `source`, a directory of `<version>/` release directories (controller/releases) or the
   * `https://` URL of a release index (with `caFile`, the CAs trusted for it), and `keys`, the
   * ed25519 public keys (`ed25519:…`) trusted to sign them. A release signed by no trusted key, or
   * whose files differ from its manifest, is listed as refused and never used. The leader looks at
   * the source every `pollSeconds` (default 60) and holds what it verified in the store, for every replica.
   * A `caFile` given as a file name alone is in the data directory. Replicas added later get the keys, the poll interval and
   * an HTTPS source with its CAs (replica-data.ts); a directory is on the first replica's host only.
   */
  releases?: { source?: string; keys?: string[]; pollSeconds?: number; caFile?: string };
}

/** How often the leader looks at the release source when controller.json does not say. */
export const DEFAULT_RELEASE_POLL_SECONDS = 60;

/**
 * Local machines run on the controller's host, beside its CA key and store: a superuser's
 * development substrate, so only superusers make them, and a controller not bootstrapped locally
 * makes none unless turned on here.
 */
/**
 * The release source controller.json names, with the keys it trusts and how often the leader looks;
 * an HTTPS source is mirrored into the data directory's `release-mirror/`.
 */
export function releaseSourceOf(
  config: ControllerConfig,
  dataDir: string,
): (ReleaseSourceConfig & { pollSeconds: number }) | undefined {
  const r = config.releases;
  if (!r?.source) return undefined;
  const common = { keys: r.keys ?? [], pollSeconds: r.pollSeconds ?? DEFAULT_RELEASE_POLL_SECONDS };
  if (sourceKind(r.source) === "directory") return { dir: r.source, ...common };
  return {
    dir: join(dataDir, dataFiles.releaseMirror),
    https: { url: r.source, ...(r.caFile ? { caFile: resolve(dataDir, r.caFile) } : {}) },
    ...common,
  };
}

/** What kind of release source `source` names: an absolute directory, an https:// URL, or neither. */
export function sourceKind(source: string): "directory" | "https" | undefined {
  if (isAbsolute(source)) return "directory";
  try {
    return new URL(source).protocol === "https:" ? "https" : undefined;
  } catch {
    return undefined;
  }
}

export interface LocalMachinesConfig {
  /** Allow local machines on a controller that was not bootstrapped locally. @default false (true on a local controller) */
  enabled?: boolean;
  /** Most local machines on this host at once. @default 32 (DEFAULT_LOCAL_MACHINES_PER_HOST) */
  maxPerHost?: number;
  /** Who agents run as when the controller runs as root (never root itself). @default "steward-agent", created if missing */
  agentUser?: string;
  /**
   * Where agents' directories are when they run as another user: outside the data directory, which
   * that user must not read (`machines/` in it becomes a link here).
   * @default /var/lib/steward/local-machines/<controller uuid>
   */
  agentsDir?: string;
}

/** The agent image a Kubernetes model's pods run when the controller's configuration names none. */
export const DEFAULT_AGENT_IMAGE = `steward/agent:${STEWARD_VERSION}`;

export interface OperatorStorageConfig {
  /** Most bytes all stored operator bundles may take together. @default 128 MiB */
  quotaBytes?: number;
  /** The part of `quotaBytes` only superusers' uploads may fill. @default a quarter of quotaBytes */
  reservedBytes?: number;
  /** Most bytes of distinct operators one model's applications may use (superusers excepted). @default 64 MiB */
  modelQuotaBytes?: number;
  /** Most bytes the stored operators one user uploaded may take, across models (superusers excepted). @default 64 MiB */
  userQuotaBytes?: number;
  /** An operator no application uses is deleted this long after its upload or last use. @default 3600 */
  unusedGraceSeconds?: number;
}

export {
  AGENT_BUNDLE,
  AGENT_NODE_FLAGS,
  CLI_BUNDLE,
  cliEntry,
  CONTROLLER_BUNDLE,
  CONTROLLER_NODE_FLAGS,
  controllerFiles,
  dataFiles,
  enrolmentFiles,
  findOnPath,
} from "../substrates";

/**
 * Whether this controller was bootstrapped locally, so makes local machines without being told to.
 * A file from before `substrate` was recorded: when it listens on loopback only (remote installs
 * listen on every address).
 */
export function isLocalController(config: ControllerConfig): boolean {
  if (config.substrate) return config.substrate === "local";
  if (config.member || config.instance || config.kubernetes) return false;
  return /^(127\.\d+\.\d+\.\d+|::1|\[::1\]|localhost)$/.test(config.listen.host);
}

/** The host (no port, no brackets) other hosts reach this replica at. */
export function advertisedHost(config: ControllerConfig): string {
  return (config.advertise?.[0] ?? config.listen.host).replace(/:\d+$/, "").replace(/^\[|\]$/g, "");
}

export async function readControllerConfig(dataDir: string): Promise<ControllerConfig> {
  const path = join(dataDir, dataFiles.config);
  const text = await readFile(path, "utf8").catch(() => {
    throw new StewardError(
      "invalid-request",
      `${path} not found: ${dataDir} is not a controller data directory (create one with steward bootstrap)`,
    );
  });
  const config = JSON.parse(text) as ControllerConfig;
  const releases = config.releases;
  if (releases) {
    const wrong = (why: string): never => {
      throw new StewardError("invalid-request", `${path}: releases: ${why}`);
    };
    if (releases.source !== undefined && !(typeof releases.source === "string" && sourceKind(releases.source)))
      wrong("source must be the absolute path of a directory of releases, or the https:// URL of a release index");
    // A plain file name is in the data directory (the copy a replica added later is given).
    if (
      releases.caFile !== undefined &&
      !(typeof releases.caFile === "string" && (isAbsolute(releases.caFile) || /^[\w.-]+$/.test(releases.caFile)))
    )
      wrong("caFile must be the absolute path of a PEM file of CA certificates, or a file name in the data directory");
    if (releases.caFile !== undefined && sourceKind(releases.source ?? "") !== "https")
      wrong("caFile is for an https:// source");
    if (releases.keys !== undefined && !Array.isArray(releases.keys))
      wrong("keys must be a list of ed25519:… public keys");
    for (const key of releases.keys ?? []) {
      const problem = releaseKeyProblem(String(key));
      if (problem) wrong(`keys: ${problem}`);
    }
    const poll = releases.pollSeconds;
    if (poll !== undefined && !(Number.isInteger(poll) && poll >= 1 && poll <= 86_400))
      wrong("pollSeconds must be a whole number of seconds from 1 to 86400");
    if (releases.source && !releases.keys?.length)
      wrong("a source needs keys: a release is used only when signed by a key this controller trusts");
  }
  return config;
}
