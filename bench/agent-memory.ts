/** An idle agent's memory (target ≤ 60 MB RSS): a real agent process running one started unit. */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { ControllerClient, readOperatorDir, silentLogger, unitIsReady } from "../api";
import { Controller, initControllerDir } from "../controller";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import type { BenchOptions } from "./util";
import { median, report, rssMiB, sleep } from "./util";

/** `size`: memory samples taken, 400 ms apart after 3 s of quiet (default 5). */
export async function benchAgentMemory(o: BenchOptions = {}): Promise<void> {
  const SAMPLES = o.size ?? 5;
  const dir = await mkdtemp(join(tmpdir(), "steward-bench-agent-"));
  const init = await initControllerDir({ dataDir: dir, name: "bench", listen: { host: "127.0.0.1", port: 0 } });
  const c = await Controller.start({ dataDir: dir, log: silentLogger });
  const client = new ControllerClient({
    addresses: c.apiAddresses,
    caCert: init.caCert,
    user: "admin",
    password: init.adminPassword!,
  });
  try {
    const { uuid } = await client.createModel("mem");
    const op = await readOperatorDir(join(__dirname, "..", "..", "operators", "motd"));
    await client.uploadOperator(op.bundle);
    await client.deploy("mem", { name: "motd", operator: op.hash, units: 1 });
    for (let i = 0; i < 200; i++) {
      const s = await client.status("mem");
      if (Object.values(s.applications.motd!.units).every(unitIsReady)) break;
      await sleep(100);
    }
    const pid = Number(await readFile(join(dir, "machines", uuid, "0", "agent.pid"), "utf8"));
    await sleep(3000);
    const samples: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      samples.push(await rssMiB(pid));
      await sleep(400);
    }
    report("agent idle with one started unit", { "agent RSS (MiB)": median(samples) });
    await client.destroyModel("mem");
    for (let i = 0; i < 100 && (await client.listModels()).length > 0; i++) await sleep(100);
  } finally {
    client.close();
    await c.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
