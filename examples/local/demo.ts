/**
 * The local demo (`npm run demo`): a controller on this host with the embedded store, the model in
 * examples/local/model.yaml applied and waited for, then its status. Safe to run again: it reuses
 * the controller (restarting it if it is registered but not running) and only applies what differs.
 */
import { join } from "node:path";
import { ControllerClient } from "../../api";
import { dataDirOf, loadClientConfig, runCli, startLocalController, stewardHome } from "../../cli";

async function main(): Promise<number> {
  const env = process.env;
  const home = stewardHome(env);
  const started = Date.now();
  const cfg = await loadClientConfig(home);
  const local = cfg.controllers.local;
  if (!local) {
    const code = await runCli(["bootstrap", "local"]);
    if (code !== 0) return code;
  } else {
    const client = new ControllerClient({ addresses: local.addresses, caCert: local.caCert, timeoutMs: 2000 });
    const up = await client.call("GET", "/v1/health").then(
      () => true,
      () => false,
    );
    client.close();
    const dataDir = dataDirOf(local);
    if (!up && dataDir) {
      process.stderr.write(`Controller "local" is registered but not running; starting it from ${dataDir}\n`);
      await startLocalController(dataDir, local.caCert);
    } else if (!up) {
      process.stderr.write(`Controller "local" does not answer at ${local.addresses.join(", ")}\n`);
      return 1;
    }
  }
  const modelFile = join(__dirname, "..", "..", "..", "examples", "local", "model.yaml");
  const applied = await runCli(["apply", modelFile, "--yes", "-c", "local", "-m", "demo", "--timeout", "5m"]);
  if (applied !== 0) return applied;
  process.stdout.write("\n");
  const status = await runCli(["status", "-c", "local", "-m", "demo"]);
  process.stdout.write(
    `\nDemo ready in ${((Date.now() - started) / 1000).toFixed(1)} s. Try: npx steward status -m demo   (STEWARD_HOME=${home})\n`,
  );
  const addresses = (await loadClientConfig(home)).controllers.local?.addresses ?? [];
  process.stdout.write(`The web dashboard: https://${addresses[0]}/ (npx steward dashboard says how to log in)\n`);
  process.stdout.write("Clean up with: npx steward destroy-controller local --yes\n");
  return status;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`demo failed: ${(err as Error).message}\n`);
    process.exitCode = 1;
  },
);
