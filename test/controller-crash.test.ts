/** A controller process killed with kill -9 in the middle of writes restarts with every acknowledged write. */
import test from "ava";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { ControllerClient } from "../api";
import { dataDirOf, loadClientConfig, startLocalController } from "../cli";
import { cliRunner } from "./harness/cli";
import { killProcessesUnder } from "./harness/processes";

test.serial("kill -9 during writes loses no acknowledged write", async (t) => {
  const home = await mkdtemp(join(tmpdir(), "steward-crash-"));
  try {
    const steward = cliRunner(home, process.cwd());
    const boot = await steward("bootstrap", "crash", "--port", String(20000 + Math.floor(Math.random() * 20000)));
    t.is(boot.code, 0, boot.stdout + boot.stderr);
    const entry = (await loadClientConfig(home)).controllers.crash!;
    const client = new ControllerClient({
      addresses: entry.addresses,
      caCert: entry.caCert,
      user: "admin",
      password: entry.password!,
    });
    await client.createModel("crash");
    await client.addMachines("crash", "manual", 1);
    const acked: string[] = [];
    let stop = false;
    // Eight writers: models and (manual) machines, each recorded only once the controller answered.
    const writer = async (w: number): Promise<void> => {
      for (let i = 0; !stop; i++) {
        const name = `w${w}-${i}`;
        try {
          if (i % 2 === 0) {
            await client.createModel(name);
            acked.push(`model:${name}`);
          } else {
            const r = await client.addMachines("crash", "manual", 1);
            acked.push(`machine:${r.machines[0]!.id}`);
          }
        } catch {
          return;
        }
      }
    };
    const writers = Array.from({ length: 8 }, (_, w) => writer(w));
    while (acked.length < 150) await new Promise((r) => setTimeout(r, 10));
    const pid = Number(await readFile(join(dataDirOf(entry)!, "controller.pid"), "utf8"));
    process.kill(pid, "SIGKILL");
    stop = true;
    await Promise.all(writers);
    client.close();
    t.true(acked.length >= 150);

    await startLocalController(dataDirOf(entry)!, entry.caCert);
    const after = new ControllerClient({
      addresses: entry.addresses,
      caCert: entry.caCert,
      user: "admin",
      password: entry.password!,
    });
    const models = new Set((await after.listModels()).map((m) => `model:${m.name}`));
    const machines = new Set((await after.listMachines("crash")).map((m) => `machine:${m.id}`));
    const missing = acked.filter((a) => !models.has(a) && !machines.has(a));
    t.deepEqual(missing, [], `${missing.length} of ${acked.length} acknowledged writes missing`);
    after.close();
    await steward("destroy-controller", "crash", "--yes", "--timeout", "5");
  } finally {
    await killProcessesUnder(home);
    await rm(home, { recursive: true, force: true });
  }
});
