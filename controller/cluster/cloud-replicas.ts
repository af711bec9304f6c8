/**
 * Replica hosts from a cloud (`steward set-replica-cloud aws …`): when the quorum keeper needs a
 * host and the spare pool has none, the leader launches an instance whose user data installs a
 * controller replica without SSH (substrates/cloud-init.ts `replicaUserData`): it fetches the
 * controller from this cluster, reports itself staged, and collects its data directory (sealed in
 * the store until then: it holds the CA key) once the keeper has added it to etcd. A replica that
 * is replaced for good has its instance terminated, only after it is out of the etcd cluster.
 */
import type { Logger } from "../../api";
import type { Progress, ReplicaHost, ReplicaHostBroker } from "../../substrates";
import { aws, enrolmentFiles, replicaUserData } from "../../substrates";
import type { ControllerConfig } from "../config";
import type { Sealer } from "../security/sealing";
import type { CredentialOps, EnrolmentOps, StateCache } from "../state";
import { replicaDataPurpose } from "../state";
import type { ReplicaCloudDoc } from "./cluster-docs";
import { replicaDataFiles } from "./replica-data";

/** A host launched for a replica: its instance and the token its user data enrols with. */
export interface CloudHost extends ReplicaHost { instance: { id: string; zone?: string }; token: string; placement: aws.AwsPlacement }

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
  ec2?: aws.Ec2;
  /**
   * How long a new instance may take to boot and fetch the controller.
   * @default 600000
   */
  stageTimeoutMs?: number;
}

const REPLICA_TAG_VALUE = "replica";

export class CloudReplicaHosts implements ReplicaHostBroker<CloudHost> {
  private readonly ec2: aws.Ec2;

  constructor(private readonly o: CloudReplicaHostsOptions) {
    this.ec2 = o.ec2 ?? new aws.Ec2();
  }

  unavailable(): string | undefined {
    return this.o.cache.replicaCloud ? undefined : "no cloud is set for replicas (steward set-replica-cloud)";
  }

  private async placement(cloud: ReplicaCloudDoc): Promise<aws.AwsPlacement> {
    const c = await this.o.credentials.open(cloud.credential, "aws");
    return {
      settings: cloud.aws, controllerUuid: this.o.cache.controller?.uuid ?? "",
      credentials: { accessKeyId: c["access-key-id"]!, secretAccessKey: c["secret-access-key"]!, ...(c["session-token"] ? { sessionToken: c["session-token"] } : {}) },
    };
  }

  async acquire(nameFor: (address: string) => string, progress: Progress): Promise<CloudHost> {
    const cloud = this.o.cache.replicaCloud;
    if (!cloud) throw new Error(this.unavailable());
    const placement = await this.placement(cloud);
    const token = await this.o.enrolments.issueReplica();
    const files = [...enrolmentFiles().keys()].filter((f) => f !== "node" && f !== "etcd");
    // Replicas spread over zones: the next one goes where the fewest live ones are.
    const live = await this.ec2.instances(placement, { [aws.TAGS.replica]: REPLICA_TAG_VALUE }, aws.LIVE_STATES);
    progress(`launching a ${cloud.aws.instanceType} instance in ${cloud.aws.region}`);
    const launched = await this.ec2.launch(placement, {
      n: live.length, name: `steward-controller-${placement.controllerUuid.slice(0, 8)}`, tags: { [aws.TAGS.replica]: REPLICA_TAG_VALUE },
      userData: replicaUserData({ controller: { addresses: this.o.controllerAddresses(), caCert: this.o.caCert }, token, files }),
      idempotencyKey: replicaDataPurpose(token),
    });
    const host = { instance: { id: launched.id, ...(launched.zone ? { zone: launched.zone } : {}) }, token, placement };
    try {
      const deadline = Date.now() + (this.o.stageTimeoutMs ?? 600_000);
      let address: string | undefined;
      for (;;) {
        if (!address) {
          const now = await this.ec2.instance(placement, launched.id);
          if (!now || aws.GONE_STATES.has(now.state)) throw new Error(`instance ${launched.id} ${now?.state ?? "vanished"} before it was ready`);
          if (now.state === "running" && now.address) {
            address = now.address;
            progress(`instance ${launched.id} running at ${address} in ${now.zone ?? "?"}; waiting for it to fetch the controller`);
            nameFor(address);
          }
        }
        if (address && (await this.o.enrolments.replicaStaged(token))) return { ...host, address };
        if (Date.now() > deadline) throw new Error(`instance ${launched.id} did not ${address ? "fetch the controller" : "get an address"} within ${Math.round((this.o.stageTimeoutMs ?? 600_000) / 1000)} s; see /var/lib/steward/enrol-replica.log on it`);
        await new Promise((r) => setTimeout(r, 1000));
      }
    } catch (err) {
      await this.ec2.terminate(placement, [launched.id]).catch(() => undefined);
      throw err;
    }
  }

  async start(host: CloudHost, name: string, initialCluster: string, progress: Progress): Promise<void> {
    const data = await replicaDataFiles(this.o, host.address, name, initialCluster);
    await this.o.enrolments.provideReplicaData(host.token, this.o.sealer.sealJson(replicaDataPurpose(host.token), data));
    progress(`data left for instance ${host.instance.id}; it starts the replica once it has collected it`);
  }

  async joined(): Promise<void> {}

  async failed(host: CloudHost, why: string): Promise<void> {
    this.o.log.warn("terminating a replica instance whose install failed", { instance: host.instance.id, why });
    await this.ec2.terminate(host.placement, [host.instance.id]);
  }

  async retire(address: string): Promise<void> {
    const cloud = this.o.cache.replicaCloud;
    if (!cloud) return;
    const placement = await this.placement(cloud);
    const mine = (await this.ec2.instances(placement, { [aws.TAGS.replica]: REPLICA_TAG_VALUE }, aws.LIVE_STATES)).filter((i) => i.address === address);
    if (mine.length === 0) return;
    await this.ec2.terminate(placement, mine.map((i) => i.id));
    this.o.log.info("terminated the instance of a replaced replica", { address, instances: mine.map((i) => i.id).join(",") });
  }

  close(): void { this.ec2.close(); }
}
