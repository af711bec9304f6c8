/**
 * The state's domain operations, one class per entity, each a set of store transactions that read
 * what they depend on, check it, and write with compares on every revision they read (a concurrent
 * change makes them retry instead of being overwritten; a refused operation writes nothing).
 * `StateOps` gathers them for the controller (`ops.models.create(…)`, `ops.applications.deploy(…)`)
 * and keeps the controller's identity and its users. Writes a caller waits on answer `{…, revision}`;
 * the cleaner's finishing steps answer only whether they did it.
 */
import { randomUUID } from "node:crypto";
import { StewardError, alreadyExists, notFound } from "../../api";
import type { Store } from "../store";
import { absent, unchanged } from "../store";
import { hashPassword, newSecret } from "../security/credentials";
import type { RevokedTokenDoc, UserDoc } from "./documents";
import { SCHEMA_VERSION } from "./documents";
import { ApplicationOps } from "./application-ops";
import { docs, put } from "./doc-kinds";
import { keys } from "./keys";
import { MachineOps } from "./machine-ops";
import { ModelOps } from "./model-ops";
import { OperatorOps } from "./operator-ops";
import { StoreTxns } from "./txn";
import { UnitReportOps } from "./unit-report-ops";

export { modelDeletes } from "./model-ops";

export class StateOps extends StoreTxns {
  readonly models: ModelOps;
  readonly operators: OperatorOps;
  readonly applications: ApplicationOps;
  readonly machines: MachineOps;
  /** What agents report of their units (status, history, failures). */
  readonly reports: UnitReportOps;

  constructor(store: Store, now?: () => Date) {
    super(store, now);
    this.models = new ModelOps(store, now);
    this.operators = new OperatorOps(store, now);
    this.applications = new ApplicationOps(store, now, this.operators);
    this.machines = new MachineOps(store, now);
    this.reports = new UnitReportOps(store, now);
  }

  // --- controller and users ---

  /** Creates the controller's identity, token key and admin user; a second call changes nothing. */
  async initController(
    name: string,
    adminPassword: string,
    presetUuid?: string,
  ): Promise<{ created: boolean; uuid: string }> {
    const existing = await this.get(docs.controller);
    if (existing) return { created: false, uuid: existing.doc.uuid };
    const uuid = presetUuid ?? randomUUID();
    const admin: UserDoc = {
      name: "admin",
      passwordHash: await hashPassword(adminPassword),
      superuser: true,
      createdAt: this.stamp(),
    };
    const res = await this.store.txn({
      compare: [absent(keys.controller)],
      success: [
        put(docs.controller, {
          uuid,
          name,
          createdAt: this.stamp(),
          schemaVersion: SCHEMA_VERSION,
        }),
        { type: "put", key: keys.tokenKey, value: JSON.stringify(newSecret(32)) },
        { type: "put", key: keys.user("admin"), value: JSON.stringify(admin) },
      ],
    });
    return { created: res.succeeded, uuid };
  }
  async createUser(name: string, password: string, superuser: boolean): Promise<void> {
    const doc: UserDoc = { name, passwordHash: await hashPassword(password), superuser, createdAt: this.stamp() };
    await this.retry(`create user ${name}`, async () => {
      if (await this.store.get(keys.user(name))) throw alreadyExists("user", name);
      return {
        compare: [absent(keys.user(name))],
        ops: [{ type: "put", key: keys.user(name), value: JSON.stringify(doc) }],
        result: {},
      };
    });
  }
  async grant(modelUuid: string, user: string, access: "read" | "write" | "admin"): Promise<number> {
    const res = await this.retry(`grant ${user} ${access}`, async () => {
      const u = await this.store.get(keys.user(user));
      if (!u) throw notFound("user", user);
      const m = await this.store.get(keys.model(modelUuid));
      if (!m) throw notFound("model", modelUuid);
      return {
        compare: [unchanged(keys.user(user), u.modRevision), unchanged(keys.model(modelUuid), m.modRevision)],
        ops: [{ type: "put", key: keys.access(modelUuid, user), value: JSON.stringify({ access }) }],
        result: {},
      };
    });
    return res.revision;
  }
  /** Takes away a user's access to a model (their open status watches close; agents are unaffected). */
  async revokeAccess(modelUuid: string, user: string): Promise<number> {
    const res = await this.store.txn({
      compare: [{ key: keys.access(modelUuid, user), target: "createRevision", op: ">", value: 0 }],
      success: [{ type: "delete", key: keys.access(modelUuid, user) }],
    });
    if (!res.succeeded)
      throw new StewardError("not-found", `user "${user}" has no access to this model (nothing to revoke)`, {
        details: { kind: "access", name: user },
      });
    return res.revision;
  }
  /** Sets a user's password (given hashed) and ends every token issued to them before now. */
  async changePassword(name: string, passwordHash: string): Promise<number> {
    const res = await this.retry(`change the password of ${name}`, async () => {
      const u = await this.read<UserDoc>(keys.user(name));
      if (!u) throw notFound("user", name);
      const doc: UserDoc = { ...u.doc, passwordHash, tokensValidAfter: this.now().getTime() };
      return {
        compare: [unchanged(keys.user(name), u.rev)],
        ops: [{ type: "put", key: keys.user(name), value: JSON.stringify(doc) }],
        result: {},
      };
    });
    return res.revision;
  }
  /**
   * Revokes one token (logout) until it would have expired. Revocations already past their expiry
   * are deleted in the same write, so the list stays as short as the tokens still alive.
   */
  async revokeToken(id: string, user: string, expiresAt: number): Promise<number> {
    const now = this.now().getTime();
    const expired = (await this.readAll<RevokedTokenDoc>(keys.revokedTokensPrefix)).filter(
      (r) => r.doc.expiresAt < now && r.key !== keys.revokedToken(id),
    );
    const doc: RevokedTokenDoc = { user, expiresAt };
    const res = await this.store.txn({
      success: [
        { type: "put", key: keys.revokedToken(id), value: JSON.stringify(doc) },
        ...expired.slice(0, 100).map((r) => ({ type: "delete" as const, key: r.key })),
      ],
    });
    return res.revision;
  }
}
