/**
 * Machines as store transactions: adding them (made by the model's substrate, by hand, or over SSH),
 * their agents' credentials, install progress and facts, and removing them.
 */
import type { Constraints, ModelPlacement } from "../../api";
import { StewardError, contractOf, hasConstraints, invalidRequest, mergeConstraints, notFound } from "../../api";
import type { Compare, Op } from "../store";
import { unchanged } from "../store";
import { hashCredential, newSecret } from "../security/credentials";
import type { MachineDoc, MachineInstallDoc, Substrate } from "./documents";
import { checkMachineConstraints } from "./constraints";
import { keys } from "./keys";
import { docs, put, putBack } from "./doc-kinds";
import { aliveModel } from "./model-ops";
import { StoreTxns } from "./txn";

export class MachineOps extends StoreTxns {
  /**
   * Creates machines of a kind added by count; for those whose agents are started by hand returns
   * each agent's credential (shown once, stored hashed).
   */
  async add(
    uuid: string,
    substrate: Substrate,
    count: number,
    own?: Constraints,
  ): Promise<{ machines: { id: string; credential?: string }[]; revision: number }> {
    return this.retry(
      "add machines",
      async () => {
        if (contractOf(substrate).addMachines !== "count")
          throw invalidRequest(`${substrate} machines are not added by count`, { field: "substrate" });
        const m = await aliveModel(this.store, uuid);
        const modelSubstrate = m.doc.placement.substrate;
        if (contractOf(substrate).instances && modelSubstrate !== substrate)
          throw invalidRequest(
            `${substrate} machines go only in ${substrate} models; this model's substrate is ${modelSubstrate}`,
            { field: "substrate" },
          );
        // The model's constraints are for the machines it makes, not for local or manual ones added to it.
        const constraints = substrate === modelSubstrate ? mergeConstraints(m.doc.constraints, own) : (own ?? {});
        if (hasConstraints(constraints))
          checkMachineConstraints(
            {
              placement:
                substrate === modelSubstrate ? m.doc.placement : ({ substrate, settings: {} } as ModelPlacement),
            },
            constraints,
          );
        const seq = await this.store.get(keys.machineSeq(uuid));
        let next = Number(seq?.value ?? "0");
        const ops: Op[] = [];
        const machines: { id: string; credential?: string }[] = [];
        for (let i = 0; i < count; i++) {
          const id = String(next++);
          const doc: MachineDoc = {
            id,
            substrate,
            life: "alive",
            createdAt: this.stamp(),
            ...(hasConstraints(constraints) ? { constraints } : {}),
          };
          let credential: string | undefined;
          if (contractOf(substrate).agentsStartedByHand) {
            credential = newSecret();
            doc.credentialHash = hashCredential(credential);
          }
          ops.push(put(docs.machine, uuid, id, doc));
          machines.push(credential ? { id, credential } : { id });
        }
        ops.push({ type: "put", key: keys.machineSeq(uuid), value: String(next) });
        return {
          compare: [unchanged(keys.model(uuid), m.rev), unchanged(keys.machineSeq(uuid), seq?.modRevision ?? 0)],
          ops,
          result: { machines },
        };
      },
      { secretResult: !!contractOf(substrate).agentsStartedByHand },
    );
  }
  /**
   * Registers a machine of a kind added by address (a host reached over SSH), or returns the one
   * already registered for the same host and port (so running add-machine again resumes an install
   * instead of adding a second machine).
   */
  async addSsh(
    uuid: string,
    substrate: Substrate,
    ssh: { host: string; port: number; user: string; hostKey: string },
    storageDevices?: string[],
  ): Promise<{ id: string; created: boolean; revision: number }> {
    return this.retry<{ id: string; created: boolean }>(`add machine ${ssh.host}`, async () => {
      if (contractOf(substrate).addMachines !== "address")
        throw invalidRequest(`${substrate} machines are not added by address`, { field: "substrate" });
      const m = await aliveModel(this.store, uuid);
      const machines = await this.getAll(docs.machine, uuid);
      const same = machines.find((x) => x.doc.ssh?.host === ssh.host && x.doc.ssh.port === ssh.port);
      if (same) {
        if (same.doc.life !== "alive")
          throw invalidRequest(
            `machine ${same.doc.id} (${ssh.host}) is being removed; wait until it is gone, then add it again`,
          );
        if (same.doc.ssh!.hostKey !== ssh.hostKey)
          throw new StewardError(
            "forbidden",
            `${ssh.host} is machine ${same.doc.id} with host key ${same.doc.ssh!.hostKey}, but it now offers ${ssh.hostKey}; if the host was reinstalled, remove the machine and add it again`,
          );
        // Devices declared again replace those declared before (one may be declared once the host has it).
        if (storageDevices === undefined || sameList(same.doc.storageDevices ?? [], storageDevices))
          return { compare: [], ops: [], result: { id: same.doc.id, created: false } };
        return {
          compare: [unchanged(same.key, same.rev)],
          ops: [putBack(same, { ...same.doc, storageDevices })],
          result: { id: same.doc.id, created: false },
        };
      }
      const seq = await this.store.get(keys.machineSeq(uuid));
      const id = seq?.value ?? "0";
      const doc: MachineDoc = {
        id,
        substrate,
        life: "alive",
        createdAt: this.stamp(),
        ssh,
        ...(storageDevices?.length ? { storageDevices } : {}),
      };
      return {
        compare: [
          unchanged(keys.model(uuid), m.rev),
          unchanged(keys.machineSeq(uuid), seq?.modRevision ?? 0),
          ...machines.map((x) => unchanged(x.key, x.rev)),
        ],
        ops: [
          put(docs.machine, uuid, id, doc),
          { type: "put", key: keys.machineSeq(uuid), value: String(Number(id) + 1) },
        ],
        result: { id, created: true },
      };
    });
  }
  async setInstall(uuid: string, id: string, doc: Omit<MachineInstallDoc, "at">): Promise<void> {
    await this.store.txn({
      compare: [{ key: keys.machine(uuid, id), target: "createRevision", op: ">", value: 0 }],
      success: [put(docs.machineInstall, uuid, id, { ...doc, at: this.stamp() })],
    });
  }
  /** Issues a fresh credential for a machine's agent (used by substrates that install agents). */
  async issueCredential(uuid: string, id: string): Promise<string> {
    const credential = newSecret();
    await this.retry(
      `credential for machine ${id}`,
      async () => {
        const md = await this.get(docs.machine, uuid, id);
        if (!md) throw notFound("machine", id);
        return {
          compare: [unchanged(keys.machine(uuid, id), md.rev)],
          ops: [put(docs.machine, uuid, id, { ...md.doc, credentialHash: hashCredential(credential) })],
          result: {},
        };
        // Never replayed: a retried install hands the agent this new credential, so its hash must be written.
      },
      { secretResult: true },
    );
    return credential;
  }
  async remove(uuid: string, id: string, force: boolean): Promise<{ revision: number }> {
    return this.retry(`remove machine ${id}`, async () => {
      const md = await this.get(docs.machine, uuid, id);
      if (!md) throw notFound("machine", id);
      const units = (await this.getAll(docs.unit, uuid)).filter((u) => u.doc.machine === id);
      if (units.length > 0 && !force) {
        throw new StewardError(
          "invalid-request",
          `machine ${id} still runs ${units.map((u) => u.doc.name).join(", ")}: remove those units first, or use --force to remove them with it`,
          { details: { units: units.map((u) => u.doc.name) } },
        );
      }
      // Kept storage that lives on the machine (an SSH host's directory or disk) would be lost with it.
      const kept = (await this.getAll(docs.storage, uuid)).filter(
        (s) => s.doc.boundTo === id && s.doc.status === "detached" && s.doc.life === "alive",
      );
      if (kept.length > 0 && !force) {
        const ids = kept.map((s) => s.doc.id);
        throw new StewardError(
          "conflict",
          `machine ${id} holds kept storage ${ids.join(", ")}, which lives there and would be lost with it: attach it to a new unit there (add-unit APP --attach-storage ${ids[0]}) and remove that unit with --destroy-storage, or use --force to remove the machine and forget the storage (its data stays on the host)`,
          { reason: "machine-holds-storage", details: { storage: ids } },
        );
      }
      const compare: Compare[] = [
        unchanged(keys.machine(uuid, id), md.rev),
        ...units.map((u) => unchanged(u.key, u.rev)),
        ...kept.map((s) => unchanged(s.key, s.rev)),
      ];
      const ops: Op[] = kept.map((s) => ({ type: "delete" as const, key: s.key }));
      for (const u of units) {
        ops.push(
          { type: "delete", key: u.key },
          { type: "delete", key: keys.unitStatus(uuid, u.doc.name) },
          { type: "delete", key: keys.unitFailure(uuid, u.doc.name) },
        );
      }
      if (md.doc.life === "alive") ops.push(put(docs.machine, uuid, id, { ...md.doc, life: "dying" }));
      return { compare, ops, result: {} };
    });
  }
  /**
   * Asks machines' agents to move to agent release `release` (`steward upgrade-model`): each one's
   * request becomes a new attempt, so one that failed is tried again. Every machine must be alive.
   */
  async setAgentRelease(
    uuid: string,
    ids: string[],
    release: { version: string; hash: string; trialSeconds: number },
  ): Promise<{ machines: { id: string; attempt: number }[]; revision: number }> {
    return this.retry(`agent release ${release.version}`, async () => {
      const found = await Promise.all(ids.map(async (id) => ({ id, md: await this.get(docs.machine, uuid, id) })));
      for (const { id, md } of found) {
        if (!md) throw notFound("machine", id);
        if (md.doc.life !== "alive")
          throw invalidRequest(`machine ${id} is being removed: leave it out of the upgrade`, { field: "machines" });
      }
      const machines = found.map(({ id, md }) => ({ id, attempt: (md!.doc.agentRelease?.attempt ?? 0) + 1 }));
      return {
        compare: found.map(({ id, md }) => unchanged(keys.machine(uuid, id), md!.rev)),
        ops: found.map(({ id, md }, i) =>
          put(docs.machine, uuid, id, {
            ...md!.doc,
            agentRelease: { ...release, attempt: machines[i]!.attempt, requestedAt: this.stamp() },
          }),
        ),
        result: { machines },
      };
    });
  }
  /** Deletes a dying machine's documents once its agent is stopped (called by the substrate). */
  async finish(uuid: string, id: string): Promise<void> {
    const md = await this.get(docs.machine, uuid, id);
    if (!md || md.doc.life !== "dying") return;
    await this.store.txn({
      compare: [unchanged(keys.machine(uuid, id), md.rev)],
      success: [
        { type: "delete", key: keys.machine(uuid, id) },
        { type: "delete", key: keys.machineInfo(uuid, id) },
        { type: "delete", key: keys.machineInstall(uuid, id) },
        { type: "delete", key: keys.presence(uuid, id) },
      ],
    });
  }
  /** Marks every machine of a dying model dying once no units remain in it. */
  async retire(uuid: string): Promise<void> {
    const machines = await this.getAll(docs.machine, uuid);
    const units = await this.store.range(`${keys.modelPrefix(uuid)}units/`);
    if (units.kvs.length > 0) return;
    const alive = machines.filter((m) => m.doc.life === "alive");
    if (alive.length === 0) return;
    await this.store.txn({
      compare: alive.map((m) => unchanged(m.key, m.rev)),
      success: alive.map((m) => putBack(m, { ...m.doc, life: "dying" })),
    });
  }
  async setInfo(
    uuid: string,
    machine: string,
    info: {
      hostname: string;
      address: string;
      os: string;
      agentVersion: string;
      agentUpgradeFailure?: { version: string; attempt: number; message: string };
    },
  ): Promise<void> {
    const old = await this.get(docs.machineInfo, uuid, machine);
    await this.store.txn({
      compare: [{ key: keys.machine(uuid, machine), target: "createRevision", op: ">", value: 0 }],
      success: [put(docs.machineInfo, uuid, machine, { ...info, firstSeen: old?.doc.firstSeen ?? this.stamp() })],
    });
  }
}

const sameList = (a: readonly string[], b: readonly string[]): boolean =>
  a.length === b.length && a.every((x, i) => x === b[i]);
