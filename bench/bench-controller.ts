/** A controller in its own process (as users run it), on a fresh data directory, for benchmarks. */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ControllerClient, readOperatorDir } from "../api";
import { startLocalController } from "../cli";
import { initControllerDir, removeLocalController } from "../controller";
import { SimAgent } from "./sim-agent";

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
  dataDir: string;
  stop(): Promise<void>;
}

export async function benchController(modelName: string): Promise<BenchController> {
  const dir = await mkdtemp(join(tmpdir(), "steward-bench-"));
  const init = await initControllerDir({ dataDir: dir, name: "bench", listen: { host: "127.0.0.1", port: 0 } });
  const addresses = await startLocalController(dir, init.caCert);
  const pid = await pidOnceWritten(join(dir, "controller.pid"));
  const client = new ControllerClient({ addresses, caCert: init.caCert, user: "admin", password: init.adminPassword! });
  const { uuid } = await client.createModel(modelName);
  return {
    addresses,
    caCert: init.caCert,
    password: init.adminPassword!,
    pid,
    client,
    uuid,
    logFile: join(dir, "controller.log"),
    dataDir: dir,
    // The supervisor first (removeLocalController): stopping only the controller would have it started again.
    async stop() {
      client.close();
      await removeLocalController(dir);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The controller's pid: it writes the file once started in full, which can be a little after its
 * API first answers (what startLocalController waits for), longer on a loaded machine.
 */
async function pidOnceWritten(file: string): Promise<number> {
  for (const deadline = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 100))) {
    const pid = Number(await readFile(file, "utf8").catch(() => ""));
    if (pid > 0) return pid;
    if (Date.now() > deadline) throw new Error(`${file} was not written within 30 s of the controller answering`);
  }
}

/**
 * The motd operator deployed as "app" with `units` units, each on a manual machine of its own
 * whose simulated agent logs in (100 at a time). Agents go into `agents` as they connect, so the
 * caller closes them even when this fails half-way. Returns the machines with their credentials.
 */
export async function deploySimulated(
  bc: BenchController,
  model: string,
  units: number,
  agents: SimAgent[],
): Promise<{ id: string; credential?: string }[]> {
  const machines = (await bc.client.addMachines(model, "manual", units)).machines;
  const op = await readOperatorDir(join(__dirname, "..", "..", "operators", "motd"));
  await bc.client.uploadOperator(op.bundle);
  await bc.client.deploy(model, { name: "app", operator: op.hash, units, to: machines.map((m) => m.id) });
  for (let i = 0; i < machines.length; i += 100) {
    agents.push(
      ...(await Promise.all(
        machines
          .slice(i, i + 100)
          .map((m) => SimAgent.connect(bc.addresses[0]!, bc.caCert, bc.uuid, m.id, m.credential!)),
      )),
    );
  }
  return machines;
}
