/**
 * {@link EtcdMember}: the etcd member beside a controller replica, started and kept running by the
 * controller process itself (as Juju runs its database), so killing the host takes both and a
 * replica is one thing to install. Peer and client traffic are TLS with the controller CA, and both
 * sides must present a CA-issued certificate. Clients reach it on loopback; peers on the host's
 * address.
 *
 * A member that etcd says was removed from the cluster (it was replaced while it was away) is
 * reported through `onRemoved` and not restarted: its data directory can never rejoin.
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, open, readFile } from "node:fs/promises";
import { request } from "node:https";
import { isIP } from "node:net";
import { join } from "node:path";
import type { Logger } from "../../api";
import { StewardError } from "../../api";
import type { MemberConfig } from "../config";
import { ETCD_ELECTION_TIMEOUT_MS, ETCD_HEARTBEAT_MS } from "./timing";

export const DEFAULT_CLIENT_PORT = 2379;
export const DEFAULT_PEER_PORT = 2380;

export const peerUrl = (host: string, port = DEFAULT_PEER_PORT): string => `https://${bracket(host)}:${port}`;
export const clientUrl = (host: string, port = DEFAULT_CLIENT_PORT): string => `https://${bracket(host)}:${port}`;
/** An IPv6 literal in brackets, as URLs and `host:port` want it. */
export const bracket = (h: string): string => (h.includes(":") ? `[${h}]` : h);

/** A new replica's id and etcd member name: its host plus 4 hex digits, unique per incarnation. */
export const replicaName = (host: string): string =>
  `${host.replace(/[^a-z0-9]+/gi, "-").toLowerCase()}-${randomBytes(2).toString("hex")}`;

export const REMOVED_REASON = "its etcd member was removed from the cluster (it was replaced while away)";

/**
 * GET `path` from an etcd member's client URL with the replica's certificate; undefined when it
 * does not answer within `timeoutMs`.
 */
export function etcdGet(
  url: string,
  path: string,
  tls: { caCert: string; cert: string; key: string },
  timeoutMs: number,
): Promise<{ status: number; body: string } | undefined> {
  const u = new URL(path, url);
  return new Promise((resolve) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        ca: tls.caCert,
        cert: tls.cert,
        key: tls.key,
        timeout: timeoutMs,
      },
      (res) => {
        let body = "";
        res.on("data", (d: Buffer) => {
          body += d.toString();
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(undefined));
    req.end();
  });
}

export interface EtcdMemberOptions {
  member: MemberConfig;
  /** The controller's data directory: `etcd/` (data), `etcd.log`, and the TLS files. */
  dataDir: string;
  tls: { caFile: string; certFile: string; keyFile: string };
  log: Logger;
  onRemoved(): void;
}

/** etcd's words when a member that was removed from the cluster starts again. */
const REMOVED = /permanently removed from the cluster|the member has been removed|member .* has already been removed/i;

export class EtcdMember {
  private proc?: ChildProcess;
  private stopping = false;
  private restartTimer?: NodeJS.Timeout;
  private restarts = 0;
  private removed = false;

  constructor(private readonly o: EtcdMemberOptions) {}

  /** The URL the local controller uses: loopback, so it never depends on the network. */
  get localClientUrl(): string {
    return clientUrl("127.0.0.1", this.o.member.clientPort);
  }
  get wasRemoved(): boolean {
    return this.removed;
  }

  async start(): Promise<void> {
    await mkdir(join(this.o.dataDir, "etcd"), { recursive: true, mode: 0o700 });
    await this.spawn();
  }

  private args(): string[] {
    const m = this.o.member;
    const { caFile, certFile, keyFile } = this.o.tls;
    const peer = peerUrl(m.host, m.peerPort);
    // etcd binds only IPs: a replica known by a DNS name (a pod's stable name on Kubernetes) listens
    // on every address of its own network namespace and advertises the name.
    const bind = isIP(m.host.replace(/^\[|\]$/g, "")) ? m.host : "0.0.0.0";
    return [
      "--name",
      m.name,
      "--data-dir",
      join(this.o.dataDir, "etcd"),
      // (0.0.0.0 includes loopback, where the local controller connects.)
      "--listen-client-urls",
      bind === "0.0.0.0" ? clientUrl(bind, m.clientPort) : `${this.localClientUrl},${clientUrl(m.host, m.clientPort)}`,
      "--advertise-client-urls",
      clientUrl(m.host, m.clientPort),
      "--listen-peer-urls",
      peerUrl(bind, m.peerPort),
      "--initial-advertise-peer-urls",
      peer,
      "--initial-cluster",
      m.initialCluster,
      "--initial-cluster-state",
      m.initialState,
      "--initial-cluster-token",
      m.clusterToken,
      // One certificate per replica, with server and client usage, serves clients and peers.
      "--cert-file",
      certFile,
      "--key-file",
      keyFile,
      "--trusted-ca-file",
      caFile,
      "--client-cert-auth",
      "--peer-cert-file",
      certFile,
      "--peer-key-file",
      keyFile,
      "--peer-trusted-ca-file",
      caFile,
      "--peer-client-cert-auth",
      "--heartbeat-interval",
      String(m.heartbeatMs ?? ETCD_HEARTBEAT_MS),
      "--election-timeout",
      String(m.electionMs ?? ETCD_ELECTION_TIMEOUT_MS),
      // A member cut off from its peers keeps campaigning and raising its raft term; without
      // pre-vote its return deposes the healthy leader (a second outage at every heal). With it, a
      // member only raises its term once a majority would vote for it.
      "--pre-vote",
      // Compare this member's data with its peers' before serving, so a corrupt disk cannot join.
      "--experimental-initial-corrupt-check",
      // Off by default in 3.4: without it the keyspace history grows for ever.
      "--auto-compaction-mode",
      "periodic",
      "--auto-compaction-retention",
      "1h",
      "--snapshot-count",
      "10000",
      // The API accepts up to 10,000 machines or units in one request, written in one transaction:
      // etcd's defaults (128 operations, 1.5 MiB) would refuse that with an internal error.
      "--max-txn-ops",
      "25000",
      "--max-request-bytes",
      String(10 * 1024 * 1024),
      "--logger",
      "zap",
      "--log-outputs",
      "stderr",
    ];
  }

  private async spawn(): Promise<void> {
    const log = await open(join(this.o.dataDir, "etcd.log"), "a", 0o600);
    // etcd refuses to start when an ETCD_* variable shadows a flag: give it none.
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("ETCD_")));
    const proc = (this.proc = spawn(this.o.member.binary ?? "etcd", this.args(), {
      env,
      stdio: ["ignore", log.fd, "pipe"],
    }));
    let tail = "";
    proc.stderr!.on("data", (d: Buffer) => {
      const text = d.toString();
      void log.write(text).catch(() => undefined);
      tail = (tail + text).slice(-4096);
      if (!this.removed && REMOVED.test(tail)) {
        this.removed = true;
        this.o.log.error(`${REMOVED_REASON}: standing down`, { member: this.o.member.name });
        this.o.onRemoved();
      }
    });
    proc.once("error", (err) =>
      this.o.log.error("etcd could not be started", { err: err.message, binary: this.o.member.binary ?? "etcd" }),
    );
    proc.once("exit", (code, signal) => {
      void log.close().catch(() => undefined);
      if (this.stopping || this.removed) return;
      // Restart with backoff; a member that keeps dying is logged each time with its exit status.
      const delay = Math.min(10_000, 500 * 2 ** Math.min(this.restarts++, 5));
      this.o.log.warn("etcd member exited; restarting", {
        code,
        signal,
        inMs: delay,
        log: join(this.o.dataDir, "etcd.log"),
      });
      this.restartTimer = setTimeout(() => {
        this.spawn().catch((err: unknown) => this.o.log.error("etcd restart failed", { err }));
      }, delay);
    });
  }

  /** Waits until the local member answers /health over TLS (it has a leader and is serving). */
  async waitServing(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.removed) throw new StewardError("conflict", REMOVED_REASON);
      if (this.proc?.exitCode !== null && this.proc?.exitCode !== undefined && this.restarts > 3) break;
      await new Promise((r) => setTimeout(r, 200));
      if (await this.healthy()) return;
    }
    throw new StewardError(
      "deadline-exceeded",
      `the local etcd member did not become healthy within ${Math.round(timeoutMs / 1000)} s; see ${join(this.o.dataDir, "etcd.log")}`,
    );
  }

  /** One probe of /health (true only when the member sees a leader). */
  async healthy(): Promise<boolean> {
    const [caCert, cert, key] = await Promise.all(
      [this.o.tls.caFile, this.o.tls.certFile, this.o.tls.keyFile].map((f) => readFile(f, "utf8")),
    );
    const res = await etcdGet(this.localClientUrl, "/health", { caCert: caCert!, cert: cert!, key: key! }, 1000);
    return res?.status === 200 && /"health":\s*"true"/.test(res.body);
  }

  /** Restarts the member (its exit handler starts it again): for a member that misbehaves. */
  restart(why: string): void {
    const p = this.proc;
    if (this.stopping || !p || p.exitCode !== null || p.signalCode !== null) return;
    this.o.log.warn("restarting the local etcd member", { why });
    p.kill("SIGTERM");
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise((r) => p.once("exit", r));
    p.kill("SIGTERM");
    const timer = setTimeout(() => p.kill("SIGKILL"), 5000);
    await exited;
    clearTimeout(timer);
  }
}
