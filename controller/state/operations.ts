/**
 * The state's domain operations, one class per entity, each a set of store transactions that read
 * what they depend on, check it, and write with compares on every revision they read (a concurrent
 * change makes them retry instead of being overwritten; a refused operation writes nothing).
 * `StateOps` gathers them for the controller (`ops.models.create(…)`, `ops.applications.deploy(…)`)
 * and keeps the controller's identity (users: user-ops.ts). Writes a caller waits on answer `{…, revision}`;
 * the cleaner's finishing steps answer only whether they did it.
 */
import { randomUUID } from "node:crypto";
import type { Store } from "../store";
import { STORE_FORMAT } from "../../api";
import { absent } from "../store";
import { hashPassword, newSecret } from "../security/credentials";
import type { UserDoc } from "./documents";
import { ApplicationOps } from "./application-ops";
import { docs, put } from "./doc-kinds";
import { keys } from "./keys";
import { MachineOps } from "./machine-ops";
import { ModelOps } from "./model-ops";
import { OperatorOps } from "./operator-ops";
import { StoreTxns } from "./txn";
import { StorageOps } from "./storage-ops";
import { StorageAttachmentOps } from "./storage-attachments";
import { StoragePoolOps } from "./storage-pools";
import { UnitReportOps } from "./unit-report-ops";

export { modelDeletes } from "./model-ops";

export class StateOps extends StoreTxns {
  readonly models: ModelOps;
  readonly operators: OperatorOps;
  readonly applications: ApplicationOps;
  readonly machines: MachineOps;
  /** What agents report of their units (status, history, failures). */
  readonly reports: UnitReportOps;
  /** What volume brokers report of storage instances (storage-ops.ts). */
  readonly storage: StorageOps;
  /** Pools users make per model (storage-pools.ts). */
  readonly storagePools: StoragePoolOps;
  /** Detaching, attaching and removing live units' storage (storage-attachments.ts). */
  readonly storageAttachments: StorageAttachmentOps;

  constructor(store: Store, now?: () => Date) {
    super(store, now);
    this.models = new ModelOps(store, now);
    this.operators = new OperatorOps(store, now);
    this.applications = new ApplicationOps(store, now, this.operators);
    this.machines = new MachineOps(store, now);
    this.reports = new UnitReportOps(store, now);
    this.storage = new StorageOps(store, now);
    this.storagePools = new StoragePoolOps(store, now);
    this.storageAttachments = new StorageAttachmentOps(store, now);
  }

  // --- the controller (users and their access: user-ops.ts) ---

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
          schemaVersion: STORE_FORMAT,
        }),
        { type: "put", key: keys.tokenKey, value: JSON.stringify(newSecret(32)) },
        put(docs.user, "admin", admin),
      ],
    });
    return { created: res.succeeded, uuid };
  }
}
