/**
 * {@link ControllerClient} is the typed client of the controller's REST API, used by the CLI, the
 * Pulumi provider and tests: one method per route of api/routes.ts, each a thin, typed `call` over
 * the transport (transport.ts: CA pinning, address failover, lazy login, moved models followed).
 *
 * ```ts
 * const client = new ControllerClient({ addresses: ["127.0.0.1:17070"], caCert, user: "admin", password });
 * const status = await client.status("demo");
 * ```
 */
import type WebSocket from "ws";
import type { ErrorCode } from "../errors";
import { StewardError, errorFromWire } from "../errors";
import type { Bundle } from "../operator";
import type { StorageDetails, StorageInfo, StoragePoolInfo, StorageRequest } from "../storage";
import type { RevealedSecret, SecretInfo } from "../secrets";
import type { ActionValue, OperationInfo, RunActionResult, TaskInfo } from "../actions";
import type { ModelStatus, StatusFilter, StatusLogEntry, UnitDetails } from "../status";
import type { DebugLogRecord } from "../debug-log";
import type { CredentialSubstrate, ModelSubstrate } from "../substrates";
import { WATCH_CLOSE_CODES } from "../status";
import { expandStatusColumns } from "../status-columns";
import type {
  AgentReleaseInfo,
  AgentUpgradeStarted,
  ApplicationInfo,
  ReplicaCloudSetting,
  ControllerInfo,
  ControllerOverview,
  ControllerUpgrade,
  CreatedUser,
  CredentialSummary,
  DebugLogQuery,
  MachineInfo,
  ModelSummary,
  Registered,
  RefusedRelease,
  ReleaseKeys,
  SessionInfo,
  SpareHost,
  SshMachineRequest,
  UserInfo,
} from "../wire";
import { CONTROLLER_TLS_NAME, showsCluster } from "../wire";
import type { ControllerHello } from "../migration";
import type { BodyOf } from "../routes";
import { methodOf, pathOf, routes } from "../routes";
import { ControllerTransport, UNTRUSTED_CERTIFICATE_ERRORS, untrustedCertificate } from "./transport";
export type {
  ApplicationInfo,
  ClusterInfo,
  ControllerInfo,
  ControllerOverview,
  CredentialSummary,
  DebugLogQuery,
  MachineInfo,
  ModelSettings,
  ModelSummary,
  SpareHost,
  SshMachineRequest,
} from "../wire";
export {
  ADDRESSES_HEADER,
  CONTROLLER_TLS_NAME,
  ENROLMENT_HEADER,
  MUTATING_METHODS,
  REPLAYED_HEADER,
  REQUEST_ID_HEADER,
} from "../wire";
export type { ControllerClientOptions, MovedTo } from "./transport";
export { splitAddress } from "./transport";

export class ControllerClient extends ControllerTransport {
  // --- controller and users ---
  /** The controller with its cluster's layout: a superuser's view (others get {@link controllerOverview}'s). */
  async controllerInfo(): Promise<ControllerInfo> {
    const info = await this.controllerOverview();
    if (showsCluster(info)) return info;
    throw new StewardError(
      "forbidden",
      "only a controller superuser sees the controller's replicas and cluster; others see its name, version, addresses and CA fingerprint (steward show-controller)",
    );
  }
  /** What the logged-in user may see of the controller: the overview, and for a superuser the cluster's layout too. */
  controllerOverview(): Promise<ControllerOverview | ControllerInfo> {
    return this.call(routes.controllerOverview, {});
  }
  /** Who the controller is, asked without credentials (its CA proves the answer): what a migration checks first. */
  hello(): Promise<ControllerHello> {
    return this.call(routes.hello, {});
  }
  /** Grows the controller to `replicas` voters, on `hosts` and the spare pool; from the embedded store it first moves into etcd. */
  enableHa(req: {
    replicas: number;
    hosts?: SpareHost[];
    replaceAfterSeconds?: number;
    maxReplacementsPerHour?: number;
  }): Promise<{ moving: boolean; message: string }> {
    return this.call(routes.enableHa, {}, req);
  }
  /** Records the progress of `steward upgrade-controller` (superusers). */
  recordUpgrade(record: ControllerUpgrade): Promise<ControllerUpgrade> {
    return this.call(routes.recordUpgrade, {}, record);
  }
  addSpares(hosts: SpareHost[]): Promise<{ spares: { host: string; hostKey: string }[] }> {
    return this.call(routes.addSpares, {}, { hosts });
  }
  /** The cloud the quorum keeper launches replicas on when no spare host is left (undefined: none). */
  setReplicaCloud(cloud: ReplicaCloudSetting | undefined): Promise<unknown> {
    // The input type (defaults not applied yet): the controller applies them and refuses what is missing.
    return cloud
      ? this.call(routes.setReplicaCloud, {}, cloud as BodyOf<typeof routes.setReplicaCloud>)
      : this.call(routes.clearReplicaCloud, {});
  }
  createUser(name: string, password: string, superuser = false): Promise<CreatedUser> {
    return this.call(routes.createUser, {}, { name, password, superuser });
  }
  /**
   * Adds a user without a password: the answer's `registration` holds what the registration string
   * is made of (api/registration.ts). `reissue` gives a user who has not registered yet a new one.
   */
  addUserForRegistration(
    name: string,
    o: { superuser?: boolean; lifetimeSeconds?: number; reissue?: boolean } = {},
  ): Promise<CreatedUser> {
    return this.call(
      routes.createUser,
      {},
      {
        name,
        ...(o.superuser ? { superuser: true } : {}),
        ...(o.lifetimeSeconds !== undefined ? { registrationLifetimeSeconds: o.lifetimeSeconds } : {}),
        ...(o.reissue ? { reissue: true } : {}),
      },
    );
  }
  /** Every user (superusers). */
  listUsers(): Promise<UserInfo[]> {
    return this.call(routes.listUsers, {});
  }
  /** One user with the models they can reach: yourself, or anyone as a superuser. */
  showUser(user: string): Promise<UserInfo> {
    return this.call(routes.showUser, { user });
  }
  /** Removes a user and their access to every model (superusers; not yourself, not the last superuser). */
  removeUser(user: string): Promise<void> {
    return this.call(routes.removeUser, { user });
  }
  /** Disables a user (their tokens stop working everywhere at once) or enables them again. */
  setUserDisabled(user: string, disabled: boolean): Promise<{ name: string; disabled: boolean; changed: boolean }> {
    return this.call(routes.setUserDisabled, { user }, { disabled });
  }
  /** Who this client is logged in as (the token's user and when it expires). */
  session(): Promise<SessionInfo> {
    return this.call(routes.session, {});
  }
  /** The controller's CA certificate, asked without credentials: check it against a fingerprint before trusting it. */
  controllerCa(): Promise<{ caCert: string }> {
    return this.call(routes.controllerCa, {});
  }
  /** Uses a registration string's secret: sets `password` and answers a token (no credentials needed). */
  register(user: string, secret: string, password: string): Promise<Registered> {
    return this.call(routes.register, {}, { user, secret, password });
  }
  grant(model: string, user: string, access: "read" | "write" | "admin"): Promise<void> {
    return this.call(routes.grant, { model, user }, { access });
  }
  /** Takes away `user`'s access to `model`. */
  revoke(model: string, user: string): Promise<void> {
    return this.call(routes.revoke, { model, user });
  }
  /** Sets `user`'s password; their existing tokens stop working. Your own needs `currentPassword`. */
  changePassword(user: string, password: string, currentPassword?: string): Promise<void> {
    return this.call(
      routes.changePassword,
      { user },
      { password, ...(currentPassword !== undefined ? { currentPassword } : {}) },
    );
  }
  /** Revokes the token in use (on every replica) and forgets it. */
  async logout(): Promise<void> {
    if (!this.token) return;
    await this.raw(methodOf(routes.logout), routes.logout.path, undefined, true);
    this.token = undefined;
  }

  // --- models ---
  listModels(): Promise<ModelSummary[]> {
    return this.call(routes.listModels, {});
  }
  /**
   * `substrate` (default DEFAULT_SUBSTRATE) says where machines for units placed without `to` come from, with
   * the stored `credential` they are made with and the kind's `settings` (api/substrate-kinds.ts). A
   * kubernetes model's cluster is checked first (reached, rights in the namespace) unless `skipCheck`.
   */
  createModel(
    name: string,
    config?: { updateStatusInterval?: number },
    substrate?: ModelSubstrate,
    placed: { credential?: string | undefined; settings?: object | undefined; constraints?: string | undefined } = {},
    o: { skipCheck?: boolean } = {},
  ): Promise<{ name: string; uuid: string; substrate: string; credential?: string; constraints?: string }> {
    const body = {
      name,
      ...(config ? { config } : {}),
      ...(substrate ? { substrate } : {}),
      ...(placed.credential ? { credential: placed.credential } : {}),
      ...(placed.settings ? { settings: placed.settings } : {}),
      ...(placed.constraints ? { constraints: placed.constraints } : {}),
    };
    // Settings are checked by the controller against the kind's schema (a partial set is refused there, by field).
    return this.call(routes.createModel, {}, body as BodyOf<typeof routes.createModel>, {
      skipCheck: o.skipCheck || undefined,
    });
  }

  // --- credentials (superusers) ---
  listCredentials(): Promise<{ credentials: CredentialSummary[] }> {
    return this.call(routes.listCredentials, {});
  }
  /**
   * Stores a credential; the same values again change nothing; other values need `replace`. A
   * kubernetes cluster's is checked first (reached, the rights Steward needs) unless `skipCheck`.
   */
  putCredential(
    name: string,
    substrate: CredentialSubstrate,
    attributes: Record<string, string>,
    replace = false,
    o: { skipCheck?: boolean } = {},
  ): Promise<{ name: string; created: boolean; changed: boolean }> {
    return this.call(
      routes.putCredential,
      { name },
      { substrate, attributes },
      { replace: replace || undefined, skipCheck: o.skipCheck || undefined },
    );
  }
  removeCredential(name: string): Promise<void> {
    return this.call(routes.removeCredential, { name });
  }
  /** With `force`, everything is deleted at once without running hooks. */
  destroyModel(name: string, force = false): Promise<void> {
    return this.call(routes.destroyModel, { model: name }, undefined, { force: force || undefined });
  }
  /** The model's status, narrowed by `filter` on the controller (so a large model sends less). */
  status(model: string, filter: StatusFilter = {}): Promise<ModelStatus> {
    const list = (names: readonly string[] | undefined): string | undefined =>
      names?.length ? names.join(",") : undefined;
    // The compact form parses several times faster at scale; a controller that predates it sends plain JSON, read the same.
    const query = {
      application: list(filter.applications),
      unit: list(filter.units),
      machine: list(filter.machines),
      format: "columns",
    };
    return this.call(routes.status, { model }, undefined, query).then(expandStatusColumns);
  }

  // --- operators and applications ---
  uploadOperator(bundle: Bundle): Promise<{ hash: string; name: string; version: string; created: boolean }> {
    return this.call(routes.uploadOperator, {}, bundle);
  }
  hasOperator(hash: string): Promise<boolean> {
    return this.call("HEAD", pathOf(routes.getOperator, { hash })).then(
      () => true,
      (e: unknown) => {
        if (StewardError.isInstance(e) && e.code === "not-found") return false;
        throw e;
      },
    );
  }
  /** `constraints` (Juju's syntax) apply to the machines made for its units. */
  deploy(
    model: string,
    req: {
      name: string;
      operator: string;
      units?: number;
      config?: Record<string, string | number | boolean>;
      to?: string[];
      constraints?: string;
      /** Pool, size (MiB) and count per store the operator declares (`--storage data=local,1G,2`). */
      storage?: Record<string, StorageRequest>;
      /** Its units' leadership lease: seconds or a duration (`10s`), 5 s to 1 h; absent: the controller's. */
      leadershipLease?: number | string;
    },
  ): Promise<ApplicationInfo> {
    return this.call(routes.deploy, { model }, req);
  }
  getApplication(model: string, app: string): Promise<ApplicationInfo> {
    return this.call(routes.getApplication, { model, app });
  }
  /**
   * `constraints` (Juju's syntax; "" clears them) apply to machines made for its units from now on,
   * `storage` (pool, size in MiB, count per store; the parts given) to units added from now on,
   * `leadershipLease` (seconds or a duration; null: the controller's) at each unit's next claim or renewal.
   */
  updateApplication(
    model: string,
    app: string,
    req: {
      config?: Record<string, string | number | boolean | null>;
      operator?: string;
      constraints?: string;
      storage?: Record<string, StorageRequest>;
      leadershipLease?: number | string | null;
    },
  ): Promise<ApplicationInfo> {
    return this.call(routes.updateApplication, { model, app }, req);
  }
  /** `destroyStorage`: its units' storage is destroyed once detached, instead of kept. */
  removeApplication(model: string, app: string, force = false, destroyStorage = false): Promise<void> {
    return this.call(routes.removeApplication, { model, app }, undefined, {
      force: force || undefined,
      destroyStorage: destroyStorage || undefined,
    });
  }
  /** `attachStorage`: kept storage instances of the application (`data/0`) for the one new unit. */
  addUnits(
    model: string,
    app: string,
    count: number,
    to?: string[],
    attachStorage?: string[],
  ): Promise<{ units: string[] }> {
    return this.call(
      routes.addUnits,
      { model, app },
      { count, ...(to ? { to } : {}), ...(attachStorage?.length ? { attachStorage } : {}) },
    );
  }
  /** `destroyStorage`: the unit's storage is destroyed once detached, instead of kept. */
  removeUnit(model: string, unit: string, force = false, destroyStorage = false): Promise<void> {
    return this.call(routes.removeUnit, { model, ...unitParams(unit) }, undefined, {
      force: force || undefined,
      destroyStorage: destroyStorage || undefined,
    });
  }
  /** The model's storage instances, attached or kept. */
  listStorage(model: string): Promise<{ storage: StorageInfo[] }> {
    return this.call(routes.listStorage, { model });
  }
  /** One storage instance in full (`data/0`). */
  showStorage(model: string, id: string): Promise<StorageDetails> {
    const slash = id.indexOf("/");
    return this.call(routes.showStorage, { model, store: id.slice(0, slash), n: id.slice(slash + 1) });
  }
  /** Live units' instances: detaching hooks run, then they are kept; `force`: even below the operator's minimum. */
  detachStorage(model: string, ids: string[], force = false): Promise<{ ids: string[] }> {
    return this.call(routes.detachStorage, { model }, { ids, force });
  }
  /** Kept instances to live unit `unit` of their application. */
  attachStorage(model: string, unit: string, ids: string[]): Promise<{ ids: string[] }> {
    return this.call(routes.attachStorage, { model }, { unit, ids });
  }
  /** Destroys detached instances; `force`: attached ones too (detached first). */
  removeStorage(model: string, ids: string[], force = false): Promise<{ ids: string[] }> {
    return this.call(routes.removeStorage, { model }, { ids, force });
  }
  /** The model's storage pools, built-in and made. */
  listStoragePools(model: string): Promise<{ pools: StoragePoolInfo[] }> {
    return this.call(routes.listStoragePools, { model });
  }
  /** Makes pool `name` of type `type` (one of the substrate's pools) with `attributes`. */
  createStoragePool(
    model: string,
    name: string,
    type: string,
    attributes: Record<string, string> = {},
  ): Promise<StoragePoolInfo> {
    return this.call(routes.createStoragePool, { model }, { name, type, attributes });
  }
  removeStoragePool(model: string, pool: string): Promise<void> {
    return this.call(routes.removeStoragePool, { model, pool });
  }

  // --- secrets (user secrets: owned by the model; operators' secrets are listed and shown too) ---
  /** Every secret of the model, metadata only: owner, revisions, grants, who tracks which revision. */
  listSecrets(model: string): Promise<{ secrets: SecretInfo[] }> {
    return this.call(routes.listSecrets, { model });
  }
  /** One secret by name or `secret:<id>`, metadata only. */
  showSecret(model: string, secret: string): Promise<SecretInfo> {
    return this.call(routes.showSecret, { model, secret }) as Promise<SecretInfo>;
  }
  /** One secret with the values of `revision` (default: the latest): for its creator or a superuser only. */
  revealSecret(model: string, secret: string, revision?: number): Promise<RevealedSecret> {
    return this.call(routes.showSecret, { model, secret }, undefined, {
      reveal: true,
      revision,
    }) as Promise<RevealedSecret>;
  }
  /** A user secret named `name`; answers its uri and revision (1, or the existing one when it holds the same values). */
  addSecret(
    model: string,
    name: string,
    values: Record<string, string>,
    description?: string,
  ): Promise<{ uri: string; revision: number }> {
    return this.call(
      routes.addSecret,
      { model },
      { name, values, ...(description !== undefined ? { description } : {}) },
    );
  }
  /** New values make a new revision; a new name or description alone does not. */
  updateSecret(
    model: string,
    secret: string,
    change: { values?: Record<string, string>; name?: string; description?: string },
  ): Promise<{ uri: string; revision: number }> {
    return this.call(routes.updateSecret, { model, secret }, change);
  }
  /** A user secret, or only one of its revisions. */
  removeSecret(model: string, secret: string, revision?: number): Promise<void> {
    return this.call(routes.removeSecret, { model, secret }, undefined, { revision });
  }
  /** Lets the applications' units read it (`secret-get`), e.g. through a config option of type secret. */
  grantSecret(model: string, secret: string, apps: string[]): Promise<SecretInfo> {
    return this.call(routes.grantSecret, { model, secret }, { apps });
  }
  revokeSecret(model: string, secret: string, apps: string[]): Promise<SecretInfo> {
    return this.call(routes.revokeSecret, { model, secret }, { apps });
  }

  updateModel(
    model: string,
    config: { updateStatusInterval?: number; automaticallyRetryHooks?: boolean },
  ): Promise<{ name: string; config: Record<string, unknown>; constraints?: string }> {
    return this.call(routes.updateModel, { model }, { config });
  }
  /** The constraints of machines the model makes from now on (Juju's syntax; "" clears them); machines that exist keep theirs. */
  setModelConstraints(
    model: string,
    constraints: string,
  ): Promise<{ name: string; config: Record<string, unknown>; constraints?: string }> {
    return this.call(routes.updateModel, { model }, { constraints });
  }

  // --- integrations and units ---
  integrate(model: string, a: string, b: string): Promise<{ id: number; key: string }> {
    return this.call(routes.integrate, { model }, { endpoints: [a, b] });
  }
  removeIntegration(model: string, a: string, b: string): Promise<void> {
    return this.call(routes.removeIntegration, { model }, { endpoints: [a, b] });
  }
  showUnit(model: string, unit: string): Promise<UnitDetails> {
    return this.call(routes.showUnit, { model, ...unitParams(unit) });
  }
  /** The unit's recent workload and agent status changes, oldest first. */
  statusLog(model: string, unit: string): Promise<{ entries: StatusLogEntry[] }> {
    return this.call(routes.statusLog, { model, ...unitParams(unit) });
  }
  resolve(model: string, unit: string, retry = true): Promise<void> {
    return this.call(routes.resolve, { model, ...unitParams(unit) }, { retry }).then(() => undefined);
  }

  // --- actions ---
  /** Queues `action` on units (`web/0`), leaders (`web/leader`) or whole applications (`web`). */
  runAction(
    model: string,
    targets: string[],
    action: string,
    params: Record<string, ActionValue> = {},
  ): Promise<RunActionResult> {
    return this.call(routes.runAction, { model }, { targets, action, params });
  }
  task(model: string, id: number): Promise<TaskInfo> {
    return this.call(routes.task, { model, id: String(id) });
  }
  operations(model: string, limit = 20): Promise<{ operations: OperationInfo[] }> {
    return this.call(routes.operations, { model }, undefined, { limit });
  }

  // --- machines ---
  /** `constraints` (Juju's syntax, aws and vsphere) are merged over the model's. */
  addMachines(
    model: string,
    substrate: ModelSubstrate,
    count = 1,
    constraints?: string,
  ): Promise<{ machines: { id: string; credential?: string }[] }> {
    return this.call(routes.addMachines, { model }, {
      substrate,
      count,
      ...(constraints ? { constraints } : {}),
    } as BodyOf<typeof routes.addMachines>);
  }
  /** Checks the host at once and installs an agent there in the background (see machine status). */
  addSshMachine(
    model: string,
    ssh: SshMachineRequest,
    o: { storageDevices?: string[] } = {},
  ): Promise<{ machines: { id: string; hostKey: string }[] }> {
    const devices = o.storageDevices?.length ? { storageDevices: o.storageDevices } : {};
    return this.call(routes.addMachines, { model }, { substrate: "ssh", ssh, ...devices }) as Promise<{
      machines: { id: string; hostKey: string }[];
    }>;
  }
  listMachines(model: string): Promise<MachineInfo[]> {
    return this.call(routes.listMachines, { model });
  }
  /**
   * The agent releases the controller holds (`steward upgrade-model`), those of its source it
   * refused, with why, and why its source could not be read (`problem`) if it could not.
   */
  async listAgentReleases(): Promise<{ releases: AgentReleaseInfo[]; refused: RefusedRelease[]; problem?: string }> {
    const r = await this.call(routes.listAgentReleases, {});
    return { releases: r.releases, refused: r.refused ?? [], ...(r.problem ? { problem: r.problem } : {}) };
  }
  /** The keys the controller trusts to sign releases (superusers). */
  releaseKeys(): Promise<ReleaseKeys> {
    return this.call(routes.getReleaseKeys, {});
  }
  /** Trusts more release keys, or fewer (superusers); answers the keys trusted now. */
  changeReleaseKeys(change: { trust?: string[]; distrust?: string[] }): Promise<ReleaseKeys> {
    return this.call(routes.changeReleaseKeys, {}, change);
  }
  /** Asks machines' agents to move to agent release `to` (each one a new attempt). */
  upgradeAgents(
    model: string,
    body: { to: string; machines: string[]; trialSeconds?: number },
  ): Promise<AgentUpgradeStarted> {
    return this.call(routes.upgradeAgents, { model }, body);
  }
  removeMachine(model: string, id: string, force = false): Promise<void> {
    return this.call(routes.removeMachine, { model, id }, undefined, { force: force || undefined });
  }

  /**
   * A model's agent and hook logs (`steward debug-log`): `onRecord` gets each record, `onDropped`
   * how many the controller skipped because this client read too slowly. Resolves when the stream
   * ends (after the backlog with `tail: false`) or `signal` aborts.
   */
  async debugLog(
    model: string,
    q: DebugLogQuery,
    onRecord: (r: DebugLogRecord) => void,
    opts: { signal?: AbortSignal; onDropped?: (n: number) => void } = {},
  ): Promise<void> {
    const path = pathOf(
      routes.debugLog,
      { model },
      {
        include: q.include,
        exclude: q.exclude,
        level: q.level,
        lines: q.lines,
        replay: q.replay ? true : undefined,
        tail: q.tail === false ? false : undefined,
      },
    );
    if (!this.token && this.opts.password) await this.login();
    try {
      await this.streamLines(path, (line) => parseLogLine(line, onRecord, opts.onDropped), opts.signal);
    } catch (err) {
      if (!(StewardError.isInstance(err) && err.code === "unauthorized" && this.opts.password)) throw err;
      await this.login();
      await this.streamLines(path, (line) => parseLogLine(line, onRecord, opts.onDropped), opts.signal);
    }
  }

  /**
   * Follows a model's status: `onStatus` gets the full status now and after every change
   * (coalesced by the controller). Resolves when `signal` aborts; rejects if the stream breaks.
   */
  async watchStatus(model: string, onStatus: (s: ModelStatus) => void, signal: AbortSignal): Promise<void> {
    if (!this.token) await this.login();
    for (;;) {
      let received = false;
      try {
        return await this.watchOnce(
          model,
          (s) => {
            received = true;
            onStatus(s);
          },
          signal,
        );
      } catch (err) {
        // The token ended (expired, or revoked by a password change): with a password at hand, log
        // in again and carry on; not if the new token was refused before anything arrived.
        if (!StewardError.isInstance(err) || err.code !== "unauthorized" || !this.opts.password || !received) throw err;
        await this.login();
      }
    }
  }

  private async watchOnce(model: string, onStatus: (s: ModelStatus) => void, signal: AbortSignal): Promise<void> {
    const address = this.list[this.preferred]!;
    // Loaded here: only watches need it, and a one-shot CLI command starts faster without it.
    const WebSocketClass = require("ws") as typeof WebSocket;
    const ws = new WebSocketClass(`wss://${address}/v1/models/${enc(model)}/watch`, {
      ca: this.opts.caCert,
      servername: CONTROLLER_TLS_NAME,
      headers: { authorization: `Bearer ${this.token}` },
    } as WebSocket.ClientOptions);
    await new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        ws.close(1000);
        resolve();
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener("abort", onAbort, { once: true });
      ws.on("message", (data: Buffer) => {
        const msg = JSON.parse(data.toString("utf8")) as { status?: ModelStatus; error?: unknown };
        if (msg.status) onStatus(msg.status);
        else if (msg.error) reject(errorFromWire(msg.error, 400));
      });
      ws.on("unexpected-response", (_req, res) =>
        reject(
          new StewardError(
            res.statusCode === 401 ? "unauthorized" : res.statusCode === 404 ? "not-found" : "unavailable",
            `watch refused with HTTP ${res.statusCode}`,
          ),
        ),
      );
      ws.on("error", (err: NodeJS.ErrnoException) =>
        reject(
          err.code && UNTRUSTED_CERTIFICATE_ERRORS.has(err.code) ? untrustedCertificate(address, err.code, err) : err,
        ),
      );
      ws.on("close", (code: number, reason: Buffer) => {
        signal.removeEventListener("abort", onAbort);
        if (signal.aborted) return;
        if (code === WATCH_CLOSE_CODES.tokenEnded)
          reject(new StewardError("unauthorized", `status stream closed: ${reason.toString()}`));
        else if (code === WATCH_CLOSE_CODES.accessEnded)
          reject(new StewardError("forbidden", `status stream closed: ${reason.toString()}`));
        else
          reject(
            new StewardError("unavailable", "status stream closed by the controller", { reason: "stream-broken" }),
          );
      });
    });
  }
}
/** The stream of `GET /v1/models/<model>/logs`: one JSON object a line; empty lines are heartbeats. */
function parseLogLine(line: string, onRecord: (r: DebugLogRecord) => void, onDropped?: (n: number) => void): void {
  if (!line.trim()) return;
  const v = JSON.parse(line) as DebugLogRecord | { dropped: number } | { ended: { code: ErrorCode; message: string } };
  if ("ended" in v) throw new StewardError(v.ended.code, `log stream closed: ${v.ended.message}`);
  if ("dropped" in v) onDropped?.(v.dropped);
  else onRecord(v);
}

function enc(s: string): string {
  return encodeURIComponent(s);
}

/** A unit's name as the path parameters of its routes: `web/0` → `{app: "web", n: "0"}`. */
function unitParams(unit: string): { app: string; n: string } {
  const [app = "", n = ""] = unit.split("/");
  return { app, n };
}
