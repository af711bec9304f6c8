/**
 * Request and message schemas. Every request body and every agent message is parsed with one of
 * these; unknown fields are refused (strict objects) so a typo never passes silently.
 */
import { z } from "zod";
import type { ReplicaCloudSetting } from "./wire";
import type { ModelSubstrate, ReplicaPlacement, ReplicaSubstrate } from "./substrates";
import {
  CREDENTIAL_KINDS,
  CREDENTIAL_SUBSTRATES,
  DEFAULT_SUBSTRATE,
  MODEL_SUBSTRATES,
  REPLICA_SUBSTRATES,
  contractOf,
  substratesWhere,
  withArticle,
} from "./substrates";
import type { Constraints } from "./constraints";
import { parseConstraints } from "./constraints";
import { StewardError, invalidRequest } from "./errors";
import { NAME_PATTERN } from "./names";
import { SECRET_LIMITS, SECRET_NAME_PATTERN } from "./secrets";
import { operatorHashProblem } from "./operator";
import { parseLeadershipLease } from "./leadership";
import {
  MAX_POOL_ATTRIBUTES,
  MAX_STORAGE_COUNT,
  MAX_STORAGE_ENTRIES,
  MAX_STORAGE_MIB,
  STORAGE_DEVICE_PATTERN,
} from "./storage";
import { REPLICA_SETTINGS_SCHEMAS, settingsSchemaOf } from "./substrate-settings";

/** A leadership lease in a request: seconds or a duration, checked and turned into seconds. */
const LeadershipLeaseSchema = z.union([z.number(), z.string().max(32)]).transform((v, ctx) => {
  const parsed = parseLeadershipLease(v);
  if (parsed.ok) return parsed.seconds;
  ctx.addIssue({ code: "custom", message: parsed.message });
  return z.NEVER;
});

export {
  AwsModelSettingsSchema,
  KubernetesModelSettingsSchema,
  KubernetesNamespace,
  REPLICA_SETTINGS_SCHEMAS,
  SETTINGS_SCHEMAS,
  VsphereModelSettingsSchema,
  settingsSchemaOf,
} from "./substrate-settings";
export type { SettingsSubstrate } from "./substrate-settings";

export { NAME_PATTERN };
/** A host name or IP address, as SSH targets take it. */
export const HOST_PATTERN = /^[A-Za-z0-9.:_-]+$/;
/** An SSH host key fingerprint as `ssh-keygen -lf` prints it. */
export const HOST_KEY_PATTERN = /^SHA256:[A-Za-z0-9+/]{43}$/;
const nameRule = "lower-case letters, digits and single hyphens, starting with a letter, at most 63 characters";

export const Name = z
  .string()
  .max(63)
  .regex(NAME_PATTERN, { message: `must be ${nameRule}` });
export const UserName = z
  .string()
  .max(63)
  .regex(/^[a-z][a-z0-9._-]*$/, { message: "must start with a letter and use a-z, 0-9, '.', '_' or '-'" });
export const ConfigValue = z.union([z.string(), z.number(), z.boolean()]);
export const ConfigMap = z.record(z.string(), ConfigValue);
/** In an update, `null` resets a key to the operator's default. */
export const ConfigPatch = z.record(z.string(), ConfigValue.nullable());
export const MachineId = z.string().regex(/^[0-9]+$/, { message: "must be a machine number such as 0 or 12" });
export const Access = z.enum(["read", "write", "admin"]);

export const LoginRequest = z.strictObject({ user: UserName, password: z.string().min(1).max(1024) });
/**
 * With a password, the user logs in with it; without, the answer holds a one-time registration
 * secret for `steward register` (good for `registrationLifetimeSeconds`, default a day). `reissue`
 * gives a user who has not registered yet a new secret (the old one stops working).
 */
export const CreateUserRequest = z.strictObject({
  name: UserName,
  password: z.string().min(8).max(1024).optional(),
  superuser: z.boolean().optional(),
  registrationLifetimeSeconds: z
    .number()
    .int()
    .min(1)
    .max(30 * 24 * 3600)
    .optional(),
  reissue: z.boolean().optional(),
});
/** `steward register`: the user and secret from the registration string, and the password they chose. */
export const RegisterRequest = z.strictObject({
  user: UserName,
  secret: z
    .string()
    .min(1)
    .max(128)
    .regex(/^[A-Za-z0-9_-]+$/, { message: "must be the secret of a registration string" }),
  password: z.string().min(8).max(1024),
});
export const SetUserDisabledRequest = z.strictObject({ disabled: z.boolean() });
export const GrantRequest = z.strictObject({ access: Access });
/** A user changing their own password gives the current one; a superuser resetting another's does not. */
export const ChangePasswordRequest = z.strictObject({
  password: z.string().min(8).max(1024),
  currentPassword: z.string().min(1).max(1024).optional(),
});

export const ModelConfig = z.strictObject({
  /** Seconds between update-status hooks (jittered 80–120 %). */
  updateStatusInterval: z.number().int().min(1).max(3600).optional(),
  /** Retry failed hooks automatically (5 s doubling to 5 min); off, they wait for `steward resolve`. */
  automaticallyRetryHooks: z.boolean().optional(),
});
/** Constraints in Juju's syntax (api/constraints.ts), parsed: a bad key or value is named in the answer. */
export const ConstraintsText = z
  .string()
  .max(512)
  .transform((text, ctx) => {
    try {
      return parseConstraints(text);
    } catch (err) {
      if (!StewardError.isInstance(err)) throw err;
      ctx.issues.push({ code: "custom", input: text, message: err.message.replace(/^constraints: /, "") });
      return z.NEVER;
    }
  });
/** A model's settings, and (as `set-model-constraints`) the constraints of the machines it makes from now on; "" clears them. */
export const UpdateModelRequest = z.strictObject({
  config: ModelConfig.optional(),
  constraints: ConstraintsText.optional(),
});
/** A replica cloud of kind `k`: the kind's replica settings (REPLICA_SETTINGS_SCHEMAS) and the credential to launch with. */
const replicaCloudRequestOf = <K extends ReplicaSubstrate>(k: K) =>
  z.strictObject({
    substrate: z.literal(k),
    credential: Name.optional(),
    settings: REPLICA_SETTINGS_SCHEMAS[k],
  });
type ReplicaCloudRequestOf = { [K in ReplicaSubstrate]: ReturnType<typeof replicaCloudRequestOf<K>> }[ReplicaSubstrate];
/** What a client sends for the replica cloud, before the controller fills in defaults (an aws instance type). */
export type ReplicaCloudInput = z.input<ReplicaCloudRequestOf>;
// The client's written-out type (wire.ts) must stay a valid input of the schema, and what the schema
// gives must be a stored placement: these fail to compile if they drift.
export const replicaCloudSettingFits = (s: ReplicaCloudSetting): ReplicaCloudInput => s;
export const replicaCloudFits = (s: z.output<ReplicaCloudRequestOf>): ReplicaPlacement => s;
const replicaCloudRequests = z.discriminatedUnion(
  "substrate",
  REPLICA_SUBSTRATES.map(replicaCloudRequestOf) as unknown as [ReplicaCloudRequestOf],
);

/**
 * Before the union: the kind must host replicas, and settings sent under the kind's name (`aws:
 * {…}`, as clients before placements send them) are its settings.
 */
function replicaCloudShape(v: unknown, ctx: { issues: z.core.$ZodRawIssue[] }): unknown {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return v;
  const body: Record<string, unknown> = { ...(v as Record<string, unknown>) };
  if (!(REPLICA_SUBSTRATES as readonly unknown[]).includes(body.substrate)) {
    ctx.issues.push({
      code: "custom",
      path: ["substrate"],
      input: body.substrate,
      message: `must be one of ${REPLICA_SUBSTRATES.join(", ")}`,
    });
    return v;
  }
  const bag = body.substrate as string;
  if (body[bag] !== undefined && body.settings === undefined) {
    body.settings = body[bag];
    delete body[bag];
  }
  return body;
}

/**
 * Where the quorum keeper launches replicas when no spare host is left: a placement like a
 * model's, one shape per kind whose contract says `replicaHosts`. Instances are launched with a
 * stored credential; a controller's own pods (kubernetes) take none. The older shape, settings
 * under the kind's name, is read too.
 */
export const ReplicaCloudRequest: z.ZodType<ReplicaPlacement> = z
  .preprocess(replicaCloudShape, replicaCloudRequests as unknown as z.ZodType<ReplicaPlacement>)
  .superRefine((v, ctx) => {
    const hosts = contractOf(v.substrate).replicaHosts;
    if (hosts === "instances" && !v.credential)
      ctx.addIssue({
        code: "custom",
        path: ["credential"],
        message: `is required: the stored credential ${contractOf(v.substrate).words.things} are launched with (steward add-credential NAME --substrate ${v.substrate})`,
      });
    if (hosts !== "instances" && v.credential !== undefined)
      ctx.addIssue({
        code: "custom",
        path: ["credential"],
        message: `is not for ${withArticle(v.substrate)} replica cloud: the controller reaches its own pods as their ServiceAccount`,
      });
  });
/** The fields every model request has, whatever its kind. */
const modelRequestFields = {
  name: Name,
  config: ModelConfig.optional(),
  credential: Name.optional(),
  /** The default for its machines (`cores=2 mem=4G`). */
  constraints: ConstraintsText.optional(),
};
/** A request for a model of kind `k`: its settings are the kind's (settings-less kinds take none). */
const modelRequestOf = <K extends ModelSubstrate>(k: K) =>
  z.strictObject({
    ...modelRequestFields,
    substrate: z.literal(k),
    settings: (settingsSchemaOf(k) ?? z.unknown()).optional(),
  });

/**
 * Before the union: the substrate defaults to DEFAULT_SUBSTRATE and must be a kind; settings given under the
 * kind's name (`aws: {…}`, as clients of the previous minor send them) are its settings, and under
 * another kind's name are refused.
 */
function modelRequestShape(v: unknown, ctx: { issues: z.core.$ZodRawIssue[] }): unknown {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return v;
  const body: Record<string, unknown> = { ...(v as Record<string, unknown>) };
  body.substrate ??= DEFAULT_SUBSTRATE;
  const substrate = body.substrate as ModelSubstrate;
  if (!(MODEL_SUBSTRATES as readonly unknown[]).includes(substrate)) {
    ctx.issues.push({
      code: "custom",
      path: ["substrate"],
      input: body.substrate,
      message: `must be one of ${MODEL_SUBSTRATES.join(", ")}`,
    });
    return v;
  }
  for (const k of MODEL_SUBSTRATES) {
    if (body[k] === undefined) continue;
    if (k !== substrate)
      ctx.issues.push({
        code: "custom",
        path: [k],
        input: body[k],
        message: `is only for ${k} models, not ${substrate}`,
      });
    else if (body.settings === undefined) body.settings = body[k];
    delete body[k];
  }
  return body;
}

/**
 * A new model: its name, settings and where its machines come from (`substrate`, with the kind's
 * `credential` and `settings`), one shape per kind from its contract (api/substrate-kinds.ts).
 */
export interface CreateModelBody {
  name: string;
  config?: z.output<typeof ModelConfig> | undefined;
  substrate: ModelSubstrate;
  credential?: string | undefined;
  /** The kind's settings, checked against its schema (SETTINGS_SCHEMAS). */
  settings?: unknown;
  constraints?: Constraints | undefined;
}
const modelRequests = z.discriminatedUnion(
  "substrate",
  MODEL_SUBSTRATES.map(modelRequestOf) as unknown as [ReturnType<typeof modelRequestOf<typeof DEFAULT_SUBSTRATE>>],
);
export const CreateModelRequest: z.ZodType<CreateModelBody> = z
  .preprocess(modelRequestShape, modelRequests as unknown as z.ZodType<CreateModelBody>)
  .superRefine((v, ctx) => {
    const kind = contractOf(v.substrate);
    const a = withArticle(v.substrate);
    if (kind.credential?.requiredByModels && !v.credential)
      ctx.addIssue({
        code: "custom",
        path: ["credential"],
        message: `is required for ${a} model: store one with steward add-credential NAME --substrate ${v.substrate}`,
      });
    if (
      !kind.settings &&
      v.settings !== undefined &&
      (typeof v.settings !== "object" || v.settings === null || Object.keys(v.settings).length > 0)
    ) {
      ctx.addIssue({ code: "custom", path: ["settings"], message: `are not for ${a} model: it takes none` });
    }
    if (kind.settings?.required && !v.settings)
      ctx.addIssue({
        code: "custom",
        path: ["settings"],
        message: `is required for ${a} model: ${kind.settings.hint}`,
      });
    if (kind.provisions === "pods" && v.constraints)
      ctx.addIssue({
        code: "custom",
        path: ["constraints"],
        message: `are for machines Steward makes on a cloud; ${a} model's units are pods (their containers' resources come from the operator)`,
      });
  });

/** A credential's attributes, checked against what its substrate needs (see CREDENTIAL_KINDS). */
export const CredentialRequest = z
  .strictObject({
    substrate: z.enum(CREDENTIAL_SUBSTRATES),
    attributes: z.record(
      z.string().max(64),
      z
        .string()
        .min(1)
        .max(16 * 1024),
    ),
  })
  .superRefine((v, ctx) => {
    const kind = CREDENTIAL_KINDS[v.substrate];
    const known = [...kind.required, ...kind.optional];
    for (const a of kind.required)
      if (v.attributes[a] === undefined)
        ctx.addIssue({
          code: "custom",
          path: ["attributes", a],
          message: `is required for ${withArticle(v.substrate)} credential`,
        });
    for (const a of Object.keys(v.attributes)) {
      if (!known.includes(a))
        ctx.addIssue({
          code: "custom",
          path: ["attributes", a],
          message: `is not an attribute of ${withArticle(v.substrate)} credential (known: ${known.join(", ")})`,
        });
    }
  });

export const BundleFile = z.strictObject({
  path: z.string().min(1).max(512),
  mode: z.number().int().min(0).max(0o7777),
  content: z.string(), // base64
});
export const OperatorBundle = z.strictObject({ files: z.array(BundleFile).min(1).max(2000) });

/** `steward upgrade-model`: these machines' agents are to move to agent release `to`. */
export const AgentUpgradeRequest = z.strictObject({
  to: z.string().regex(/^\d+\.\d+\.\d+$/, { message: "must be a version such as 0.1.2" }),
  machines: z.array(MachineId).min(1).max(1000),
  /** How long each new agent has to come up and report before it goes back, in seconds. @default 120 */
  trialSeconds: z.number().int().min(5).max(3600).optional(),
});

/** A change to the keys trusted to sign releases: those to trust, and those to trust no longer. */
const ReleaseKey = z.string().regex(/^ed25519:[A-Za-z0-9_-]{43}$/, {
  message: "must be a release public key, ed25519: and 43 base64url characters (release-tool.js keygen prints one)",
});
export const ReleaseKeysChange = z
  .strictObject({
    trust: z.array(ReleaseKey).max(16).optional(),
    distrust: z.array(ReleaseKey).max(16).optional(),
  })
  .refine((c) => (c.trust?.length ?? 0) + (c.distrust?.length ?? 0) > 0, {
    message: "give keys to trust or to distrust",
  });

/** An operator's content hash; an old-format hash is refused with a message saying to re-upload. */
const OperatorHash = z.string().superRefine((v, ctx) => {
  const problem = operatorHashProblem(v);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});

const StorageName = z.string().regex(/^[a-z][a-z0-9-]{0,62}$/, { message: "must be a storage name such as data" });
/** A storage instance's id: the store's name and its number in the model. */
export const StorageId = z
  .string()
  .regex(/^[a-z][a-z0-9-]{0,62}\/[0-9]{1,9}$/, { message: "must be a storage id such as data/0" });
/** Deploy's `--storage name=pool,size,count`, each part optional (storage.ts parseStorageArg). */
const StorageRequests = z
  .record(
    StorageName,
    z.strictObject({
      pool: Name.optional(),
      size: z.number().int().min(1).max(MAX_STORAGE_MIB).optional(),
      count: z.number().int().min(0).max(MAX_STORAGE_COUNT).optional(),
    }),
  )
  .refine((r) => Object.keys(r).length <= MAX_STORAGE_ENTRIES, {
    message: `at most ${MAX_STORAGE_ENTRIES} stores`,
  });

export const DeployRequest = z.strictObject({
  name: Name,
  operator: OperatorHash,
  units: z.number().int().min(0).max(10000).default(1),
  config: ConfigMap.optional(),
  to: z.array(MachineId).optional(),
  /** For the machines made for its units, merged over the model's. */
  constraints: ConstraintsText.optional(),
  /** Pool, size (MiB) and count of each store the operator declares (default: its first pool, minimum size and count). */
  storage: StorageRequests.optional(),
  /** Its units' leadership lease: seconds or a duration (`10s`), 5 s to 1 h (api/leadership.ts); absent: the controller's. */
  leadershipLease: LeadershipLeaseSchema.optional(),
});
export const UpdateApplicationRequest = z.strictObject({
  config: ConfigPatch.optional(),
  operator: OperatorHash.optional(),
  /** For machines made for its units from now on (`set-constraints`); "" clears them. */
  constraints: ConstraintsText.optional(),
  /** For units added from now on: pool, size (MiB) and count per store, each part given replacing the application's. */
  storage: StorageRequests.optional(),
  /** Its units' leadership lease from the next claim or renewal on; null: back to the controller's. */
  leadershipLease: LeadershipLeaseSchema.nullable().optional(),
});
export const AddUnitsRequest = z.strictObject({
  count: z.number().int().min(1).max(10000).default(1),
  to: z.array(MachineId).optional(),
  /** Kept (detached) storage instances of the application to give the new unit. */
  attachStorage: z.array(StorageId).max(MAX_STORAGE_COUNT).optional(),
});
/** `create-storage-pool NAME TYPE key=value…`: a pool of the model made from one of its substrate's (TYPE). */
export const CreateStoragePoolRequest = z.strictObject({
  name: Name,
  type: Name,
  attributes: z
    .record(
      z.string().regex(/^[a-z][a-z0-9-]{0,62}$/, { message: "must be an attribute name such as location" }),
      z.string().max(4096),
    )
    .refine((r) => Object.keys(r).length <= MAX_POOL_ATTRIBUTES, {
      message: `at most ${MAX_POOL_ATTRIBUTES} attributes`,
    })
    .default({}),
});
const StorageIds = z.array(StorageId).min(1).max(MAX_STORAGE_COUNT);
/** `detach-storage ID…` (`force`: even below the operator's minimum count) and `remove-storage ID…` (`force`: attached ones too). */
export const StorageIdsRequest = z.strictObject({ ids: StorageIds, force: z.boolean().default(false) });
/** `attach-storage UNIT ID…`: kept instances to a live unit of their application. */
export const AttachStorageRequest = z.strictObject({ unit: z.string().max(128), ids: StorageIds });
export const SshTargetSchema = z.strictObject({
  host: z.string().min(1).max(255).regex(HOST_PATTERN, { message: "must be a host name or IP address" }),
  port: z.number().int().min(1).max(65535).default(22),
  user: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[a-z_][a-z0-9_.-]*$/, { message: "must be a user name" }),
  /** The private key's content; used for this install only, never stored. */
  privateKey: z
    .string()
    .min(1)
    .max(64 * 1024),
  passphrase: z.string().max(1024).optional(),
  hostKey: z
    .string()
    .regex(HOST_KEY_PATTERN, { message: "must be a fingerprint such as SHA256:abc… (ssh-keygen -lf the host's key)" })
    .optional(),
  trustOnFirstUse: z.boolean().optional(),
  /** A bastion to reach the host through (same private key; its host key must be pinned). */
  jump: z
    .strictObject({
      host: z.string().min(1).max(255).regex(HOST_PATTERN),
      port: z.number().int().min(1).max(65535).default(22),
      user: z
        .string()
        .min(1)
        .max(64)
        .regex(/^[a-z_][a-z0-9_.-]*$/),
      hostKey: z.string().regex(HOST_KEY_PATTERN, { message: "must be the jump host's fingerprint, SHA256:…" }),
    })
    .optional(),
});
/** Hosts for controller replicas: kept by the controller (as spares) until used, so the key is stored. */
export const SpareHostsRequest = z.strictObject({
  hosts: z
    .array(SshTargetSchema.omit({ jump: true }))
    .min(1)
    .max(16),
});
/** The record `steward upgrade-controller` keeps of its progress (api/wire.ts ControllerUpgrade). */
const Version = z.string().regex(/^\d+\.\d+\.\d+$/, { message: "must be MAJOR.MINOR.PATCH" });
const Timestamp = z.string().max(40);
export const ControllerUpgradeRecord = z.strictObject({
  run: z.string().regex(/^[A-Za-z0-9-]{1,64}$/),
  from: Version,
  to: Version,
  state: z.enum(["running", "failed", "done"]),
  startedAt: Timestamp,
  updatedAt: Timestamp,
  finishedAt: Timestamp.optional(),
  replicas: z
    .array(
      z.strictObject({
        name: z.string().min(1).max(100),
        host: z.string().max(255),
        version: z.string().max(40),
        state: z.enum(["pending", "upgrading", "upgraded", "rolled-back", "failed"]),
        at: Timestamp.optional(),
        message: z.string().max(2000).optional(),
      }),
    )
    .max(16),
  message: z.string().max(2000),
});
export const EnableHaRequest = z.strictObject({
  replicas: z
    .number()
    .int()
    .refine((n) => [1, 3, 5, 7].includes(n), {
      message:
        "must be 3, 5 or 7: an even number of voters tolerates no more failures than one fewer, and etcd advises at most 7",
    }),
  /** New hosts to put replicas on (added to the spare pool first). */
  hosts: z
    .array(SshTargetSchema.omit({ jump: true }))
    .max(16)
    .default([]),
  replaceAfterSeconds: z
    .number()
    .int()
    .min(5)
    .max(7 * 24 * 3600)
    .optional(),
  maxReplacementsPerHour: z.number().int().min(0).max(60).optional(),
});
/** A block device declared for a host's storage: an absolute path under /dev. */
export const StorageDevicePath = z
  .string()
  .max(255)
  .regex(STORAGE_DEVICE_PATTERN, { message: "must be a device path under /dev, such as /dev/sdb" })
  .refine((p) => !p.split("/").includes(".."), { message: "must be a device path under /dev, such as /dev/sdb" });
export const AddMachineRequest = z.strictObject({
  /**
   * A kind its contract says takes added machines (`addMachines`): a kind on the controller's host
   * starts an agent process there; one whose agents are started by hand only issues a credential
   * for an agent started elsewhere; one added by address installs an agent on the host given in `ssh`.
   */
  substrate: z
    .enum(substratesWhere((k) => !!k.addMachines) as [ModelSubstrate, ...ModelSubstrate[]])
    .default(DEFAULT_SUBSTRATE),
  count: z.number().int().min(1).max(10000).default(1),
  ssh: SshTargetSchema.optional(),
  /** With `ssh`: block devices of the host its units' storage may have (the `device` pool), e.g. /dev/sdb. */
  storageDevices: z.array(StorageDevicePath).max(32).optional(),
  /** aws and vsphere machines: merged over the model's. */
  constraints: ConstraintsText.optional(),
});

/** `app` or `app:endpoint`. */
export const EndpointRef = z
  .string()
  .regex(/^[a-z][a-z0-9-]*(:[a-z][a-z0-9-]*)?$/, { message: "must be app or app:endpoint" });
export const IntegrateRequest = z.strictObject({ endpoints: z.tuple([EndpointRef, EndpointRef]) });
export const ResolveRequest = z.strictObject({ retry: z.boolean().default(true) });

/** A unit (`web/0`), an application's leader (`web/leader`) or every unit of an application (`web`). */
export const ActionTarget = z
  .string()
  .max(128)
  .regex(/^[a-z][a-z0-9-]*(\/(\d+|leader))?$/, {
    message: "must be a unit (web/0), an application's leader (web/leader) or an application (web)",
  });
export const RunActionRequest = z.strictObject({
  targets: z.array(ActionTarget).min(1).max(100),
  action: z
    .string()
    .max(63)
    .regex(/^[a-z][a-z0-9-]*$/, { message: "must be an action name (lower-case letters, digits, hyphens)" }),
  params: z.record(z.string().max(256), z.union([z.string(), z.number(), z.boolean()])).default({}),
});

export const WorkloadStatusValue = z.enum(["active", "blocked", "maintenance", "waiting", "unknown", "terminated"]);
export const StatusSetParams = z.strictObject({
  unit: z.string(),
  status: WorkloadStatusValue,
  message: z.string().max(1024).default(""),
});

/** `POST /v1/models/<model>/export`: the passphrase the export's secret values are sealed to (never stored or logged). */
export const ExportModelRequest = z.strictObject({
  passphrase: z.string().min(8, "an export passphrase must be at least 8 characters").max(1024),
  /** The newest export format the reader takes (an older controller's), default this one's. */
  version: z.number().int().min(1).max(1000).optional(),
});

/** `POST /v1/backups`: the passphrase the backup is encrypted with (never stored or logged). */
export const CreateBackupRequest = z.strictObject({
  passphrase: z.string().min(8, "a backup passphrase must be at least 8 characters").max(1024),
});

const ControllerAddress = z
  .string()
  .min(3)
  .max(300)
  .regex(/^[^\s/]+:\d+$/, "host:port");
/** `POST /v1/models/<model>/migrate`: where the model goes, and how long its agents have to answer. */
export const MigrateRequest = z.strictObject({
  target: z
    .strictObject({
      name: Name,
      addresses: z.array(ControllerAddress).min(1).max(16),
      caCert: z.string().min(1).max(16_384).includes("BEGIN CERTIFICATE", { message: "a PEM certificate" }),
      user: Name,
      password: z.string().min(1).max(1024).optional(),
      token: z.string().min(1).max(4096).optional(),
    })
    .refine((t) => t.password !== undefined || t.token !== undefined, {
      message: "give the target user's password or token",
    }),
  agentWaitSeconds: z
    .number()
    .int()
    .min(5)
    .max(24 * 3600)
    .optional(),
});

/** A task's number (`GET /v1/models/<model>/tasks/<id>`). */
export const TaskId = z.string().regex(/^\d{1,10}$/);
/** A migration's id (a uuid), as the target's routes name it. */
export const MigrationId = z.string().regex(/^[0-9a-f-]{36}$/, "a migration id (a uuid)");
/** A model's uuid, as a migration target names the model it stages. */
export const ModelUuid = z.string().regex(/^[0-9a-f-]{36}$/, "a model uuid");
/** `POST /v1/migrations/<id>/validate`: the units an agent runs, to compare with the staged model. */
export const MigrationValidateRequest = z.strictObject({ units: z.array(z.string().max(256)).max(10_000) });
/** `POST /v1/migrations/<id>/logs`: a moved model's recent log records. */
export const MigrationLogsRequest = z.strictObject({
  model: ModelUuid,
  records: z.array(z.record(z.string(), z.unknown())).max(10_000),
});

/** Parses `input` with `schema`, turning the first problems into one message that names each field. */
export function parseRequest<T extends z.ZodType>(schema: T, input: unknown, what = "request"): z.infer<T> {
  const result = schema.safeParse(input ?? {});
  if (result.success) return result.data;
  throw invalidRequest(`invalid ${what}: ${describeIssues(result.error.issues)}`, {
    issues: result.error.issues.map((i) => ({ field: i.path.join("."), problem: i.message })),
  });
}

export function describeIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .slice(0, 5)
    .map((i) => {
      const field = i.path.length > 0 ? i.path.join(".") : "(body)";
      if (i.code === "unrecognized_keys")
        return `unknown field${i.keys.length > 1 ? "s" : ""} ${i.keys.map((k) => `"${[...i.path, k].join(".")}"`).join(", ")}`;
      return `"${field}" ${i.message}`;
    })
    .join("; ");
}

/** A user secret named by its name or its `secret:<id>` (path parameter). */
export const SecretRef = z
  .string()
  .max(64)
  .regex(/^(?:secret:[0-9a-v]{20}|[a-z][a-z0-9-]{0,62})$/, { message: "must be a secret's name or its secret:<id>" });
/** Keys and values are checked by api/secrets.ts secretContentProblem (it names the 64 KiB limit). */
const SecretValues = z.record(z.string().max(64), z.string().max(SECRET_LIMITS.contentBytes));
/** `steward add-secret NAME key=value…`: a user secret, owned by the model. */
export const AddSecretRequest = z.strictObject({
  name: z
    .string()
    .max(63)
    .regex(SECRET_NAME_PATTERN, { message: `must be ${nameRule}` }),
  values: SecretValues,
  description: z.string().max(SECRET_LIMITS.descriptionChars).optional(),
});
/** `steward update-secret`: new values make a new revision; a name or description alone does not. */
export const UpdateSecretRequest = z
  .strictObject({
    values: SecretValues.optional(),
    name: z
      .string()
      .max(63)
      .regex(SECRET_NAME_PATTERN, { message: `must be ${nameRule}` })
      .optional(),
    description: z.string().max(SECRET_LIMITS.descriptionChars).optional(),
  })
  .refine((r) => r.values !== undefined || r.name !== undefined || r.description !== undefined, {
    message: "give new values, a new name or a description",
  });
/** `grant-secret` / `revoke-secret`: applications of the model. */
export const SecretAppsRequest = z.strictObject({ apps: z.array(Name).min(1).max(100) });
