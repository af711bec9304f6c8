/**
 * What the elected leader runs, one term at a time (controller.ts hands this to leaderScoped): the
 * provisioners of each substrate, the cleaner, the request-record sweeper, the secrets' schedule, the
 * migration master, the staging purge, the store's migration to this build's format, and with etcd
 * the quorum keeper with its replica hosts. Each is made afresh per term from the term's fenced
 * store, so nothing a deposed leader began can write after it.
 */
import { join } from "node:path";
import type { Logger } from "../api";
import { STORE_FORMAT } from "../api";
import type { MachineHost } from "../substrates";
import { Cleaner } from "./cleaner";
import { CloudReplicaHosts, QuorumKeeper, ReplicaHostChain, SparePool } from "./cluster";
import type { ControllerConfig } from "./config";
import { DEFAULT_AGENT_IMAGE, dataFiles, releaseSourceOf } from "./config";
import type { MigrationStaging } from "./migration";
import { MigrationMaster, stagingPurge } from "./migration";
import { CloudProvisioner } from "./provisioner/cloud-machines";
import type { KubernetesProvisionerOptions } from "./provisioner/kubernetes-units";
import { KubernetesProvisioner } from "./provisioner/kubernetes-units";
import { HostMachineProvisioner } from "./provisioner/host-machines";
import { StorageProvisioner } from "./provisioner/storage-volumes";
import type { Sealer } from "./security/sealing";
import type { ModelLogs } from "./state/model-logs";
import type { StateCache } from "./state";
import {
  CredentialOps,
  EnrolmentOps,
  RelationOps,
  ReleaseOps,
  SecretSchedule,
  StateOps,
  StoreMigrator,
  migrationWaitsFor,
  sweepRequestRecords,
} from "./state";
import type { ReleaseSourceConfig } from "./releases/release-source";
import { ReleaseSource } from "./releases/release-source";
import type { Store } from "./store";
import type { EtcdStore } from "./store/etcd";
import type { Worker } from "./workers";
import { periodic, withCleanup } from "./workers";

export interface LeaderWorkOptions {
  /** This replica's id (the store migration's record names who worked on it). */
  replica: string;
  dataDir: string;
  config: ControllerConfig;
  cache: StateCache;
  sealer: Sealer;
  caCert: string;
  controllerAddresses: () => string[];
  log: Logger;
  /** This replica's debug-log records (Kubernetes pass failures are told there). */
  logs: ModelLogs;
  staging: MigrationStaging;
  /** etcd's membership, when the store is etcd: the quorum keeper runs then. */
  membership: ReturnType<EtcdStore["membership"]> | undefined;
  /** Machines on this controller's host: where their agents go, and whether it makes them. */
  local: { host: MachineHost; enabled: boolean };
  cloudPollIntervalMs?: number;
  /** The controller's test schedule of secrets (ControllerOptions.secretRotateSeconds). */
  secretRotateSeconds?: number;
  kubernetes?: Pick<KubernetesProvisionerOptions, "pollIntervalMs" | "probes">;
  /** Seconds an unused operator is kept before the cleaner collects it. */
  unusedOperatorGraceSeconds: number;
}

/** The factory of one term's workers, from the term's fenced store. */
export function leaderWork(o: LeaderWorkOptions): (fenced: Store) => Worker[] {
  const { cache, caCert, controllerAddresses, log, dataDir, sealer } = o;
  return (fenced) => {
    const ops = new StateOps(fenced);
    const enrolments = new EnrolmentOps(fenced);
    const credentials = new CredentialOps(fenced, sealer);
    const work: Worker[] = [
      new HostMachineProvisioner({
        host: o.local.host,
        caCert,
        controllerAddresses,
        cache,
        ops,
        log,
        enabled: o.local.enabled,
      }),
      new StorageProvisioner({
        cache,
        ops,
        log,
        credentials,
        deps: { machinesDir: join(dataDir, dataFiles.machines) },
      }),
      new CloudProvisioner({
        cache,
        ops,
        store: fenced,
        enrolments,
        credentials,
        host: o.local.host,
        caCert,
        controllerAddresses,
        log,
        ...(o.cloudPollIntervalMs ? { pollIntervalMs: o.cloudPollIntervalMs } : {}),
      }),
      new KubernetesProvisioner({
        cache,
        ops,
        credentials,
        caCert,
        controllerAddresses,
        log,
        agentImage: o.config.kubernetes?.agentImage ?? DEFAULT_AGENT_IMAGE,
        ...(o.config.kubernetes?.probes ? { probes: o.config.kubernetes.probes } : {}),
        ...o.kubernetes,
        modelLog: (model, records) => o.logs.append(model, records),
      }),
      new Cleaner(cache, ops, new RelationOps(fenced), log, { graceMs: o.unusedOperatorGraceSeconds * 1000 }),
      periodic("request-record-sweeper", 60_000, () => sweepRequestRecords(fenced), {
        log,
        failure: "sweeping old request records failed; will retry",
        failureLevel: "warn",
      }),
      // Rotations due, expiries passed, secrets whose owner went: every few seconds (every second on a test schedule).
      periodic(
        "secret-schedule",
        o.secretRotateSeconds ? 1000 : 10_000,
        (signal) => new SecretSchedule(fenced, o.secretRotateSeconds).pass(cache, signal),
        { log, failure: "tending secrets failed; will retry", failureLevel: "warn" },
      ),
      new MigrationMaster({ store: fenced, cache, sealer, log, machinesDir: join(dataDir, dataFiles.machines) }),
      stagingPurge(o.staging, log),
      storeMigration(new StoreMigrator(fenced, o.replica), cache, log),
    ];
    const source = releaseSourceOf(o.config, dataDir);
    if (source)
      work.push(releaseSourcePoll(source, new ReleaseOps(fenced), () => cache.releaseKeys?.keys ?? source.keys, log));
    if (!o.membership) return work;
    const replicaCloud = new CloudReplicaHosts({
      cache,
      enrolments,
      credentials,
      sealer,
      dataDir,
      config: o.config,
      caCert,
      controllerAddresses,
      log,
    });
    // Spare hosts first (set aside on purpose), then the replica cloud (on Kubernetes, the StatefulSet), if one is set.
    const hosts = new ReplicaHostChain([
      new SparePool({ store: fenced, cache, dataDir, config: o.config, sealer }),
      replicaCloud,
    ]);
    const keeper = new QuorumKeeper({ store: fenced, membership: o.membership, cache, hosts, log });
    // The hosts' clients close once the keeper's last pass has ended.
    return [...work, withCleanup(keeper, () => replicaCloud.close())];
  };
}

/**
 * The store's migration to this build's format, once every replica reads it and the upgrade that
 * brought them has ended (store-migration.ts says why it waits): checked every few seconds. One the
 * previous leader began is resumed at once (no replica of an older build can start on it any more);
 * nothing to do on a store already at the format.
 */
function storeMigration(migrator: StoreMigrator, cache: StateCache, log: Logger): Worker {
  let waiting: string | undefined;
  return periodic(
    "store-migration",
    5_000,
    async (signal) => {
      const format = cache.controller?.schemaVersion;
      const unfinished = cache.storeMigration && !cache.storeMigration.doneAt;
      if (format === undefined || (format >= STORE_FORMAT && !unfinished)) return;
      const waitsFor = unfinished ? undefined : migrationWaitsFor(cache);
      if (waitsFor) {
        if (waitsFor !== waiting) log.info("the store's migration waits", { from: format, to: STORE_FORMAT, waitsFor });
        waiting = waitsFor;
        return;
      }
      log.info("migrating the store", { from: format, to: STORE_FORMAT });
      const { migration, rewritten } = await migrator.run(signal);
      if (migration) log.info("the store is migrated", { to: migration.to, rewritten });
    },
    { log, failure: "migrating the store failed; will retry", failureLevel: "warn", immediately: true },
  );
}

/**
 * The leader's look at the release source every poll interval (the first at once): verified
 * releases are held in the store for every replica, and what it refused is recorded for replicas
 * that have no source of their own to look at.
 */
function releaseSourcePoll(
  config: ReleaseSourceConfig & { pollSeconds: number },
  ops: ReleaseOps,
  trusted: () => readonly string[],
  log: Logger,
): Worker {
  const source = new ReleaseSource(config, ops, trusted);
  return periodic(
    "release-source",
    config.pollSeconds * 1000,
    async () => {
      const { held, refused, problem } = await source.look();
      for (const version of held) log.info("release verified and held", { version });
      await ops.recordSource({ refused, ...(problem ? { problem } : {}) });
    },
    { log, failure: "looking at the release source failed; will retry", failureLevel: "warn", immediately: true },
  );
}
