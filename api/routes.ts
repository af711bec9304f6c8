/**
 * The REST API as one table: every route's method, path, who may call it, the schema of its body,
 * its success status and the type of its answer. The controller registers each route from here
 * through one `route()` helper (controller/access/route.ts), and the {@link ControllerClient} calls
 * them from here, so neither side can drift from the other. A route without its `access` rule does
 * not compile. Schemas are named (`body: "DeployRequest"`, from api/schemas.ts), not imported: the
 * client, the CLI and the agent load this table without zod. Browser-safe: no Node imports.
 */
import type { z } from "zod";
import type { OperationInfo, RunActionResult, TaskInfo } from "./actions";
import type { DebugLogRecord } from "./debug-log";
import type { ControllerHello, MigrationArrivalInfo, MigrationInfo } from "./migration";
import type { Bundle } from "./operator";
import type { RevealedSecret, SecretInfo } from "./secrets";
import type { StorageDetails, StorageInfo, StoragePoolInfo } from "./storage";
import type * as Schemas from "./schemas";
import type { ModelStatus, StatusLogEntry, UnitDetails } from "./status";
import type {
  AgentReleaseInfo,
  AgentUpgradeStarted,
  ReleaseKeys,
  ApplicationInfo,
  BackupRecord,
  ControllerInfo,
  ControllerOverview,
  ControllerUpgrade,
  CreatedUser,
  CredentialSummary,
  MachineInfo,
  ModelSummary,
  Registered,
  RefusedRelease,
  SessionInfo,
  UserInfo,
} from "./wire";

/**
 * Who may call a route. The controller's `route()` checks it before the handler runs:
 * - `public`: anyone (health, login, the dashboard's files, a migration target's hello);
 * - `user`: a logged-in user (token or dashboard session), never an agent;
 * - `superuser`: a controller superuser; on a path with `:model` the model must exist too (404);
 * - `model:read|write|admin`: a user with that access to the model named by `:model`; a user with no
 *   access at all is answered as if it did not exist (404), one with less is told what is missing (403);
 * - `model:follow`: read access to the model, or, once it moved away, having had access when it moved;
 * - `model:write-any`: a user with write access to some model (what else is an operator upload for);
 * - `user-or-agent`: a user, or an agent (operator downloads: the handler narrows what an agent sees);
 * - `enrolment`: a cloud instance's one-time enrolment token, in its header (the handler redeems it);
 * - `staged-agent`: an agent's credential for a machine of a staged migration, checked by the handler
 *   (it must first count refused credentials against the caller's budget).
 */
export type RouteAccess =
  | "public"
  | "user"
  | "superuser"
  | "model:read"
  | "model:write"
  | "model:admin"
  | "model:follow"
  | "model:write-any"
  | "user-or-agent"
  | "enrolment"
  | "staged-agent";

export type HttpMethod = "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE";

declare const ANSWER: unique symbol;
/** The type of a route's answer, carried by the table only for the type checker. */
export interface Answer<T> {
  readonly [ANSWER]?: T;
}
/** `response: answer<ApplicationInfo>()`: the route answers an ApplicationInfo. */
export const answer = <T>(): Answer<T> => ({});

type SchemaModule = typeof Schemas;
/** The name of a schema in api/schemas.ts. */
export type SchemaName = {
  [K in keyof SchemaModule]: SchemaModule[K] extends z.ZodType ? K : never;
}[keyof SchemaModule];

/** How a path parameter is checked: a value its schema refuses is `not-found` (as an unknown name is) or `invalid-request`. */
export interface ParamRule {
  schema: SchemaName;
  what: string;
  refusal?: "not-found" | "invalid-request";
}
const param = (schema: SchemaName, what: string, refusal?: ParamRule["refusal"]): ParamRule => ({
  schema,
  what,
  ...(refusal ? { refusal } : {}),
});

interface RouteBase {
  method: HttpMethod | readonly HttpMethod[];
  /** Fastify's syntax: `/v1/models/:model/applications/:app`. */
  path: string;
  access: RouteAccess;
  /** The path parameters checked before the handler runs (`:model` is checked by the access rule). */
  params?: Readonly<Record<string, ParamRule>>;
  /** The query parameters the route reads. */
  query?: readonly string[];
  /** The status of success; a handler may answer another success (201 vs 200 for created vs already there). */
  status: 200 | 201 | 202 | 204;
  response: Answer<unknown>;
  /** The answer holds a secret (a token, a credential): never recorded for replays of the request. */
  secretAnswer?: true;
  /** The handler answers through the reply itself: a stream, a file, or pre-rendered JSON. */
  raw?: true;
  /** The handler reads the body itself (a model's export; one checked only after the caller). */
  rawBody?: true;
}
/** A route with a body parsed by a strict schema; `what` names it in the 400 that a bad one gets. */
interface RouteWithBody extends RouteBase {
  body: SchemaName;
  what: string;
}
interface RouteWithoutBody extends RouteBase {
  body?: undefined;
  what?: undefined;
}
export type RouteSpec = RouteWithBody | RouteWithoutBody;

const migrationId = param("MigrationId", "migration id", "invalid-request");
const app = { app: param("Name", "application") };
const force = ["force"] as const;
type Created = { name: string; uuid: string; substrate?: string; credential?: string; constraints?: string };
type CreatedModel = Created & { substrate: string };
type ModelSettingsAnswer = { name: string; config: Record<string, unknown>; constraints?: string };

export const routes = {
  // --- health, login and sessions ---
  health: {
    method: "GET",
    path: "/v1/health",
    access: "public",
    status: 200,
    response: answer<{ ok: boolean; version: string; revision: number }>(),
  },
  login: {
    method: "POST",
    path: "/v1/login",
    access: "public",
    body: "LoginRequest",
    what: "login",
    status: 200,
    secretAnswer: true,
    response: answer<{ token: string; expiresAt: string; user: string }>(),
  },
  logout: { method: "POST", path: "/v1/logout", access: "user", status: 204, response: answer<void>() },
  openSession: {
    method: "POST",
    path: "/v1/session",
    access: "public",
    body: "LoginRequest",
    what: "login",
    status: 200,
    secretAnswer: true,
    response: answer<SessionInfo>(),
  },
  session: { method: "GET", path: "/v1/session", access: "user", status: 200, response: answer<SessionInfo>() },
  closeSession: { method: "DELETE", path: "/v1/session", access: "user", status: 204, response: answer<void>() },

  /** The controller's CA, for a client that pins it by fingerprint (`register`, `add-controller`): public, as the CA is. */
  controllerCa: {
    method: "GET",
    path: "/v1/controller/ca",
    access: "public",
    status: 200,
    response: answer<{ caCert: string }>(),
  },
  /** Uses a registration string's one-time secret: sets the password and logs in (failed tries are limited like logins). */
  register: {
    method: "POST",
    path: "/v1/register",
    access: "public",
    body: "RegisterRequest",
    what: "registration",
    status: 200,
    secretAnswer: true,
    response: answer<Registered>(),
  },

  // --- users ---
  /** With a password, or without for registration: then the answer holds the one-time secret. */
  createUser: {
    method: "POST",
    path: "/v1/users",
    access: "superuser",
    body: "CreateUserRequest",
    what: "user",
    status: 201,
    secretAnswer: true,
    response: answer<CreatedUser>(),
  },
  listUsers: { method: "GET", path: "/v1/users", access: "superuser", status: 200, response: answer<UserInfo[]>() },
  /** Yourself, or anyone as a superuser: the handler decides which. */
  showUser: {
    method: "GET",
    path: "/v1/users/:user",
    access: "user",
    params: { user: param("UserName", "user") },
    status: 200,
    response: answer<UserInfo>(),
  },
  removeUser: {
    method: "DELETE",
    path: "/v1/users/:user",
    access: "superuser",
    params: { user: param("UserName", "user") },
    status: 204,
    response: answer<void>(),
  },
  setUserDisabled: {
    method: "PUT",
    path: "/v1/users/:user/disabled",
    access: "superuser",
    params: { user: param("UserName", "user") },
    body: "SetUserDisabledRequest",
    what: "user state",
    status: 200,
    response: answer<{ name: string; disabled: boolean; changed: boolean }>(),
  },
  /** Your own password (with the current one), or anyone's as a superuser: the handler decides which. */
  changePassword: {
    method: "PUT",
    path: "/v1/users/:user/password",
    access: "user",
    params: { user: param("UserName", "user") },
    body: "ChangePasswordRequest",
    what: "password change",
    status: 204,
    response: answer<void>(),
  },
  grant: {
    method: "PUT",
    path: "/v1/models/:model/access/:user",
    access: "model:admin",
    params: { user: param("UserName", "user") },
    body: "GrantRequest",
    what: "grant",
    status: 204,
    response: answer<void>(),
  },
  revoke: {
    method: "DELETE",
    path: "/v1/models/:model/access/:user",
    access: "model:admin",
    params: { user: param("UserName", "user") },
    status: 204,
    response: answer<void>(),
  },

  // --- the controller and its cluster ---
  /** Everyone sees the overview; a superuser the cluster's layout too. */
  controllerOverview: {
    method: "GET",
    path: "/v1/controller",
    access: "user",
    status: 200,
    response: answer<ControllerOverview | ControllerInfo>(),
  },
  enableHa: {
    method: "POST",
    path: "/v1/controller/enable-ha",
    access: "superuser",
    body: "EnableHaRequest",
    what: "enable-ha request",
    status: 202,
    response: answer<{ moving: boolean; message: string }>(),
  },
  recordUpgrade: {
    method: "PUT",
    path: "/v1/controller/upgrade",
    access: "superuser",
    body: "ControllerUpgradeRecord",
    what: "upgrade record",
    status: 200,
    response: answer<ControllerUpgrade>(),
  },
  addSpares: {
    method: "POST",
    path: "/v1/controller/spares",
    access: "superuser",
    body: "SpareHostsRequest",
    what: "spare hosts",
    status: 201,
    response: answer<{ spares: { host: string; hostKey: string }[] }>(),
  },
  setReplicaCloud: {
    method: "PUT",
    path: "/v1/controller/replica-cloud",
    access: "superuser",
    body: "ReplicaCloudRequest",
    what: "replica cloud",
    status: 200,
    response: answer<z.infer<SchemaModule["ReplicaCloudRequest"]>>(),
  },
  clearReplicaCloud: {
    method: "DELETE",
    path: "/v1/controller/replica-cloud",
    access: "superuser",
    status: 204,
    response: answer<void>(),
  },

  // --- credentials (superusers; no answer holds a secret attribute) ---
  listCredentials: {
    method: "GET",
    path: "/v1/credentials",
    access: "superuser",
    status: 200,
    response: answer<{ credentials: CredentialSummary[] }>(),
  },
  /** 201 when created, 200 when it was there. */
  putCredential: {
    method: "PUT",
    path: "/v1/credentials/:name",
    access: "superuser",
    params: { name: param("Name", "credential") },
    query: ["replace", "skipCheck"],
    body: "CredentialRequest",
    what: "credential",
    status: 200,
    response: answer<{ name: string; substrate: string; created: boolean; changed: boolean }>(),
  },
  removeCredential: {
    method: "DELETE",
    path: "/v1/credentials/:name",
    access: "superuser",
    params: { name: param("Name", "credential") },
    status: 204,
    response: answer<void>(),
  },

  // --- models ---
  listModels: { method: "GET", path: "/v1/models", access: "user", status: 200, response: answer<ModelSummary[]>() },
  createModel: {
    method: "POST",
    path: "/v1/models",
    access: "superuser",
    query: ["skipCheck"],
    body: "CreateModelRequest",
    what: "model",
    status: 201,
    response: answer<CreatedModel>(),
  },
  destroyModel: {
    method: "DELETE",
    path: "/v1/models/:model",
    access: "model:admin",
    query: force,
    status: 202,
    response: answer<void>(),
  },
  updateModel: {
    method: "PATCH",
    path: "/v1/models/:model",
    access: "model:admin",
    body: "UpdateModelRequest",
    what: "model update",
    status: 200,
    response: answer<ModelSettingsAnswer>(),
  },
  /** Pre-rendered JSON; `format=columns` answers the compact form (expandStatusColumns). */
  status: {
    method: "GET",
    path: "/v1/models/:model/status",
    access: "model:read",
    query: ["application", "unit", "machine", "format"],
    status: 200,
    raw: true,
    response: answer<ModelStatus>(),
  },
  integrate: {
    method: "POST",
    path: "/v1/models/:model/integrations",
    access: "model:write",
    body: "IntegrateRequest",
    what: "integration",
    status: 201,
    response: answer<{ id: number; key: string }>(),
  },
  removeIntegration: {
    method: "DELETE",
    path: "/v1/models/:model/integrations",
    access: "model:write",
    body: "IntegrateRequest",
    what: "integration",
    status: 202,
    response: answer<void>(),
  },
  /** The model as a document (state/model-format.ts), read at one store revision. */
  exportModel: {
    method: "GET",
    path: "/v1/models/:model/export",
    access: "model:admin",
    /** `version`: the newest export format the reader takes (an older controller's), default this one's. */
    query: ["version"],
    status: 200,
    raw: true,
    response: answer<{
      version: number;
      source: { revision: number };
      documents: Record<string, Record<string, unknown>>;
    }>(),
  },
  /**
   * As exportModel, for a model that holds secrets: their values sealed to `passphrase` (scrypt), which
   * is never stored or logged. A GET export of such a model is refused, naming this.
   */
  exportModelSealed: {
    method: "POST",
    path: "/v1/models/:model/export",
    access: "model:admin",
    body: "ExportModelRequest",
    what: "model export request",
    status: 200,
    raw: true,
    secretAnswer: true,
    response: answer<{
      version: number;
      source: { revision: number };
      documents: Record<string, Record<string, unknown>>;
    }>(),
  },
  /**
   * The body is an export (checked whole by the import, not by a schema here), or, for an export whose
   * secrets are sealed to a passphrase, `{passphrase, export}`.
   */
  importModel: {
    method: "POST",
    path: "/v1/models/import",
    access: "superuser",
    query: ["name"],
    rawBody: true,
    status: 201,
    response: answer<{
      name: string;
      uuid: string;
      revision: number;
      fromVersion: number;
      documents: Record<string, number>;
      missingUsers: string[];
      copyOf?: string;
    }>(),
  },

  // --- operators and applications ---
  /** 201 when stored, 200 when it was there. */
  uploadOperator: {
    method: "POST",
    path: "/v1/operators",
    access: "model:write-any",
    body: "OperatorBundle",
    what: "operator bundle",
    status: 201,
    response: answer<{ hash: string; name: string; version: string; created: boolean }>(),
  },
  getOperator: {
    method: ["GET", "HEAD"],
    path: "/v1/operators/:hash",
    access: "user-or-agent",
    status: 200,
    response: answer<Bundle>(),
  },
  deploy: {
    method: "POST",
    path: "/v1/models/:model/applications",
    access: "model:write",
    body: "DeployRequest",
    what: "deploy",
    status: 201,
    response: answer<ApplicationInfo>(),
  },
  getApplication: {
    method: "GET",
    path: "/v1/models/:model/applications/:app",
    access: "model:read",
    params: app,
    status: 200,
    response: answer<ApplicationInfo>(),
  },
  updateApplication: {
    method: "PATCH",
    path: "/v1/models/:model/applications/:app",
    access: "model:write",
    params: app,
    body: "UpdateApplicationRequest",
    what: "application update",
    status: 200,
    response: answer<ApplicationInfo>(),
  },
  /** `destroyStorage`: its units' storage is destroyed once detached, instead of kept. */
  removeApplication: {
    method: "DELETE",
    path: "/v1/models/:model/applications/:app",
    access: "model:write",
    params: app,
    query: ["force", "destroyStorage"],
    status: 202,
    response: answer<void>(),
  },
  addUnits: {
    method: "POST",
    path: "/v1/models/:model/applications/:app/units",
    access: "model:write",
    params: app,
    body: "AddUnitsRequest",
    what: "add units",
    status: 201,
    response: answer<{ units: string[] }>(),
  },

  /** The model's storage instances: attached (to which unit) or detached and kept. */
  listStorage: {
    method: "GET",
    path: "/v1/models/:model/storage",
    access: "model:read",
    status: 200,
    response: answer<{ storage: StorageInfo[] }>(),
  },

  /** One instance in full. */
  showStorage: {
    method: "GET",
    path: "/v1/models/:model/storage/:store/:n",
    access: "model:read",
    status: 200,
    response: answer<StorageDetails>(),
  },
  /** Live units' instances: their `-storage-detaching` hooks run, then they are detached and kept. */
  detachStorage: {
    method: "POST",
    path: "/v1/models/:model/storage/detach",
    access: "model:write",
    body: "StorageIdsRequest",
    what: "detach storage",
    status: 202,
    response: answer<{ ids: string[] }>(),
  },
  /** Kept instances to a live unit of their application: its `-storage-attached` hooks run. */
  attachStorage: {
    method: "POST",
    path: "/v1/models/:model/storage/attach",
    access: "model:write",
    body: "AttachStorageRequest",
    what: "attach storage",
    status: 202,
    response: answer<{ ids: string[] }>(),
  },
  /** Destroys detached instances (attached ones with `force`, detached first); the broker removes their data. */
  removeStorage: {
    method: "POST",
    path: "/v1/models/:model/storage/remove",
    access: "model:write",
    body: "StorageIdsRequest",
    what: "remove storage",
    status: 202,
    response: answer<{ ids: string[] }>(),
  },
  /** The model's pools: its substrate's built-in ones and those made with createStoragePool. */
  listStoragePools: {
    method: "GET",
    path: "/v1/models/:model/storage-pools",
    access: "model:read",
    status: 200,
    response: answer<{ pools: StoragePoolInfo[] }>(),
  },
  /** 201 when made, 200 when the same pool was there. */
  createStoragePool: {
    method: "POST",
    path: "/v1/models/:model/storage-pools",
    access: "model:admin",
    body: "CreateStoragePoolRequest",
    what: "storage pool",
    status: 201,
    response: answer<StoragePoolInfo>(),
  },
  removeStoragePool: {
    method: "DELETE",
    path: "/v1/models/:model/storage-pools/:pool",
    access: "model:admin",
    params: { pool: param("Name", "storage pool") },
    status: 204,
    response: answer<void>(),
  },

  // --- secrets (api/secrets.ts) ---
  /** Every secret of the model (operators' and users'), metadata only: owner, revisions, grants, who tracks which revision. */
  listSecrets: {
    method: "GET",
    path: "/v1/models/:model/secrets",
    access: "model:read",
    status: 200,
    response: answer<{ secrets: SecretInfo[] }>(),
  },
  /**
   * One secret by name or uri. With `reveal=true` its values (of `revision`, else the latest) too:
   * only for the user who made it or a superuser (403 otherwise); never recorded for replays.
   */
  showSecret: {
    method: "GET",
    path: "/v1/models/:model/secrets/:secret",
    access: "model:read",
    params: { secret: param("SecretRef", "secret") },
    query: ["reveal", "revision"],
    status: 200,
    secretAnswer: true,
    response: answer<SecretInfo | RevealedSecret>(),
  },
  /** A user secret (owned by the model); 201 with its uri, 200 when the same name holds the same values. */
  addSecret: {
    method: "POST",
    path: "/v1/models/:model/secrets",
    access: "model:write",
    body: "AddSecretRequest",
    what: "secret",
    status: 201,
    response: answer<{ uri: string; revision: number }>(),
  },
  updateSecret: {
    method: "PATCH",
    path: "/v1/models/:model/secrets/:secret",
    access: "model:write",
    params: { secret: param("SecretRef", "secret") },
    body: "UpdateSecretRequest",
    what: "secret update",
    status: 200,
    response: answer<{ uri: string; revision: number }>(),
  },
  /** A user secret, or one revision of it (`revision`); consumers reading it then fail their secret-get. */
  removeSecret: {
    method: "DELETE",
    path: "/v1/models/:model/secrets/:secret",
    access: "model:write",
    params: { secret: param("SecretRef", "secret") },
    query: ["revision"],
    status: 204,
    response: answer<void>(),
  },
  grantSecret: {
    method: "POST",
    path: "/v1/models/:model/secrets/:secret/grant",
    access: "model:write",
    params: { secret: param("SecretRef", "secret") },
    body: "SecretAppsRequest",
    what: "secret grant",
    status: 200,
    response: answer<SecretInfo>(),
  },
  revokeSecret: {
    method: "POST",
    path: "/v1/models/:model/secrets/:secret/revoke",
    access: "model:write",
    params: { secret: param("SecretRef", "secret") },
    body: "SecretAppsRequest",
    what: "secret revoke",
    status: 200,
    response: answer<SecretInfo>(),
  },

  // --- units ---
  showUnit: {
    method: "GET",
    path: "/v1/models/:model/units/:app/:n",
    access: "model:read",
    status: 200,
    response: answer<UnitDetails>(),
  },
  /** `destroyStorage`: its storage is destroyed once detached, instead of kept. */
  removeUnit: {
    method: "DELETE",
    path: "/v1/models/:model/units/:app/:n",
    access: "model:write",
    query: ["force", "destroyStorage"],
    status: 202,
    response: answer<void>(),
  },
  statusLog: {
    method: "GET",
    path: "/v1/models/:model/units/:app/:n/status-log",
    access: "model:read",
    status: 200,
    response: answer<{ entries: StatusLogEntry[] }>(),
  },
  resolve: {
    method: "POST",
    path: "/v1/models/:model/units/:app/:n/resolve",
    access: "model:write",
    body: "ResolveRequest",
    what: "resolve",
    status: 200,
    response: answer<Record<string, never>>(),
  },

  // --- machines ---
  /** 201 when made; an SSH machine already there answers 200. A new machine's answer holds its agent's credential. */
  addMachines: {
    method: "POST",
    path: "/v1/models/:model/machines",
    access: "model:write",
    body: "AddMachineRequest",
    what: "add machine",
    status: 201,
    secretAnswer: true,
    response: answer<{ machines: { id: string; credential?: string; hostKey?: string }[] }>(),
  },
  listMachines: {
    method: "GET",
    path: "/v1/models/:model/machines",
    access: "model:read",
    status: 200,
    response: answer<MachineInfo[]>(),
  },
  removeMachine: {
    method: "DELETE",
    path: "/v1/models/:model/machines/:id",
    access: "model:write",
    params: { id: param("MachineId", "machine") },
    query: force,
    status: 202,
    response: answer<void>(),
  },

  // --- actions ---
  runAction: {
    method: "POST",
    path: "/v1/models/:model/actions",
    access: "model:write",
    body: "RunActionRequest",
    what: "action run",
    status: 201,
    response: answer<RunActionResult>(),
  },
  task: {
    method: "GET",
    path: "/v1/models/:model/tasks/:id",
    access: "model:read",
    params: { id: param("TaskId", "task") },
    status: 200,
    response: answer<TaskInfo>(),
  },
  operations: {
    method: "GET",
    path: "/v1/models/:model/operations",
    access: "model:read",
    query: ["limit"],
    status: 200,
    response: answer<{ operations: OperationInfo[] }>(),
  },

  // --- logs ---
  /** Newline-delimited JSON records, then (unless `tail=false`) each new one as it arrives. */
  debugLog: {
    method: "GET",
    path: "/v1/models/:model/logs",
    access: "model:read",
    query: ["include", "exclude", "level", "lines", "replay", "tail"],
    status: 200,
    raw: true,
    response: answer<DebugLogRecord>(),
  },

  // --- migrations: the source's side ---
  migrate: {
    method: "POST",
    path: "/v1/models/:model/migrate",
    access: "superuser",
    body: "MigrateRequest",
    what: "migration",
    status: 202,
    response: answer<MigrationInfo>(),
  },
  migration: {
    method: "GET",
    path: "/v1/models/:model/migration",
    access: "model:follow",
    status: 200,
    response: answer<MigrationInfo | MigrationArrivalInfo>(),
  },
  abortMigration: {
    method: "POST",
    path: "/v1/models/:model/migration/abort",
    access: "superuser",
    status: 200,
    response: answer<MigrationInfo>(),
  },

  // --- migrations: the target's side (the source's master calls these as a superuser here) ---
  hello: {
    method: "GET",
    path: "/v1/migrations/hello",
    access: "public",
    status: 200,
    response: answer<ControllerHello>(),
  },
  /** The body is the model's export. */
  stageMigration: {
    method: "POST",
    path: "/v1/migrations/:id/stage",
    access: "superuser",
    params: { id: migrationId },
    query: ["source"],
    rawBody: true,
    status: 201,
    response: answer<{ id: string; model: string; bytes: number }>(),
  },
  /**
   * The X25519 public key the source seals the model's secret values to for this migration (the
   * target derives its private key from its own CA key and the id: security/transfer-sealing.ts).
   */
  migrationSealingKey: {
    method: "GET",
    path: "/v1/migrations/:id/sealing-key",
    access: "superuser",
    params: { id: migrationId },
    status: 200,
    response: answer<{ kind: "x25519"; publicKey: string }>(),
  },
  migrationState: {
    method: "GET",
    path: "/v1/migrations/:id",
    access: "superuser",
    params: { id: migrationId },
    query: ["model"],
    status: 200,
    response: answer<{ state: "staged" | "active" | "unknown" }>(),
  },
  activateMigration: {
    method: "POST",
    path: "/v1/migrations/:id/activate",
    access: "superuser",
    params: { id: migrationId },
    rawBody: true,
    status: 200,
    response: answer<{ model: string; activated: boolean; name?: string; missingUsers?: string[] }>(),
  },
  migrationHeartbeat: {
    method: "POST",
    path: "/v1/migrations/:id/heartbeat",
    access: "superuser",
    params: { id: migrationId },
    status: 200,
    response: answer<Record<string, never>>(),
  },
  dropMigration: {
    method: "DELETE",
    path: "/v1/migrations/:id",
    access: "superuser",
    params: { id: migrationId },
    query: ["model"],
    status: 200,
    response: answer<Record<string, never>>(),
  },
  transferLogs: {
    method: "POST",
    path: "/v1/migrations/:id/logs",
    access: "superuser",
    params: { id: migrationId },
    body: "MigrationLogsRequest",
    what: "log transfer",
    status: 200,
    response: answer<{ accepted: number }>(),
  },
  /** The body (MigrationValidateRequest) is parsed by the handler once the credential passed and the budget allowed. */
  validateMigration: {
    method: "POST",
    path: "/v1/migrations/:id/validate",
    access: "staged-agent",
    params: { id: migrationId },
    rawBody: true,
    status: 200,
    response: answer<{ ok: boolean }>(),
  },

  // --- backups (superusers) ---
  createBackup: {
    method: "POST",
    path: "/v1/backups",
    access: "superuser",
    body: "CreateBackupRequest",
    what: "backup request",
    status: 201,
    response: answer<{
      record: BackupRecord;
      timings: { snapshotMs: number; encryptMs: number; verifyMs: number; keepMs: number };
    }>(),
  },
  listBackups: {
    method: "GET",
    path: "/v1/backups",
    access: "superuser",
    status: 200,
    response: answer<{ backups: BackupRecord[] }>(),
  },
  /** Part `part` of the encrypted file, base64. */
  backupPart: {
    method: "GET",
    path: "/v1/backups/:id",
    access: "superuser",
    query: ["part"],
    status: 200,
    response: answer<{ record: BackupRecord; part: number; data: string }>(),
  },
  removeBackup: {
    method: "DELETE",
    path: "/v1/backups/:id",
    access: "superuser",
    status: 200,
    response: answer<{ removed: string }>(),
  },

  // --- agent releases: what `steward upgrade-model` moves machine agents to ---
  listAgentReleases: {
    method: "GET",
    path: "/v1/agent-releases",
    access: "user",
    status: 200,
    /** `problem`: why the release source could not be read at the last look. */
    response: answer<{ releases: AgentReleaseInfo[]; refused?: RefusedRelease[]; problem?: string }>(),
  },
  /** The release's files, as an operator bundle is served (agents check them against the hash their view names). */
  getAgentRelease: {
    method: "GET",
    path: "/v1/agent-releases/:version",
    access: "user-or-agent",
    status: 200,
    response: answer<Bundle>(),
  },
  /** The keys trusted to sign releases, and where that set comes from (controller.json until a superuser changes it). */
  getReleaseKeys: {
    method: "GET",
    path: "/v1/controller/release-keys",
    access: "superuser",
    status: 200,
    response: answer<ReleaseKeys>(),
  },
  changeReleaseKeys: {
    method: "POST",
    path: "/v1/controller/release-keys",
    access: "superuser",
    body: "ReleaseKeysChange",
    what: "release keys change",
    status: 200,
    response: answer<ReleaseKeys>(),
  },
  /** Asks these machines' agents to move to a release the controller holds (each a new attempt). */
  upgradeAgents: {
    method: "POST",
    path: "/v1/models/:model/agent-upgrade",
    access: "model:admin",
    body: "AgentUpgradeRequest",
    what: "agent upgrade",
    status: 200,
    response: answer<AgentUpgradeStarted>(),
  },

  // --- enrolment: what a cloud instance calls while cloud-init sets it up ---
  enrolmentFile: {
    method: "GET",
    path: "/v1/enrol/files/*",
    access: "enrolment",
    status: 200,
    raw: true,
    response: answer<Uint8Array>(),
  },
  /** The agent's configuration file (api/agent-config.ts), its credential included. */
  enrol: {
    method: "POST",
    path: "/v1/enrol",
    access: "enrolment",
    status: 200,
    secretAnswer: true,
    raw: true,
    response: answer<string>(),
  },
  /** A replica's data directory, sealed; the CA key included. */
  enrolReplica: {
    method: "POST",
    path: "/v1/enrol/replica",
    access: "enrolment",
    status: 200,
    secretAnswer: true,
    raw: true,
    response: answer<{ files: unknown }>(),
  },

  // --- the dashboard's page ---
  dashboardPage: { method: "GET", path: "/", access: "public", status: 200, raw: true, response: answer<string>() },
  dashboardFile: {
    method: "GET",
    path: "/dashboard/:file",
    access: "public",
    status: 200,
    raw: true,
    response: answer<string>(),
  },
} as const satisfies Record<string, RouteSpec>;

export type RouteName = keyof typeof routes;

/** The names of a path's parameters: `"/v1/models/:model/units/:app/:n"` → `"model" | "app" | "n"`. */
export type PathParamNames<P extends string> = P extends `${string}:${infer N}/${infer Rest}`
  ? N | PathParamNames<`/${Rest}`>
  : P extends `${string}:${infer N}`
    ? N
    : never;
export type ParamsOf<R extends RouteSpec> = { [K in PathParamNames<R["path"]>]: string };
/** What a client sends: the schema's input (defaults may be left out). */
export type BodyOf<R extends RouteSpec> = R extends { body: infer N extends SchemaName }
  ? z.input<SchemaModule[N]>
  : R extends { rawBody: true }
    ? unknown
    : undefined;
/** What the server's handler gets: the schema's output. */
export type ParsedBodyOf<R extends RouteSpec> = R extends { body: infer N extends SchemaName }
  ? z.output<SchemaModule[N]>
  : undefined;
export type QueryOf<R extends RouteSpec> = R extends { query: readonly (infer Q extends string)[] }
  ? Partial<Record<Q, string | number | boolean | readonly string[] | undefined>>
  : Record<string, never>;
export type AnswerOf<R extends RouteSpec> = R["response"] extends Answer<infer T> ? T : never;

/** The path of `r` with its parameters filled in (each encoded as one segment). */
export function pathOf<R extends RouteSpec>(r: R, params: ParamsOf<R>, query?: QueryOf<R>): string {
  const values = params as Record<string, string>;
  const path = r.path.replace(/:([A-Za-z]+)/g, (_, name: string) => encodeURIComponent(values[name] ?? ""));
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) {
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) q.append(k, String(one));
  }
  const text = q.toString();
  return text ? `${path}?${text}` : path;
}

/** The first method of a route (a route that also answers HEAD is called with its GET). */
export function methodOf(r: RouteSpec): HttpMethod {
  return typeof r.method === "string" ? r.method : r.method[0]!;
}
