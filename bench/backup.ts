/**
 * Backup and restore of a controller holding a model of N units (simulated agents): how long the
 * controller takes to make a backup (read at one revision, encrypt, verify, keep) and the client to
 * download it, its size; then, the controller destroyed, how long a restore takes (decrypt, write
 * the store; a process as `steward restore-backup` runs it), until the restored controller serves,
 * and until every agent has logged in again with its old credential and holds its unit.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startLocalController } from "../cli";
import { removeLocalController } from "../controller";
import { restoreLocalController } from "../substrates";
import { benchController, deploySimulated } from "./bench-controller";
import { SimAgent } from "./sim-agent";
import type { BenchOptions } from "./util";
import { report } from "./util";

const DEFAULT_UNITS = Number(process.env.BENCH_UNITS ?? 1000);
const PASS = "benchmark passphrase";

interface Made {
  record: { id: string; bytes: number; chunks: number; keys: number; revision: number };
  timings: { snapshotMs: number; encryptMs: number; verifyMs: number; keepMs: number };
}

/** `size`: units, one per machine and simulated agent (default 1,000, or BENCH_UNITS). */
export async function benchBackup(o: BenchOptions = {}): Promise<void> {
  const UNITS = o.size ?? DEFAULT_UNITS;
  const bc = await benchController("bk");
  const agents: SimAgent[] = [];
  const work = await mkdtemp(join(tmpdir(), "steward-bench-bk-"));
  try {
    const machines = await deploySimulated(bc, "bk", UNITS, agents);
    await Promise.all(agents.map((a) => a.viewWhere((v) => v.units.length === 1)));

    let t0 = performance.now();
    const made = await bc.client.call<Made>("POST", "/v1/backups", { passphrase: PASS });
    const createMs = performance.now() - t0;
    t0 = performance.now();
    const parts: Buffer[] = [];
    for (let i = 0; i < made.record.chunks; i++)
      parts.push(
        Buffer.from(
          (await bc.client.call<{ data: string }>("GET", `/v1/backups/${made.record.id}?part=${i}`)).data,
          "base64",
        ),
      );
    const downloadMs = performance.now() - t0;
    const file = join(work, "bk.sbk");
    await writeFile(file, Buffer.concat(parts));

    // The controller is lost; its agents stay (and are logged in again below).
    for (const a of agents.splice(0)) a.close();
    bc.client.close();
    await removeLocalController(bc.dataDir);
    const [host, port] = [bc.addresses[0]!.replace(/:\d+$/, ""), Number(/:(\d+)$/.exec(bc.addresses[0]!)![1])];
    t0 = performance.now();
    const res = await restoreLocalController({
      dataDir: bc.dataDir,
      backupFile: file,
      passphrase: PASS,
      listen: { host, port },
    });
    const restoreMs = performance.now() - t0;
    t0 = performance.now();
    await startLocalController(bc.dataDir, res.caCert);
    const startMs = performance.now() - t0;
    t0 = performance.now();
    for (let i = 0; i < machines.length; i += 100) {
      agents.push(
        ...(await Promise.all(
          machines
            .slice(i, i + 100)
            .map((m) => SimAgent.connect(bc.addresses[0]!, res.caCert, bc.uuid, m.id, m.credential!)),
        )),
      );
    }
    await Promise.all(agents.map((a) => a.viewWhere((v) => v.units.length === 1 && v.restore?.epoch !== undefined)));
    const agentsMs = performance.now() - t0;

    report(`backup and restore of a controller with ${UNITS} units (simulated agents)`, {
      "backup file (KiB)": made.record.bytes / 1024,
      "store keys in it": made.record.keys,
      "create-backup, as the client waits (ms)": createMs,
      "  of which reading the store at one revision (ms)": made.timings.snapshotMs,
      "  encrypting, scrypt included (ms)": made.timings.encryptMs,
      "  opening it again to verify (ms)": made.timings.verifyMs,
      "  keeping it in the store (ms)": made.timings.keepMs,
      "download (ms)": downloadMs,
      "restore into an empty data directory (ms)": restoreMs,
      "restored controller serving (ms)": startMs,
      [`all ${UNITS} agents logged in again with their credentials (ms)`]: agentsMs,
    });
  } finally {
    for (const a of agents) a.close();
    await bc.stop().catch(() => undefined);
    await rm(work, { recursive: true, force: true });
  }
}
