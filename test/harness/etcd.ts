/** A real etcd 3.4 (Debian's etcd-server) for a test: its own data directory and loopback ports. */
import { execFileSync, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Whether etcd is installed here (the pretest installs it as root; a test without it is skipped). */
export const haveEtcd = ((): boolean => {
  try {
    execFileSync("etcd", ["--version"]);
    return true;
  } catch {
    return false;
  }
})();

export interface TestEtcd {
  endpoint: string;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      s.close(() => resolve(typeof a === "object" && a ? a.port : 0));
    });
  });
}

/** Starts a single-member etcd; fast elections so short lease TTLs behave (minimum TTL 0.75 s). */
export async function startEtcd(): Promise<TestEtcd> {
  const [member] = await startEtcdCluster(1);
  return member!;
}

export interface TestEtcdMember extends TestEtcd {
  /** Freezes the member (SIGSTOP): to its peers it is gone, as a hung host would be. */
  freeze(): void;
  thaw(): void;
}

/** Starts `n` etcd members on loopback forming one cluster; each answers on its own endpoint. */
export async function startEtcdCluster(n: number): Promise<TestEtcdMember[]> {
  const ports = [];
  for (let i = 0; i < n; i++) ports.push({ client: await freePort(), peer: await freePort() });
  const initialCluster = ports.map((p, i) => `m${i}=http://127.0.0.1:${p.peer}`).join(",");
  const members = await Promise.all(
    ports.map(async (p, i) => {
      const dir = await mkdtemp(join(tmpdir(), "steward-etcd-"));
      const endpoint = `http://127.0.0.1:${p.client}`;
      const proc = spawn(
        "etcd",
        [
          "--name",
          `m${i}`,
          "--data-dir",
          join(dir, "data"),
          "--listen-client-urls",
          endpoint,
          "--advertise-client-urls",
          endpoint,
          "--listen-peer-urls",
          `http://127.0.0.1:${p.peer}`,
          "--initial-advertise-peer-urls",
          `http://127.0.0.1:${p.peer}`,
          "--initial-cluster",
          initialCluster,
          "--initial-cluster-state",
          "new",
          "--pre-vote",
          "--heartbeat-interval",
          "50",
          "--election-timeout",
          "500",
          "--logger",
          "zap",
          "--log-outputs",
          join(dir, "etcd.log"),
        ],
        { stdio: "ignore" },
      );
      const exited = new Promise<void>((r) => proc.once("exit", () => r()));
      const member: TestEtcdMember = {
        endpoint,
        freeze: () => {
          proc.kill("SIGSTOP");
        },
        thaw: () => {
          proc.kill("SIGCONT");
        },
        async stop() {
          proc.kill("SIGCONT");
          proc.kill("SIGKILL");
          await exited;
          await rm(dir, { recursive: true, force: true });
        },
      };
      return member;
    }),
  );
  // Healthy once the cluster has a leader (a lone member of a larger cluster answers 503).
  for (let i = 0; i < 100; i++) {
    const up = await Promise.all(
      members.map((m) =>
        fetch(`${m.endpoint}/health`).then(
          (r) => r.ok,
          () => false,
        ),
      ),
    );
    if (up.every(Boolean)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return members;
}
