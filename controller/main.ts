#!/usr/bin/env node
/**
 * The controller process: `main.js --data-dir DIR [--port N]` serves;
 * `main.js init --data-dir DIR --name NAME --listen HOST:PORT [--advertise A,B]` creates the data
 * directory and prints `{created, adminPassword, caCert}` as JSON (used by bootstrap over SSH, where
 * that output travels back over the encrypted channel). Started by `steward bootstrap` (locally,
 * detached) or by a service manager on a remote host.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createLogger } from "../api";
import { initControllerDir } from "./bootstrap";
import { dataFiles } from "./config";
import { Controller } from "./controller";

const USAGE = "usage: main.js --data-dir DIR [--port N]\n       main.js init --data-dir DIR --name NAME --listen HOST:PORT [--advertise ADDR,...]\n";

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const flag = (name: string): string | undefined => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
  const dataDir = flag("--data-dir");
  if (!dataDir) {
    process.stderr.write(USAGE);
    process.exitCode = 1;
    return;
  }
  if (args[0] === "init") {
    const name = flag("--name");
    const listen = /^(.+):(\d+)$/.exec(flag("--listen") ?? "");
    if (!name || !listen) { process.stderr.write(USAGE); process.exitCode = 1; return; }
    const advertise = flag("--advertise")?.split(",").filter(Boolean);
    const res = await initControllerDir({ dataDir, name, listen: { host: listen[1]!, port: Number(listen[2]) }, ...(advertise ? { advertise } : {}) });
    process.stdout.write(JSON.stringify(res) + "\n");
    return;
  }
  const log = createLogger({ fields: { component: "controller" } });
  const port = flag("--port");
  const controller = await Controller.start({ dataDir, log, ...(port !== undefined ? { port: Number(port) } : {}) });
  await writeFile(join(dataDir, dataFiles.pid), String(process.pid));
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log.info("stopping on signal", { signal });
    controller.stop().then(() => process.exit(0), (err: unknown) => { log.error("stop failed", { err }); process.exit(1); });
  };
  for (const s of ["SIGINT", "SIGTERM"] as const) process.on(s, () => stop(s));
}

main().catch((err: unknown) => {
  process.stderr.write(`controller failed to start: ${(err as Error).message}\n`);
  process.exitCode = 1;
});
