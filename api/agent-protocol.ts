/**
 * The agent ↔ controller protocol over one WebSocket. Frames are JSON:
 * `{t:"req", id, method, params}` answered by `{t:"res", id, result}` or `{t:"res", id, error}`,
 * and `{t:"push", topic, data}` for one-way news (the controller pushes the agent's view).
 */
import { z } from "zod";
import type { WireError } from "./errors";
import { WorkloadStatusValue } from "./schemas";
import { DATABAG_LIMIT_BYTES, HOOK_FAILURE_OUTPUT_MAX_CHARS, TASK_LIMITS } from "./limits";
import { isNormalisedPort } from "./ports";
import { LOG_BATCH_MAX_RECORDS, LOG_LEVELS, LOG_MESSAGE_MAX_CHARS } from "./debug-log";
import type { MigrationView } from "./migration";
import { MIGRATION_PHASES } from "./migration";
import type { MachineVolumeWork } from "./storage";
import { MAX_STORAGE_COUNT, STORAGE_TYPES } from "./storage";
import { ROTATE_POLICIES, SECRET_ID_PATTERN, SECRET_LIMITS } from "./secrets";

export const AGENT_PROTOCOL_VERSION = 1;

/** One integration as a unit sees it. */
export interface RelationView {
  /** Model-wide integration id. */
  id: number;
  /** This unit's endpoint in the integration. */
  endpoint: string;
  interface: string;
  role: "provider" | "requirer" | "peer";
  /** The application on the other side (the unit's own for a peer relation). */
  remoteApp: string;
  life: "alive" | "dying";
  /** Remote units that have entered the integration, each with the revision of its databag (0: empty). */
  remoteUnits: Record<string, number>;
  /** Revision of the remote application's databag (0: empty). */
  remoteAppVersion: number;
}

export interface UnitView {
  name: string;
  app: string;
  life: "alive" | "dying";
  operator: { hash: string; name: string; version: string };
  /** The effective config: operator defaults overlaid with the values set on the application. */
  config: Record<string, string | number | boolean>;
  /** Its application's own leadership lease in seconds; absent: the view's `leadershipLeaseSeconds`. */
  leadershipLeaseSeconds?: number;
  /** This unit holds its application's leadership. */
  leader: boolean;
  /** Some unit of the application holds leadership (false while it is being decided). */
  leaderKnown: boolean;
  /** Revision of the application's leader data (0: none set yet). */
  leaderSettingsVersion: number;
  relations: RelationView[];
  /** A `steward resolve` waiting to be acted on. */
  resolve?: "retry" | "no-retry";
  /** Actions queued for this unit (`steward run`), oldest first; absent when none are. */
  actions?: QueuedAction[];
  /** Storage attached to this unit, by id; absent when it has none. */
  storage?: UnitStorageView[];
  /** The secrets this unit may read (it owns them, its application does, or they were granted to it), by uri; absent when none. */
  secrets?: UnitSecretView[];
}

/**
 * A secret as one unit sees it: never its values (`secret.get` asks for them, and the controller
 * checks the unit may read them then). What is here decides the unit's secret hooks.
 */
export interface UnitSecretView {
  /** `secret:<id>` */
  uri: string;
  /** The label this unit knows it by: the owner's label, or the one this unit gave it as a consumer. */
  label?: string;
  /** This unit manages it: it owns it, or its application does and it is the leader. Absent: it reads it only. */
  owner?: true;
  /** The newest revision. */
  latest: number;
  /** The revision this unit tracks as a consumer (absent: it has not read it yet). */
  tracked?: number;
  /** Owner only: rotation fell due at this time (a later time when it is due again after a rotate hook set no new revision). */
  rotateDue?: string;
  /** Owner only: revisions whose expiry has passed. */
  expired?: number[];
  /** Owner only: revisions older than the latest that no consumer tracks any more (its secret-remove hooks). */
  obsolete?: number[];
}

/**
 * A storage instance attached to a unit. Without a `location` its volume broker has not attached it
 * yet: a unit waits for the storage it is deployed with before `install` (as in Juju).
 */
export interface UnitStorageView {
  /** `data/0` */
  id: string;
  kind: "filesystem" | "block";
  /** MiB */
  size: number;
  pool: string;
  location?: string;
  /** `dying`: `detach-storage` asked for it: the unit runs its `-storage-detaching` hook, then releases it. */
  life?: "dying";
}

/** One action a unit is to run: task ids grow with every run in the model, so an agent runs each once. */
export interface QueuedAction {
  id: number;
  action: string;
  params: Record<string, string | number | boolean>;
}

/**
 * The agent release `steward upgrade-model` asked this machine to run: the agent downloads it
 * (`GET /v1/agent-releases/:version`), checks it against `hash`, and switches when idle. Each
 * request is a new `attempt`: a release that failed is not tried again until the next one.
 */
export interface AgentReleaseTarget {
  version: string;
  /** The release's content hash (api/operator.ts bundleHash of its files). */
  hash: string;
  attempt: number;
  /** How long the new agent has to come up and report before it is taken back, in seconds. */
  trialSeconds: number;
}

/** Everything one machine agent needs to know; pushed whole whenever any of it changes. */
export interface AgentView {
  model: { uuid: string; name: string };
  /** When the machine is being removed, an agent that installed itself uninstalls itself. */
  machine: { id: string; life: "alive" | "dying"; agentRelease?: AgentReleaseTarget };
  /** Seconds between update-status hooks. */
  updateStatusInterval: number;
  /** Whether failed hooks are retried automatically (else they wait for `steward resolve`). */
  retryHooks: boolean;
  /** Seconds a leadership claim lasts unless the unit's application has its own; agents renew at half of it. */
  leadershipLeaseSeconds: number;
  units: UnitView[];
  controllerAddresses: string[];
  /**
   * Present once the controller was restored from a backup. `epoch` changes at every restore;
   * revisions an agent saw after `revision` under another epoch belong to a history that was lost
   * (and may be given out again), and task ids above `taskSeq` likewise.
   */
  restore?: { epoch: string; revision: number; taskSeq: number };
  /** Present while the model is being migrated to another controller (api/migration.ts). */
  migration?: MigrationView;
  /** The machine halves of storage attachments this machine's agent does (agent/machine-storage.ts); absent when none. */
  machineStorage?: MachineStorageWork[];
}

/**
 * One storage instance's machine half, as its machine's agent is told it. `attach`: do `work` (for
 * every instance attached on the machine, so a reboot mounts them again) and report the location;
 * `release`: undo it (unmount) since its unit went, and with `destroy` delete a directory instance
 * too (only the agent can reach it); report it released.
 */
export interface MachineStorageWork {
  /** `data/0` */
  id: string;
  op: "attach" | "release";
  work: MachineVolumeWork;
  destroy?: true;
}

/** An absolute path without `..`, NUL or newlines, as locations, mount points and devices are. */
const AbsolutePath = z
  .string()
  .max(4096)
  .regex(/^\/[^\0\n]*$/, { message: "must be an absolute path" })
  .refine((p) => !p.split("/").includes(".."), { message: "must not contain '..'" });
/** A name under /dev/disk/by-id: one path part. */
const ByIdName = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[^/\0\n]+$/, { message: "must be a name under /dev/disk/by-id" })
  .refine((n) => n !== "." && n !== "..", { message: "must be a name under /dev/disk/by-id" });

/** api/storage.ts's {@link MachineVolumeWork} checked (storage documents). */
export const MachineVolumeWorkSchema = z.discriminatedUnion("mode", [
  z.strictObject({ mode: z.literal("directory"), path: AbsolutePath }),
  z.strictObject({
    mode: z.literal("device"),
    device: z.strictObject({ byId: z.array(ByIdName).max(16).optional(), path: AbsolutePath.optional() }),
    kind: z.enum(STORAGE_TYPES),
    mountPoint: AbsolutePath.optional(),
  }),
]);

export type AgentFrame =
  | { t: "req"; id: number; method: string; params: unknown }
  | { t: "res"; id: number; result?: unknown; error?: WireError }
  | { t: "push"; topic: string; data: unknown };

export const UnitStatusReport = z.strictObject({
  unit: z.string(),
  workload: z
    .strictObject({ current: z.union([WorkloadStatusValue, z.literal("error")]), message: z.string().max(1024) })
    .optional(),
  agent: z
    .strictObject({ current: z.enum(["allocating", "executing", "idle", "error"]), message: z.string().max(1024) })
    .optional(),
  version: z.string().max(256).optional(),
  /** With an error status: the hook that failed and the last lines of its output (for `show-unit`). */
  failure: z
    .strictObject({ hook: z.string().max(256), output: z.string().max(HOOK_FAILURE_OUTPUT_MAX_CHARS) })
    .optional(),
  /** With idle: the operator content and config hash its hooks have run with (api/status.ts AppliedChange). */
  applied: z.strictObject({ operator: z.string().max(128), config: z.string().max(128) }).optional(),
});
export type UnitStatusReport = z.infer<typeof UnitStatusReport>;

export const UnitDeadReport = z.strictObject({ unit: z.string() });
export const MachineInfoReport = z.strictObject({
  hostname: z.string().max(255),
  address: z.string().max(255),
  os: z.string().max(255),
  agentVersion: z.string().max(64),
  /** The last agent release this machine went back from, and why (agent-release.ts). */
  agentUpgradeFailure: z
    .strictObject({ version: z.string().max(64), attempt: z.number().int().min(1), message: z.string().max(1024) })
    .optional(),
});

/** Relation and leader data values are strings, as in Juju; `null` deletes a key. */
const DataPatch = z.record(z.string().min(1).max(256), z.string().max(DATABAG_LIMIT_BYTES).nullable());
const UnitOnly = z.strictObject({ unit: z.string() });
/** A unit's hook state as its agent keeps it (its committed-hook history is capped): far below this. */
export const UNIT_HOOK_STATE_MAX_CHARS = 256 * 1024;

/** As the hook tools normalise them (api/ports.ts); an agent sending anything else is refused. */
const Port = z.string().max(16).refine(isNormalisedPort, {
  message: "must be a port such as 80/tcp, 53/udp, 8000-8010/tcp or icmp, with ports in 1-65535",
});

const SecretUriSchema = z
  .string()
  .max(64)
  .refine((u) => u.startsWith("secret:") && SECRET_ID_PATTERN.test(u.slice(7)), { message: "must be secret:<id>" });
/** Keys and values are checked by api/secrets.ts secretContentProblem where they are applied (it names the limit). */
const SecretContentSchema = z.record(z.string().max(64), z.string().max(SECRET_LIMITS.contentBytes));
const SecretMeta = {
  label: z.string().min(1).max(SECRET_LIMITS.labelChars).optional(),
  description: z.string().max(SECRET_LIMITS.descriptionChars).optional(),
  /** RFC 3339; `null` clears an expiry (set only). */
  expireAt: z.string().max(40).nullable().optional(),
  rotate: z.enum(ROTATE_POLICIES).optional(),
};
/**
 * One secret change a hook made (the secret-* tools), applied with the hook's other writes or not at
 * all. `add` carries the id the agent made; `track` is a consumer moving to a revision (`secret-get
 * --refresh`, or its first read) and naming it with its own label.
 */
export const SecretChangeSchema = z.discriminatedUnion("op", [
  z.strictObject({
    op: z.literal("add"),
    uri: SecretUriSchema,
    owner: z.enum(["application", "unit"]),
    content: SecretContentSchema,
    ...SecretMeta,
  }),
  z.strictObject({
    op: z.literal("set"),
    uri: SecretUriSchema,
    content: SecretContentSchema.optional(),
    ...SecretMeta,
  }),
  z.strictObject({
    op: z.literal("grant"),
    uri: SecretUriSchema,
    relationId: z.number().int(),
    unit: z.string().max(128).optional(),
  }),
  z.strictObject({
    op: z.literal("revoke"),
    uri: SecretUriSchema,
    relationId: z.number().int(),
    unit: z.string().max(128).optional(),
  }),
  z.strictObject({ op: z.literal("remove"), uri: SecretUriSchema, revision: z.number().int().min(1).optional() }),
  z.strictObject({
    op: z.literal("track"),
    uri: SecretUriSchema,
    revision: z.number().int().min(1),
    label: z.string().min(1).max(SECRET_LIMITS.labelChars).optional(),
  }),
]);
export type SecretChange = z.infer<typeof SecretChangeSchema>;

export const HookCommit = z.strictObject({
  unit: z.string(),
  relations: z
    .array(z.strictObject({ relationId: z.number().int(), app: z.boolean(), set: DataPatch }))
    .max(1000)
    .default([]),
  ports: z.strictObject({ open: z.array(Port).max(1000), close: z.array(Port).max(1000) }).optional(),
  /** Relations the unit enters with this commit (its relation-created hooks). */
  enterScope: z.array(z.number().int()).max(1000).default([]),
  /** `storage-add name=count`: new instances of the unit's declared stores, within each one's count range. */
  storage: z
    .record(z.string().regex(/^[a-z][a-z0-9-]{0,62}$/), z.number().int().min(1).max(MAX_STORAGE_COUNT))
    .optional(),
  /** The secret-* tools' changes, in the order the hook made them. */
  secrets: z.array(SecretChangeSchema).max(100).optional(),
});
export type HookCommit = z.infer<typeof HookCommit>;

export const RelationGet = z.strictObject({
  unit: z.string(),
  relationId: z.number().int(),
  target: z.strictObject({ unit: z.string().optional(), app: z.string().optional() }),
});
export const RelationLeave = z.strictObject({ unit: z.string(), relationId: z.number().int() });
export const LeaderSet = z.strictObject({ unit: z.string(), data: DataPatch });
export const AppStatusReport = z.strictObject({
  unit: z.string(),
  status: WorkloadStatusValue,
  message: z.string().max(1024),
});

const AgentLogRecordSchema = z.strictObject({
  ts: z.string().max(40),
  level: z.enum(LOG_LEVELS),
  source: z.enum(["agent", "hook", "operator"]),
  unit: z.string().max(256).optional(),
  hook: z.string().max(256).optional(),
  message: z.string().max(LOG_MESSAGE_MAX_CHARS),
});
/** Log records for `steward debug-log`, with how many the agent dropped since its last batch. */
export const LogBatch = z.strictObject({
  records: z.array(AgentLogRecordSchema).max(LOG_BATCH_MAX_RECORDS),
  dropped: z.number().int().min(0).default(0),
});
export type LogBatch = z.infer<typeof LogBatch>;

/** The agent is about to run a queued action: refused when it was cancelled or its unit removed. */
export const TaskStart = z.strictObject({ unit: z.string(), id: z.number().int().min(1) });
/** A finished action: its outcome, what it set with action-set, its action-log lines and output's end. */
export const TaskFinish = z.strictObject({
  unit: z.string(),
  id: z.number().int().min(1),
  status: z.enum(["completed", "failed"]),
  message: z.string().max(TASK_LIMITS.messageChars).default(""),
  results: z.record(z.string(), z.unknown()).default({}),
  log: z
    .array(z.strictObject({ ts: z.string().max(40), message: z.string().max(TASK_LIMITS.logChars) }))
    .max(TASK_LIMITS.logEntries)
    .default([]),
  output: z.string().max(TASK_LIMITS.outputChars).default(""),
  exitCode: z.number().int().optional(),
});
export type TaskFinish = z.infer<typeof TaskFinish>;

/** The agent's report of a storage instance's machine half (MachineStorageWork): done, with where the unit finds it, or undone. */
export const StorageOnMachineReport = z.discriminatedUnion("op", [
  z.strictObject({ id: z.string().max(128), op: z.literal("attached"), location: AbsolutePath }),
  z.strictObject({ id: z.string().max(128), op: z.literal("released") }),
]);
export type StorageOnMachineReport = z.infer<typeof StorageOnMachineReport>;

/**
 * `secret-get`: one revision's values, for a unit that may read the secret (refused otherwise).
 * `tracked`: the revision the unit tracks (the latest on a first read); `latest`: the newest
 * (`--peek`, `--refresh`, and an owner's read); `revision`: that one (an owner's secret-remove hook).
 * Answers `{uri, revision, values}`; the move to a revision is the hook's `track` change.
 */
export const SecretGet = z.strictObject({
  unit: z.string(),
  uri: SecretUriSchema,
  which: z.enum(["tracked", "latest"]).default("tracked"),
  revision: z.number().int().min(1).optional(),
});
export type SecretGet = z.infer<typeof SecretGet>;

/** Methods an agent may call, with their parameter schemas. */
export const agentMethods = {
  "unit.status": UnitStatusReport,
  "unit.dead": UnitDeadReport,
  "unit.resolved": UnitOnly,
  "machine.info": MachineInfoReport,
  /** The agent is uninstalling itself from its dying machine. */
  "machine.dead": z.strictObject({}),
  /** Claims or renews leadership; answers `{leader, leaseSeconds?}`: held for `leaseSeconds` from when the claim was sent. */
  "leader.claim": UnitOnly,
  /** leader-resign: the leader gives leadership up now; for one lease period only `to` may claim (without it, anyone but the resigner). */
  "leader.resign": z.strictObject({ unit: z.string(), to: z.string().max(128).optional() }),
  "leader.get": UnitOnly,
  "leader.set": LeaderSet,
  "app.status": AppStatusReport,
  "relation.get": RelationGet,
  "relation.leave": RelationLeave,
  "hook.commit": HookCommit,
  /** The unit's `-storage-detaching` hook has run for an instance `detach-storage` asked for (or it never had it). */
  "storage.release": z.strictObject({ unit: z.string(), id: z.string().max(80) }),
  "log.batch": LogBatch,
  "task.start": TaskStart,
  "task.finish": TaskFinish,
  /** A pod's agent keeps a copy of its unit's hook state (its state.json) in the controller after each commit… */
  "unit.hook-state.put": z.strictObject({ unit: z.string(), state: z.string().max(UNIT_HOOK_STATE_MAX_CHARS) }),
  /** …and a pod made again on an empty claim takes it back before the unit runs anything. */
  "unit.hook-state.get": UnitOnly,
  /** The agent's answer for one phase of its model's migration. */
  "migration.report": z.strictObject({
    id: z.string().max(64),
    phase: z.enum(MIGRATION_PHASES),
    ok: z.boolean(),
    reason: z.string().max(1024).optional(),
  }),
  /** The machine half of a storage instance on the agent's machine is done or undone (StorageOps.machineAttached/-Released). */
  storageOnMachine: StorageOnMachineReport,
  "secret.get": SecretGet,
  /** `secret-info-get`: an owned secret's metadata (api/secrets.ts SecretInfo). */
  "secret.info": z.strictObject({ unit: z.string(), uri: SecretUriSchema }),
} as const;
export type AgentMethod = keyof typeof agentMethods;
