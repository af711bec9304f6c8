/**
 * Enrolment of cloud machines: an instance launched with cloud-init has no SSH session to receive
 * its agent's credential, so its user data carries a one-time token instead. The token lets the
 * instance download the agent, and is traded once for the agent's credential (`POST /v1/enrol`).
 * Only its hash is stored; it expires unused after a while, and a used one is gone.
 *
 * A controller replica on a new cloud instance enrols the same way: it downloads the controller,
 * reports itself ready (staged), and, once the leader has added it to etcd and left its data
 * (certificates, configuration: sealed, it holds the CA key), collects that data once.
 */
import { StewardError } from "../../api";
import { hashCredential, newSecret } from "../security/credentials";
import { unchanged } from "../store";
import { keys } from "./keys";
import { docs, put } from "./doc-kinds";
import { StoreTxns } from "./txn";

export interface EnrolmentDoc {
  /** `agent` (absent in older documents) or `replica`. */
  kind?: "agent" | "replica";
  model: string;
  machine: string;
  expiresAt: number;
  /** Replicas: the instance has the controller's files and asks for its data. */
  staged?: boolean;
  /** Replicas: the data directory's files, sealed for `replica/<token hash>`. */
  sealedData?: string;
}

/** The purpose a replica's data is sealed for (security/sealing.ts). */
export const replicaDataPurpose = (token: string): string => `replica/${hashCredential(token)}`;

/** How long an instance has to boot and enrol. */
export const ENROLMENT_LIFETIME_MS = 30 * 60 * 1000;

const refused = (): StewardError => new StewardError("unauthorized", "unknown, used or expired enrolment token");

export class EnrolmentOps extends StoreTxns {
  /** A new one-time token for the machine's instance (an earlier unused one stays valid until it expires). */
  async issue(model: string, machine: string, lifetimeMs = ENROLMENT_LIFETIME_MS): Promise<string> {
    const token = newSecret();
    const doc: EnrolmentDoc = { model, machine, expiresAt: this.now().getTime() + lifetimeMs };
    await this.store.put(keys.enrolment(hashCredential(token)), JSON.stringify(doc));
    return token;
  }

  /** The machine a valid token enrols, without using it up (the instance downloads the agent with it first). */
  async check(token: string): Promise<EnrolmentDoc> {
    const e = await this.get(docs.enrolment, hashCredential(token));
    if (!e || e.doc.expiresAt < this.now().getTime()) throw refused();
    return e.doc;
  }

  /** A new one-time token for a replica's instance. */
  async issueReplica(lifetimeMs = ENROLMENT_LIFETIME_MS): Promise<string> {
    const token = newSecret();
    const doc: EnrolmentDoc = { kind: "replica", model: "", machine: "", expiresAt: this.now().getTime() + lifetimeMs };
    await this.store.put(keys.enrolment(hashCredential(token)), JSON.stringify(doc));
    return token;
  }

  /** Whether the replica's instance has fetched the controller and waits for its data. */
  async replicaStaged(token: string): Promise<boolean> {
    return (await this.get(docs.enrolment, hashCredential(token)))?.doc.staged === true;
  }

  /** Leaves the replica's sealed data for its instance to collect. */
  async provideReplicaData(token: string, sealedData: string): Promise<void> {
    const id = hashCredential(token);
    const key = keys.enrolment(id);
    await this.retry(
      "replica data",
      async () => {
        const e = await this.get(docs.enrolment, id);
        if (!e || e.doc.kind !== "replica") throw refused();
        return {
          compare: [unchanged(key, e.rev)],
          ops: [put(docs.enrolment, id, { ...e.doc, sealedData })],
          result: {},
        };
      },
      { secretResult: true },
    );
  }

  /** The replica's sealed data, once (the token is then spent); until the leader left it, marks the instance staged and answers undefined. */
  async collectReplicaData(token: string): Promise<string | undefined> {
    const id = hashCredential(token);
    const key = keys.enrolment(id);
    const res = await this.retry<{ sealed?: string }>(
      "replica enrolment",
      async () => {
        const e = await this.get(docs.enrolment, id);
        if (!e || e.doc.kind !== "replica" || e.doc.expiresAt < this.now().getTime()) throw refused();
        if (e.doc.sealedData)
          return {
            compare: [unchanged(key, e.rev)],
            ops: [{ type: "delete", key }],
            result: { sealed: e.doc.sealedData },
          };
        if (e.doc.staged) return { compare: [], ops: [], result: {} };
        return {
          compare: [unchanged(key, e.rev)],
          ops: [put(docs.enrolment, id, { ...e.doc, staged: true })],
          result: {},
        };
      },
      { secretResult: true },
    );
    return res.sealed;
  }

  /** Deletes tokens that expired unused (an instance that never came up); returns how many. */
  async sweepExpired(): Promise<number> {
    const now = this.now().getTime();
    const expired = (await this.getAll(docs.enrolment)).filter((e) => e.doc.expiresAt < now);
    for (const e of expired)
      await this.store.txn({ compare: [unchanged(e.key, e.rev)], success: [{ type: "delete", key: e.key }] });
    return expired.length;
  }

  /** Uses the token up and issues the machine's agent credential, in one transaction. */
  async redeem(token: string): Promise<{ model: string; machine: string; credential: string }> {
    const id = hashCredential(token);
    const key = keys.enrolment(id);
    const credential = newSecret();
    const res = await this.retry(
      "enrol",
      async () => {
        const e = await this.get(docs.enrolment, id);
        if (!e || e.doc.kind === "replica" || e.doc.expiresAt < this.now().getTime()) throw refused();
        const md = await this.get(docs.machine, e.doc.model, e.doc.machine);
        if (!md || md.doc.life !== "alive")
          throw new StewardError("not-found", `machine ${e.doc.machine} is gone: this instance is no longer wanted`);
        return {
          compare: [unchanged(key, e.rev), unchanged(keys.machine(e.doc.model, e.doc.machine), md.rev)],
          ops: [
            { type: "delete", key },
            put(docs.machine, e.doc.model, e.doc.machine, { ...md.doc, credentialHash: hashCredential(credential) }),
          ],
          result: { model: e.doc.model, machine: e.doc.machine },
        };
      },
      { secretResult: true },
    );
    return { model: res.model, machine: res.machine, credential };
  }
}
