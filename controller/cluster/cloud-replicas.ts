/**
 * Replica hosts from a cloud (`steward set-replica-cloud aws|vsphere …`): when the quorum keeper
 * needs a host and the spare pool has none, the leader launches an instance (an EC2 instance, a VM
 * cloned from a vSphere template) whose user data installs a controller replica without SSH
 * (substrates/cloud-init.ts `replicaUserData`): it fetches the controller from this cluster, reports
 * itself staged, and collects its data directory (sealed in the store until then: it holds the CA
 * key) once the keeper has added it to etcd. A replica that is replaced for good has its instance
 * terminated, only after it is out of the etcd cluster.
 */
import type { Logger } from "../../api";
import type { Progress, ReplicaHost, ReplicaHostBroker } from "../../substrates";
import { aws, enrolmentFiles, replicaUserData, vsphere } from "../../substrates";
import { sleep } from "../workers";
import type { ControllerConfig } from "../config";
import type { Sealer } from "../security/sealing";
import type { CredentialOps, EnrolmentOps, StateCache } from "../state";
import { replicaDataPurpose } from "../state";
import type { ReplicaCloudDoc } from "../state";
import { replicaDataFiles } from "./replica-data";

/** One cloud's instances for replicas, seen the same way whatever the cloud. */
interface ReplicaInstances {
  launch(n: number, userData: Buffer, idempotencyKey: string): Promise<{ id: string; zone?: string }>;
  /** The instance's address once it runs; `gone` once it never will. */
  state(id: string): Promise<{ address?: string; zone?: string; gone: boolean }>;
  /** Live replica instances of this controller. */
  live(): Promise<{ id: string; address?: string }[]>;
  terminate(ids: string[]): Promise<void>;
}

/** A host launched for a replica: its instance and the token its user data enrols with. */
export interface CloudHost extends ReplicaHost {
  instance: { id: string; zone?: string };
  token: string;
  cloud: ReplicaInstances;
}

export interface CloudReplicaHostsOptions {
  cache: StateCache;
  /** Fenced, like every write of the leader's. */
  enrolments: EnrolmentOps;
  credentials: CredentialOps;
  sealer: Sealer;
  dataDir: string;
  config: ControllerConfig;
  caCert: string;
  controllerAddresses: () => string[];
  log: Logger;
  /**
   * How long a new instance may take to boot and fetch the controller.
   * @default 600000
   */
  stageTimeoutMs?: number;
}

/** Replica VMs on vSphere are named and marked as the machines of a pseudo-model (the bootstrap's VM too). */
const REPLICAS = vsphere.REPLICA_MODEL;

export class CloudReplicaHosts implements ReplicaHostBroker<CloudHost> {
  private readonly ec2 = new aws.Ec2();
  private readonly vms = new vsphere.VsphereMachines();

  constructor(private readonly o: CloudReplicaHostsOptions) {}

  unavailable(): string | undefined {
    const cloud = this.o.cache.replicaCloud;
    return cloud && cloud.substrate !== "kubernetes"
      ? undefined
      : "no cloud is set for replicas (steward set-replica-cloud)";
  }

  private async instancesOf(cloud: Exclude<ReplicaCloudDoc, { substrate: "kubernetes" }>): Promise<ReplicaInstances> {
    const c = await this.o.credentials.open(cloud.credential!, cloud.substrate);
    const controllerUuid = this.o.cache.controller?.uuid ?? "";
    if (cloud.substrate === "aws") {
      const p: aws.AwsPlacement = { settings: cloud.settings, controllerUuid, credentials: aws.awsCredentialsOf(c) };
      const tags = aws.REPLICA_TAGS;
      return {
        launch: async (n, userData, idempotencyKey) => {
          const i = await this.ec2.launch(p, {
            n,
            name: aws.replicaInstanceName(controllerUuid),
            tags,
            userData,
            idempotencyKey,
          });
          return { id: i.id, ...(i.zone ? { zone: i.zone } : {}) };
        },
        state: async (id) => {
          const i = await this.ec2.instance(p, id);
          return {
            gone: !i || aws.GONE_STATES.has(i.state),
            ...(i?.state === "running" && i.address ? { address: i.address } : {}),
            ...(i?.zone ? { zone: i.zone } : {}),
          };
        },
        live: () => this.ec2.instances(p, tags, aws.LIVE_STATES),
        terminate: (ids) => this.ec2.terminate(p, ids),
      };
    }
    const p: vsphere.VspherePlacement = {
      settings: cloud.settings,
      controllerUuid,
      credentials: vsphere.vsphereCredentialsOf(c),
    };
    const vms = (): Promise<vsphere.VsphereVm[]> => this.vms.instances(p, REPLICAS);
    return {
      launch: async (_n, userData) => ({
        id: await this.vms.cloneWith(p, { model: REPLICAS, machine: String(Date.now()), userData }),
      }),
      state: async (id) => {
        const vm = (await vms()).find((v) => v.id === id);
        return { gone: !vm || vm.state !== "poweredOn", ...(vm?.address ? { address: vm.address } : {}) };
      },
      live: async () => (await vms()).filter((v) => v.state === "poweredOn"),
      terminate: async (ids) => {
        for (const vm of (await vms()).filter((v) => ids.includes(v.id)))
          await this.vms.stopMachine({ model: REPLICAS, machine: vm.machine!, placement: p });
      },
    };
  }

  async acquire(nameFor: (address: string) => string, progress: Progress, signal?: AbortSignal): Promise<CloudHost> {
    const doc = this.o.cache.replicaCloud;
    if (!doc || doc.substrate === "kubernetes") throw new Error(this.unavailable());
    const cloud = await this.instancesOf(doc);
    const token = await this.o.enrolments.issueReplica();
    const files = [...enrolmentFiles().keys()].filter((f) => f !== "node" && f !== "etcd");
    // The n-th live replica instance goes to the n-th subnet or zone, spreading them out.
    const live = await cloud.live();
    progress(`launching an instance on ${doc.substrate}`);
    const launched = await cloud.launch(
      live.length,
      replicaUserData({ controller: { addresses: this.o.controllerAddresses(), caCert: this.o.caCert }, token, files }),
      replicaDataPurpose(token),
    );
    const host = { instance: launched, token, cloud };
    try {
      // Deposed while the instance boots: the next leader cannot know of it, so it is terminated below.
      signal?.throwIfAborted();
      const timeoutMs = this.o.stageTimeoutMs ?? 600_000;
      const deadline = Date.now() + timeoutMs;
      let address: string | undefined;
      for (;;) {
        if (!address) {
          const now = await cloud.state(launched.id);
          if (now.gone) throw new Error(`instance ${launched.id} stopped before it was ready`);
          if (now.address) {
            address = now.address;
            if (now.zone) host.instance = { ...launched, zone: now.zone };
            progress(`instance ${launched.id} running at ${address}; waiting for it to fetch the controller`);
            nameFor(address);
          }
        }
        if (address && (await this.o.enrolments.replicaStaged(token))) return { ...host, address };
        if (Date.now() > deadline)
          throw new Error(
            `instance ${launched.id} did not ${address ? "fetch the controller" : "get an address"} within ${Math.round(timeoutMs / 1000)} s; see /var/lib/steward/enrol-replica.log on it`,
          );
        await sleep(1000, signal);
      }
    } catch (err) {
      await cloud.terminate([launched.id]).catch(() => undefined);
      throw err;
    }
  }

  async start(host: CloudHost, name: string, initialCluster: string, progress: Progress): Promise<void> {
    const data = await replicaDataFiles(this.o, host.address, name, initialCluster);
    await this.o.enrolments.provideReplicaData(
      host.token,
      this.o.sealer.sealJson(replicaDataPurpose(host.token), data),
    );
    progress(`data left for instance ${host.instance.id}; it starts the replica once it has collected it`);
  }

  async joined(): Promise<void> {}

  async failed(host: CloudHost, why: string): Promise<void> {
    this.o.log.warn("terminating a replica instance whose install failed", { instance: host.instance.id, why });
    await host.cloud.terminate([host.instance.id]);
  }

  async abandon(host: CloudHost): Promise<void> {
    this.o.log.info("terminating a replica instance launched by a deposed leader", { instance: host.instance.id });
    await host.cloud.terminate([host.instance.id]);
  }

  async release(host: CloudHost): Promise<void> {
    this.o.log.info("terminating a replica instance that was not used", { instance: host.instance.id });
    await host.cloud.terminate([host.instance.id]);
  }

  async retire(address: string): Promise<void> {
    const doc = this.o.cache.replicaCloud;
    if (!doc || doc.substrate === "kubernetes") return;
    const cloud = await this.instancesOf(doc);
    const mine = (await cloud.live()).filter((i) => i.address === address).map((i) => i.id);
    if (mine.length === 0) return;
    await cloud.terminate(mine);
    this.o.log.info("terminated the instance of a replaced replica", { address, instances: mine.join(",") });
  }

  close(): void {
    this.ec2.close();
    this.vms.close();
  }
}
