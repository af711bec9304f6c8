/** A real etcd 3.4 (Debian's etcd-server) for a test: its own data directory and loopback ports. */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TestEtcd { endpoint: string; stop(): Promise<void> }

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => { const a = s.address(); s.close(() => resolve(typeof a === "object" && a ? a.port : 0)); });
  });
}

/** Starts a single-member etcd; fast elections so short lease TTLs behave (minimum TTL 0.75 s). */
export async function startEtcd(): Promise<TestEtcd> {
  const dir = await mkdtemp(join(tmpdir(), "steward-etcd-"));
  const [client, peer] = [await freePort(), await freePort()];
  const endpoint = `http://127.0.0.1:${client}`;
  const proc = spawn("etcd", [
    "--name", "test", "--data-dir", join(dir, "data"),
    "--listen-client-urls", endpoint, "--advertise-client-urls", endpoint,
    "--listen-peer-urls", `http://127.0.0.1:${peer}`, "--initial-advertise-peer-urls", `http://127.0.0.1:${peer}`,
    "--initial-cluster", `test=http://127.0.0.1:${peer}`, "--initial-cluster-state", "new",
    "--heartbeat-interval", "50", "--election-timeout", "500", "--logger", "zap", "--log-outputs", join(dir, "etcd.log"),
  ], { stdio: "ignore" });
  const exited = new Promise<void>((r) => proc.once("exit", () => r()));
  for (let i = 0; i < 100; i++) {
    const up = await fetch(`${endpoint}/health`).then((r) => r.ok, () => false);
    if (up) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    endpoint,
    async stop() { proc.kill("SIGKILL"); await exited; await rm(dir, { recursive: true, force: true }); },
  };
}
