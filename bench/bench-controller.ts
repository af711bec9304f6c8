/** A controller in its own process (as users run it), on a fresh data directory, for benchmarks. */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ControllerClient } from "../api";
import { startLocalController } from "../cli";
import { initControllerDir, removeLocalController } from "../controller";

export interface BenchController {
  addresses: string[];
  caCert: string;
  /** The admin password. */
  password: string;
  pid: number;
  client: ControllerClient;
  /** uuid of the model created for the benchmark. */
  uuid: string;
  /** The controller's log file. */
  logFile: string;
  stop(): Promise<void>;
}

export async function benchController(modelName: string): Promise<BenchController> {
  const dir = await mkdtemp(join(tmpdir(), "steward-bench-"));
  const init = await initControllerDir({ dataDir: dir, name: "bench", listen: { host: "127.0.0.1", port: 0 } });
  const addresses = await startLocalController(dir, init.caCert);
  const pid = Number(await readFile(join(dir, "controller.pid"), "utf8"));
  const client = new ControllerClient({ addresses, caCert: init.caCert, user: "admin", password: init.adminPassword! });
  const { uuid } = await client.createModel(modelName);
  return {
    addresses, caCert: init.caCert, password: init.adminPassword!, pid, client, uuid, logFile: join(dir, "controller.log"),
    // The supervisor first (removeLocalController): stopping only the controller would have it started again.
    async stop() { client.close(); await removeLocalController(dir); await rm(dir, { recursive: true, force: true }); },
  };
}
