/**
 * The shape of every document a model export carries, one zod schema per exported kind
 * (registry.ts registers each beside its kind). An import checks every document against its
 * kind's schema before anything is staged or written: a hostile or damaged file must not put a
 * wrong type in the store, where code reading it trusts documents.ts. Strict objects: a field this
 * controller does not know is refused, not kept unread.
 */
import { z } from "zod";
import {
  ARCHES,
  LEADERSHIP_LEASE,
  MAX_STORAGE_COUNT,
  MAX_STORAGE_MIB,
  MachineVolumeWorkSchema,
  ROTATE_POLICIES,
  SECRET_ID_PATTERN,
  SECRET_LIMITS,
  SECRET_NAME_PATTERN,
  MODEL_SUBSTRATES,
  Name,
  STORAGE_TYPES,
  StorageDevicePath,
  UserName,
  isNormalisedPort,
  settingsSchemaOf,
} from "../../api";

const Text = (max: number): z.ZodString => z.string().max(max);
const Timestamp = Text(40);
const Life = z.enum(["alive", "dying"]);
const Count = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const MachineId = z.string().regex(/^[0-9]{1,9}$/, { message: "must be a machine number such as 0 or 12" });
const UnitName = z
  .string()
  .max(128)
  .regex(/^[a-z][a-z0-9-]*\/[0-9]{1,9}$/, { message: "must be a unit name such as web/0" });
const ActionValue = z.union([z.string().max(64 * 1024), z.number(), z.boolean()]);
// Sizes in MiB and cores as substrates report them (a cloud's hardware may not be whole numbers).
const Amount = z.number().min(0).max(Number.MAX_SAFE_INTEGER);
const Constraints = z.strictObject({
  arch: z.enum(ARCHES).optional(),
  cores: Amount.optional(),
  mem: Amount.optional(),
  rootDisk: Amount.optional(),
  instanceType: Text(64).optional(),
});
const WorkloadStatus = z.enum(["active", "blocked", "maintenance", "waiting", "unknown", "terminated", "error"]);
const statusInfo = <S extends z.ZodType>(current: S): z.ZodObject =>
  z.strictObject({ current, message: Text(16 * 1024), since: Timestamp });
const Bag = z.record(Text(256), Text(1024 * 1024));

/** Where a model's machines come from: a kind, its credential's name and the kind's settings (settings-less kinds: `{}`). */
const Placement = z.discriminatedUnion(
  "substrate",
  MODEL_SUBSTRATES.map((k) =>
    z.strictObject({
      substrate: z.literal(k),
      credential: Name.optional(),
      settings: settingsSchemaOf(k) ?? z.strictObject({}),
    }),
  ) as unknown as [z.ZodObject],
);
const ModelSchema = z.strictObject({
  uuid: z
    .string()
    .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, { message: "must be a uuid" }),
  name: Name,
  owner: UserName,
  life: Life,
  createdAt: Timestamp,
  config: z.strictObject({
    updateStatusInterval: z.number().int().min(1).max(3600),
    automaticallyRetryHooks: z.boolean().optional(),
  }),
  placement: Placement,
  constraints: Constraints.optional(),
});

const MachineSchema = z.strictObject({
  id: MachineId,
  substrate: z.enum(MODEL_SUBSTRATES),
  life: Life,
  credentialHash: z
    .string()
    .regex(/^[0-9a-f]{64}$/, { message: "must be a SHA-256 in hex" })
    .optional(),
  createdFor: UnitName.optional(),
  createdAt: Timestamp,
  ssh: z
    .strictObject({ host: Text(255), port: z.number().int().min(1).max(65535), user: Text(64), hostKey: Text(128) })
    .optional(),
  storageDevices: z.array(StorageDevicePath).max(32).optional(),
  constraints: Constraints.optional(),
  // Checked against this controller's directories by the import (local-dir.ts rule, given as ImportDeps.checkLocalDir).
  localDir: z.string().min(1).max(4096).optional(),
  agentRelease: z
    .strictObject({
      version: Text(64),
      hash: Text(128),
      attempt: z.number().int().min(1),
      trialSeconds: z.number().int().min(1).max(86_400),
      requestedAt: Timestamp.optional(),
    })
    .optional(),
});

const Instance = z.strictObject({
  id: Text(256),
  zone: Text(128).optional(),
  state: Text(64),
  address: Text(256).optional(),
});
const MachineInstallSchema = z.strictObject({
  state: z.enum(["installing", "installed", "failed"]),
  step: Text(16 * 1024),
  changed: z.boolean().optional(),
  bytesUploaded: Count.optional(),
  instance: Instance.optional(),
  hardware: Constraints.optional(),
  at: Timestamp,
});

const ApplicationSchema = z.strictObject({
  name: Name,
  operator: z.strictObject({ hash: Text(128), name: Text(128), version: Text(64) }),
  operatorRevision: Count.optional(),
  config: z.record(Text(256), z.union([Text(1024 * 1024), z.number(), z.boolean()])),
  life: Life,
  nextUnit: Count,
  createdAt: Timestamp,
  constraints: Constraints.optional(),
  storage: z
    .record(
      z.string().regex(/^[a-z][a-z0-9-]{0,62}$/, { message: "must be a storage name such as data" }),
      z.strictObject({
        pool: Name,
        size: z.number().int().min(1).max(MAX_STORAGE_MIB),
        count: z.number().int().min(0).max(MAX_STORAGE_COUNT),
      }),
    )
    .optional(),
  leadershipLeaseSeconds: z.number().int().min(LEADERSHIP_LEASE.minSeconds).max(LEADERSHIP_LEASE.maxSeconds).optional(),
});

const Endpoint = z.strictObject({
  app: Name,
  endpoint: Text(128),
  role: z.enum(["provider", "requirer", "peer"]),
  interface: Text(128),
});
const RelationSchema = z.strictObject({
  id: Count,
  key: Text(1024),
  endpoints: z.array(Endpoint).min(1).max(2),
  life: Life,
  createdAt: Timestamp,
});

const TaskSchema = z.strictObject({
  id: Count,
  operation: Count,
  unit: UnitName,
  action: Text(63),
  params: z.record(Text(256), ActionValue),
  status: z.enum(["pending", "running", "completed", "failed", "aborted"]),
  enqueued: Timestamp,
  started: Timestamp.optional(),
  completed: Timestamp.optional(),
  message: Text(64 * 1024),
  results: z.record(Text(256), z.unknown()),
  log: z.array(z.strictObject({ ts: Timestamp, message: Text(64 * 1024) })).max(10_000),
  output: Text(1024 * 1024),
  exitCode: z.number().int().optional(),
});

const StorageSchema = z.strictObject({
  id: z.string().regex(/^[a-z][a-z0-9-]{0,62}\/[0-9]{1,9}$/, { message: "must be a storage id such as data/0" }),
  name: z.string().regex(/^[a-z][a-z0-9-]{0,62}$/, { message: "must be a storage name such as data" }),
  app: Name,
  kind: z.enum(STORAGE_TYPES),
  pool: Name,
  size: z.number().int().min(1).max(MAX_STORAGE_MIB),
  status: z.enum(["attached", "detached"]),
  unit: UnitName.optional(),
  machine: MachineId.optional(),
  boundTo: MachineId.optional(),
  location: z.string().min(1).max(4096).optional(),
  handle: z.record(Text(64), Text(4096)).optional(),
  lastUnit: UnitName.optional(),
  message: Text(2048).optional(),
  detaching: z.literal(true).optional(),
  machineWork: MachineVolumeWorkSchema.optional(),
  onMachine: z.strictObject({ location: z.string().min(1).max(4096) }).optional(),
  life: Life,
  createdAt: Timestamp,
  error: Text(4096).optional(),
});

const StoragePoolSchema = z.strictObject({
  name: Name,
  type: Name,
  attributes: z.record(z.string().regex(/^[a-z][a-z0-9-]{0,62}$/), Text(4096)),
  createdAt: Timestamp,
});

const Revision = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);
const SecretLabel = z.string().min(1).max(SECRET_LIMITS.labelChars);
/** A secret's metadata (secret-docs.ts); its revisions' content is not here (sealed apart, not exported as keys). */
const SecretSchema = z.strictObject({
  id: z.string().regex(SECRET_ID_PATTERN, { message: "must be 20 base32hex characters" }),
  owner: z.discriminatedUnion("kind", [
    z.strictObject({ kind: z.literal("application"), app: Name }),
    z.strictObject({ kind: z.literal("unit"), unit: UnitName }),
    z.strictObject({ kind: z.literal("model") }),
  ]),
  name: z.string().regex(SECRET_NAME_PATTERN).optional(),
  label: SecretLabel.optional(),
  description: Text(SECRET_LIMITS.descriptionChars).optional(),
  rotate: z.enum(ROTATE_POLICIES),
  nextRotateAt: Timestamp.optional(),
  rotateDueAt: Timestamp.optional(),
  latest: Revision,
  revisions: z
    .array(
      z.strictObject({
        revision: Revision,
        createdAt: Timestamp,
        expireAt: Timestamp.optional(),
        expired: z.literal(true).optional(),
      }),
    )
    .min(1)
    .max(SECRET_LIMITS.revisions),
  grants: z.array(z.strictObject({ app: Name, unit: UnitName.optional(), relationId: Count.optional() })).max(10_000),
  consumers: z.record(UnitName, z.strictObject({ revision: Revision, label: SecretLabel.optional() })),
  createdBy: UserName.optional(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

/** Each exported kind's schema (registry.ts takes them from here by kind). */
export const DOCUMENT_SCHEMAS = {
  "model": ModelSchema,
  "access": z.strictObject({ access: z.enum(["read", "write", "admin"]) }),
  "machine-seq": Count,
  "relation-seq": Count,
  "task-seq": Count,
  "storage-seq": Count,
  "machine": MachineSchema,
  "machine-info": z.strictObject({
    hostname: Text(255),
    address: Text(255),
    os: Text(255),
    agentVersion: Text(64),
    firstSeen: Timestamp,
    agentUpgradeFailure: z
      .strictObject({ version: Text(64), attempt: z.number().int().min(1), message: Text(1024) })
      .optional(),
  }),
  "machine-install": MachineInstallSchema,
  "app": ApplicationSchema,
  "app-status": statusInfo(WorkloadStatus),
  "unit": z.strictObject({
    name: UnitName,
    app: Name,
    machine: MachineId,
    life: Life,
    createdAt: Timestamp,
    resolve: z.enum(["retry", "no-retry"]).optional(),
  }),
  "storage": StorageSchema,
  "storage-pool": StoragePoolSchema,
  "secret": SecretSchema,
  "unit-status": z.strictObject({
    workload: statusInfo(WorkloadStatus),
    agent: statusInfo(z.enum(["allocating", "executing", "idle", "error"])),
    version: Text(64),
    applied: z.strictObject({ operator: Text(128), config: Text(128) }).optional(),
  }),
  "unit-failure": z.strictObject({ hook: Text(256), output: Text(64 * 1024), since: Timestamp }),
  // The agent's own record, opaque here: the agent that reads it back checks it.
  "unit-hook-state": z.record(z.string(), z.unknown()),
  "ports": z
    .array(
      z
        .string()
        .max(16)
        .refine(isNormalisedPort, { message: "must be a port such as 80/tcp, 53/udp, 8000-8010/tcp or icmp" }),
    )
    .max(1024),
  "relation": RelationSchema,
  "scope": z.strictObject({ since: Timestamp }),
  "relation-data": Bag,
  // The lease is the source store's and is not exported; the import grants one of its own.
  "leader": z.strictObject({
    unit: UnitName,
    since: Timestamp,
    lease: Text(128).optional(),
    leaseSeconds: z.number().int().min(1).max(LEADERSHIP_LEASE.maxSeconds).optional(),
    shrinkAt: Timestamp.optional(),
  }),
  "leader-data": Bag,
  "task-queue": z.strictObject({
    id: Count,
    action: Text(63),
    params: z.record(Text(256), ActionValue),
    state: z.enum(["pending", "running"]),
  }),
  "task": TaskSchema,
  "operation": z.strictObject({
    id: Count,
    action: Text(63),
    enqueued: Timestamp,
    by: UserName,
    targets: z.array(Text(128)).max(10_000),
    tasks: z.array(z.strictObject({ id: Count, unit: UnitName })).max(10_000),
  }),
  "status-history": z
    .array(
      z.strictObject({
        since: Timestamp,
        type: z.enum(["workload", "agent"]),
        status: Text(64),
        message: Text(16 * 1024),
      }),
    )
    .max(1000),
} satisfies Record<string, z.ZodType>;

export type ExportedKindName = keyof typeof DOCUMENT_SCHEMAS;
