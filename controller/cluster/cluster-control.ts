/**
 * {@link ClusterControl}: the controller cluster as the API shows and changes it: `show-controller`
 * (members, votes, presence, leader, the quorum keeper), `enable-ha` and `add-spare`. Reading works
 * without quorum too (from this replica's own etcd member and cache), so the API can say why nothing
 * is being changed.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ClusterInfo, ControllerUpgrade, SpareHost } from "../../api";
import { StewardError, UPGRADE_RECORD_STALE_MS, describePlacement } from "../../api";
import { ssh } from "../../substrates";
import type { ControllerConfig } from "../config";
import { advertisedHost, dataFiles, findOnPath } from "../config";
import type { StateCache } from "../state";
import type { EtcdMemberInfo, EtcdMembership } from "../store/etcd";
import { clientUrl, etcdGet, peerUrl } from "./etcd-member";
import type { Store } from "../store";
import { unchanged } from "../store";
import type { Sealer } from "../security/sealing";
import type { HaConfig, ReplicaCloudDoc, SpareDoc, SpareKey } from "../state";
import { DEFAULT_HA_CONFIG, clusterKeys, docs, put, readDoc, sparePurpose } from "../state";
import type { HaPending } from "./move-to-etcd";

export interface ClusterControlDeps {
  dataDir: string;
  config: ControllerConfig;
  store: Store;
  cache: StateCache;
  /** Present on the etcd store. */
  membership?: EtcdMembership;
  tls: { caCert: string; cert: string; key: string };
  /** Seals the spares' SSH keys before they are stored. */
  sealer: Sealer;
  /** Restarts the controller process's controller (main.js); absent where it cannot (in-process tests). */
  requestRestart?: () => void;
}

export class ClusterControl {
  constructor(private readonly d: ClusterControlDeps) {}

  async info(): Promise<ClusterInfo> {
    const { cache, membership } = this.d;
    const ha: HaConfig = { ...DEFAULT_HA_CONFIG, ...cache.haConfig };
    const base = {
      wantsVote: ha.replicas,
      replaceAfterSeconds: ha.replaceAfterSeconds,
      maxReplacementsPerHour: ha.maxReplacementsPerHour,
      spares: [...cache.spares.values()].map((s) => ({
        host: s.host,
        user: s.user,
        hostKey: s.hostKey,
        ...(s.failed ? { failed: s.failed } : {}),
      })),
      keeper: {
        state: cache.keeper?.state ?? "idle",
        message: cache.keeper?.message ?? "",
        history: (cache.keeper?.history ?? []).slice(-15),
      },
      ...(cache.upgrade ? { upgrade: cache.upgrade } : {}),
      ...(cache.replicaCloud
        ? {
            replicaCloud: {
              substrate: cache.replicaCloud.substrate,
              ...(cache.replicaCloud.credential ? { credential: cache.replicaCloud.credential } : {}),
              summary: describePlacement(cache.replicaCloud),
            },
          }
        : {}),
    };
    if (!membership) {
      const only = [...cache.replicas.values()][0];
      return {
        store: "embedded",
        quorum: true,
        ...base,
        members: only
          ? [
              {
                name: only.id,
                host: "",
                addresses: only.addresses,
                state: "member",
                hasVote: true,
                learner: false,
                present: true,
                leader: true,
                etcdLeader: false,
                ...(only.version ? { version: only.version } : {}),
              },
            ]
          : [],
      };
    }
    // Without quorum this replica's member may not answer either: fall back to the recorded members.
    const listed = await membership.list().catch(() => undefined);
    const members: EtcdMemberInfo[] =
      listed ??
      [...cache.clusterMembers.values()]
        .filter((d) => d.state !== "removed")
        .map((d) => ({
          id: d.memberId ?? d.name,
          name: d.name,
          peerUrls: [peerUrl(d.host)],
          clientUrls: [clientUrl(d.host)],
          learner: d.state === "joining",
        }));
    const etcdStatus = await membership.status().catch(() => undefined);
    const etcdLeader = etcdStatus?.leaderId;
    // A linearizable read answers only with a majority; do not wait the full request timeout for it.
    const quorum = await Promise.race([
      this.d.store.currentRevision().then(
        () => true,
        () => false,
      ),
      new Promise<boolean>((r) => setTimeout(() => r(false), 1500).unref()),
    ]);
    const docs = [...cache.clusterMembers.values()];
    const rows: ClusterInfo["members"] = members.map((m) => {
      const doc = docs.find((d) => d.memberId === m.id || d.name === m.name);
      const name = m.name || doc?.name || `unstarted-${m.id}`;
      const replica = cache.replicas.get(name);
      return {
        name,
        host: doc?.host ?? hostOf(m.peerUrls[0]),
        addresses: replica?.addresses ?? [],
        state: m.learner ? "learner" : "voter",
        hasVote: !m.learner,
        learner: m.learner,
        present: replica !== undefined,
        leader: cache.leader?.replica === name,
        etcdLeader: etcdLeader === m.id,
        ...(doc?.instance ? { instance: doc.instance } : {}),
        ...(replica?.version ? { version: replica.version } : {}),
      };
    });
    // Replicas replaced or given up on stay listed with why, so an operator sees what happened.
    for (const d of docs)
      if (d.state === "removed" && !rows.some((r) => r.name === d.name))
        rows.push({
          name: d.name,
          host: d.host,
          addresses: [],
          state: "removed",
          hasVote: false,
          learner: false,
          present: false,
          leader: false,
          etcdLeader: false,
          ...(d.reason ? { reason: d.reason } : {}),
          ...(d.instance ? { instance: d.instance } : {}),
        });
    if (quorum)
      return {
        store: "etcd",
        quorum,
        ...base,
        members: rows,
        ...(etcdStatus ? { raftTerm: etcdStatus.raftTerm } : {}),
      };
    // Without quorum the cache is frozen: say what this replica can see for itself.
    const reachable = await Promise.all(members.filter((m) => !m.learner).map((m) => this.answers(m.clientUrls[0])));
    const up = reachable.filter(Boolean).length;
    const voters = reachable.length;
    const degraded = `no quorum: ${up} of ${voters} voting members answer, ${Math.floor(voters / 2) + 1} are needed; the controller cannot change anything and the quorum keeper replaces nothing until a majority is back`;
    return {
      store: "etcd",
      quorum,
      ...base,
      members: rows.map((r) => ({ ...r, present: false, leader: false })),
      keeper: { ...base.keeper, state: "blocked", message: degraded },
      degraded,
    };
  }

  /**
   * Records `steward upgrade-controller`'s progress. The CLI drives the upgrade (it restarts every
   * replica, this one included), so the record is its own; the controller only keeps and shows it.
   */
  async recordUpgrade(record: ControllerUpgrade): Promise<void> {
    const stored = await readDoc(this.d.store, docs.clusterUpgrade);
    const current = stored?.doc;
    // Two runs at once would restart two replicas at once: a live run's record is its own.
    if (
      current &&
      current.run !== record.run &&
      current.state === "running" &&
      Date.now() - Date.parse(current.updatedAt) < UPGRADE_RECORD_STALE_MS
    ) {
      throw new StewardError(
        "conflict",
        `another upgrade-controller run is upgrading the controller to ${current.to} (last progress at ${current.updatedAt}): wait for it (steward show-controller)`,
        { reason: "upgrade-in-progress" },
      );
    }
    const res = await this.d.store.txn({
      compare: [unchanged(clusterKeys.upgrade, stored?.rev ?? 0)],
      success: [put(docs.clusterUpgrade, record)],
    });
    if (!res.succeeded)
      throw new StewardError("conflict", "the upgrade record changed while it was written; retry", {
        reason: "upgrade-record-changed",
      });
    await this.d.cache.catchUp();
  }

  /** Whether an etcd member answers at all (`/version` needs no leader). */
  private async answers(url: string | undefined): Promise<boolean> {
    return url !== undefined && (await etcdGet(url, "/version", this.d.tls, 800))?.status === 200;
  }

  /** Sets (or with undefined, clears) the cloud the quorum keeper launches replicas on. */
  async setReplicaCloud(cloud: ReplicaCloudDoc | undefined): Promise<void> {
    // On the embedded store it is kept for enable-ha, which then grows onto the cloud (bootstrap aws: does this).
    if (!this.d.membership && cloud) this.requireReachableAddress("launching replicas on a cloud");
    if (cloud) await this.d.store.txn({ success: [put(docs.clusterReplicaCloud, cloud)] });
    else await this.d.store.delete(clusterKeys.replicaCloud);
    await this.d.cache.catchUp();
  }

  /** Other replicas must reach this one: a controller on a loopback address cannot grow. */
  private requireReachableAddress(what: string): void {
    const host = advertisedHost(this.d.config);
    if (/^(127\.|localhost$|::1$|\[::1\]$|0\.0\.0\.0$)/.test(host)) {
      throw new StewardError(
        "invalid-request",
        `this controller advertises ${host}, which other hosts cannot reach; ${what} needs a controller bootstrapped on a reachable address (steward bootstrap ssh:user@host or aws:region)`,
      );
    }
  }

  /** Checks each host over SSH (pinning its key) and adds it to the spare pool. */
  async addSpares(hosts: SpareHost[]): Promise<SpareDoc[]> {
    if (!this.d.membership)
      throw new StewardError(
        "invalid-request",
        "this controller is a single replica on the embedded store: give hosts to steward enable-ha --to instead, which also makes them its spares",
      );
    const spares = await Promise.all(hosts.map((h) => this.verifySpare(h)));
    for (const s of spares) await this.d.store.put(clusterKeys.spare(s.host), JSON.stringify(s));
    return spares;
  }

  private async verifySpare(h: SpareHost): Promise<SpareDoc> {
    // A spare is a host the keeper may wipe and install on: never one a replica runs on.
    if (
      h.host === advertisedHost(this.d.config) ||
      [...this.d.cache.clusterMembers.values()].some((m) => m.host === h.host && m.state !== "removed")
    ) {
      throw new StewardError("conflict", `${h.host} already runs a replica of this controller`);
    }
    // Refuses unsupported hosts, wrong keys and missing sudo now, not at replacement time.
    const hostKey = await ssh.checkHost(
      {
        host: h.host,
        port: h.port ?? 22,
        user: h.user,
        privateKey: h.privateKey,
        ...(h.passphrase ? { passphrase: h.passphrase } : {}),
        ...(h.hostKey ? { hostKey: h.hostKey } : {}),
        ...(h.trustOnFirstUse ? { trustOnFirstUse: true } : {}),
      },
      2,
    );
    const key: SpareKey = { privateKey: h.privateKey, ...(h.passphrase ? { passphrase: h.passphrase } : {}) };
    return {
      host: h.host,
      ...(h.port && h.port !== 22 ? { port: h.port } : {}),
      user: h.user,
      sealedKey: this.d.sealer.sealJson(sparePurpose(h.host), key),
      hostKey,
      addedAt: new Date().toISOString(),
    };
  }

  async enableHa(req: {
    replicas: number;
    hosts: SpareHost[];
    replaceAfterSeconds?: number;
    maxReplacementsPerHour?: number;
  }): Promise<{ moving: boolean; message: string }> {
    const { cache, membership } = this.d;
    const current: HaConfig = { ...DEFAULT_HA_CONFIG, ...cache.haConfig };
    const voters = membership ? (await membership.list()).filter((m) => !m.learner).length : 1;
    if (req.replicas < voters)
      throw new StewardError(
        "invalid-request",
        `the controller has ${voters} voting replicas; enable-ha only grows it (shrinking is not supported yet)`,
        { details: { field: "replicas" } },
      );
    const pool = [...cache.spares.values()].filter((s) => !s.failed).length;
    const needed = req.replicas - voters;
    // With a replica cloud set, the keeper launches what the spares do not cover.
    if (pool + req.hosts.length < needed && !cache.replicaCloud) {
      throw new StewardError(
        "invalid-request",
        `${req.replicas} replicas need ${needed} more host${needed === 1 ? "" : "s"}; ${pool + req.hosts.length} ${pool + req.hosts.length === 1 ? "is" : "are"} available: give more with --to (or steward add-spare), or let the controller launch them (steward set-replica-cloud)`,
        { details: { field: "hosts" } },
      );
    }
    const ha: HaConfig = {
      replicas: req.replicas,
      replaceAfterSeconds: req.replaceAfterSeconds ?? current.replaceAfterSeconds,
      maxReplacementsPerHour: req.maxReplacementsPerHour ?? current.maxReplacementsPerHour,
    };
    if (membership) {
      if (req.hosts.length > 0) await this.addSpares(req.hosts);
      await this.d.store.put(clusterKeys.config, JSON.stringify(ha));
      return { moving: false, message: `growing to ${req.replicas} voters, one replica at a time` };
    }
    // On the embedded store: checks first, then the move happens on restart.
    this.requireReachableAddress("enable-ha");
    if (!findOnPath("etcd"))
      throw new StewardError(
        "invalid-request",
        "etcd is not installed on the controller's host: install it there (apt-get install etcd-server) and run enable-ha again",
      );
    if (!this.d.requestRestart)
      throw new StewardError(
        "invalid-request",
        "this controller was not started by its own process (main.js) and cannot restart itself to move into etcd",
      );
    const spares = await Promise.all(req.hosts.map((h) => this.verifySpare(h)));
    const pending: HaPending = { ha, spares };
    await writeFile(join(this.d.dataDir, dataFiles.haPending), JSON.stringify(pending), { mode: 0o600 });
    setTimeout(() => this.d.requestRestart!(), 200).unref();
    return {
      moving: true,
      message:
        "moving the controller's state into etcd (the API is away for a few seconds), then growing one replica at a time",
    };
  }
}

const hostOf = (url: string | undefined): string => (url ? new URL(url).hostname : "");
