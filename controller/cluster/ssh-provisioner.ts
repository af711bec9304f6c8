/**
 * Installing replicas on spare hosts over SSH, for the quorum keeper: the leader issues the new
 * replica's certificate from the controller CA (its key is on every replica), writes its
 * configuration (join the existing etcd cluster as `initialCluster` says) and starts it.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { install } from "../../agent";
import type { ControllerConfig } from "../config";
import { controllerFiles, dataFiles } from "../config";
import type { SpareDoc } from "./cluster-docs";
import type { ReplicaProvisioner } from "./quorum-keeper";

type Staged = Awaited<ReturnType<typeof install.stageReplica>>;

export class SshReplicaProvisioner implements ReplicaProvisioner {
  private readonly staged = new Map<string, Staged>();

  constructor(private readonly dataDir: string, private readonly config: ControllerConfig) {}

  private connect(spare: SpareDoc): Promise<install.SshSession> {
    return install.SshSession.connect({ host: spare.host, port: spare.port ?? 22, user: spare.user, privateKey: spare.privateKey, ...(spare.passphrase ? { passphrase: spare.passphrase } : {}), hostKey: spare.hostKey }, { attempts: 2 });
  }

  async stage(spare: SpareDoc, name: string, progress: (step: string) => void): Promise<void> {
    const s = await this.connect(spare);
    try {
      this.staged.set(name, await install.stageReplica(s, name, controllerFiles(), progress));
    } finally {
      s.close();
    }
  }

  async start(spare: SpareDoc, name: string, initialCluster: string, progress: (step: string) => void): Promise<void> {
    const staged = this.staged.get(name);
    if (!staged) throw new Error(`replica ${name} was not staged`);
    this.staged.delete(name);
    const data = await this.replicaData(spare.host, name, initialCluster);
    const s = await this.connect(spare);
    try {
      await install.startReplica(s, staged, { name, files: controllerFiles(), data, progress });
    } finally {
      s.close();
    }
  }

  /** The new replica's data directory: this controller's CA, a certificate for its host, its configuration. */
  private async replicaData(host: string, name: string, initialCluster: string): Promise<Record<string, string>> {
    // eslint-disable-next-line @typescript-eslint/consistent-type-imports
    const { issueServerCertificate } = require("../security/pki") as typeof import("../security/pki");
    const [caCert, caKey] = await Promise.all([dataFiles.caCert, dataFiles.caKey].map((f) => readFile(join(this.dataDir, f), "utf8")));
    const cert = await issueServerCertificate({ certPem: caCert!, keyPem: caKey! }, [host]);
    const own = this.config.member!;
    const config: ControllerConfig = {
      name: this.config.name,
      listen: { host: "0.0.0.0", port: this.config.listen.port },
      advertise: [`${host}:${this.config.listen.port}`],
      store: { backend: "etcd", endpoints: [`https://127.0.0.1:${own.clientPort ?? 2379}`], tls: true },
      ...(this.config.leadershipLeaseSeconds ? { leadershipLeaseSeconds: this.config.leadershipLeaseSeconds } : {}),
      member: {
        name, host, initialCluster, initialState: "existing", clusterToken: own.clusterToken,
        ...(own.clientPort ? { clientPort: own.clientPort } : {}), ...(own.peerPort ? { peerPort: own.peerPort } : {}),
        ...(own.heartbeatMs ? { heartbeatMs: own.heartbeatMs } : {}), ...(own.electionMs ? { electionMs: own.electionMs } : {}),
      },
    };
    return {
      [dataFiles.caCert]: caCert!, [dataFiles.caKey]: caKey!, [dataFiles.serverCert]: cert.certPem, [dataFiles.serverKey]: cert.keyPem,
      [dataFiles.config]: JSON.stringify(config, null, 2) + "\n",
    };
  }
}
