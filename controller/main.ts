#!/usr/bin/env node
/**
 * The controller process: `main.js --data-dir DIR [--port N]` serves;
 * `main.js init --data-dir DIR --name NAME --listen HOST:PORT [--advertise A,B] [--substrate local|remote] [--admin-password-stdin]`
 * creates the data directory and prints `{created, adminPassword, caCert}` as JSON (used by local
 * bootstrap and by bootstrap over SSH, where that output travels back over the encrypted channel; a
 * chosen admin password comes on stdin, never on the command line);
 * `main.js version` prints `{"version": "X.Y.Z"}`: how `steward upgrade-controller` learns which version
 * the bundle it carries is, from the bundle itself;
 * `main.js restore --data-dir DIR --listen HOST:PORT --backup FILE [--advertise A,B] [--force] [--check-only]`
 * restores a backup into the data directory (the passphrase on stdin; `--check-only` only opens it) and prints
 * `{controller, backupId, revision, keys, models, caCert, epoch}`. Started by `steward bootstrap`
 * (locally, detached) or by a service manager on a remote host.
 */
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { STEWARD_VERSION, createLogger } from "../api";
import { initControllerDir } from "./bootstrap";
import { dataFiles } from "./config";
import { Controller, StoodDownError } from "./controller";

/** A UUID as randomUUID writes it (any version), lower or upper case. */
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A cloud's instance or VM id: `i-0123…`, `vm-42`. */
const INSTANCE_PATTERN = /^[A-Za-z0-9][\w.-]{0,127}$/;
const USAGE =
  "usage: main.js --data-dir DIR [--port N]\n       main.js version\n       main.js --pod --data-dir DIR --seed DIR --enrol DIR --peers SERVICE.NAMESPACE\n       main.js new-ca --name NAME\n       main.js init --data-dir DIR --name NAME --listen HOST:PORT [--advertise ADDR,...] [--uuid UUID] [--instance ID] [--substrate local|remote] [--admin-password-stdin]\n       main.js restore --data-dir DIR --listen HOST:PORT --backup FILE [--advertise ADDR,...] [--force] < passphrase\n";

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const flag = (name: string): string | undefined => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  if (args[0] === "version") {
    process.stdout.write(JSON.stringify({ version: STEWARD_VERSION }) + "\n");
    return;
  }
  // A CA alone, printed as JSON on stdout (a pipe to the CLI): for a bootstrap that makes replicas' data elsewhere (Kubernetes).
  if (args[0] === "new-ca") {
    const name = flag("--name");
    if (!name) {
      process.stderr.write(USAGE);
      process.exitCode = 1;
      return;
    }
    // eslint-disable-next-line @typescript-eslint/consistent-type-imports
    const { createCertificateAuthority } = require("./security/pki") as typeof import("./security/pki");
    process.stdout.write(JSON.stringify(await createCertificateAuthority(name)) + "\n");
    return;
  }
  const dataDir = flag("--data-dir");
  if (!dataDir) {
    process.stderr.write(USAGE);
    process.exitCode = 1;
    return;
  }
  if (args[0] === "init") {
    const name = flag("--name");
    const listen = /^(.+):(\d+)$/.exec(flag("--listen") ?? "");
    if (!name || !listen) {
      process.stderr.write(USAGE);
      process.exitCode = 1;
      return;
    }
    const advertise = flag("--advertise")?.split(",").filter(Boolean);
    const uuid = flag("--uuid");
    if (uuid !== undefined && !UUID_PATTERN.test(uuid)) {
      process.stderr.write(`--uuid ${JSON.stringify(uuid)} is not a UUID (8-4-4-4-12 hex digits)\n`);
      process.exitCode = 1;
      return;
    }
    const instance = flag("--instance");
    if (instance !== undefined && !INSTANCE_PATTERN.test(instance)) {
      process.stderr.write(
        `--instance ${JSON.stringify(instance)} is not an instance id (letters, digits, ".", "_", "-")\n`,
      );
      process.exitCode = 1;
      return;
    }
    const substrate = flag("--substrate");
    if (substrate !== undefined && substrate !== "local" && substrate !== "remote") {
      process.stderr.write(`--substrate ${JSON.stringify(substrate)} must be local or remote\n`);
      process.exitCode = 1;
      return;
    }
    const adminPassword = args.includes("--admin-password-stdin") ? await readStdin() : undefined;
    const res = await initControllerDir({
      dataDir,
      name,
      listen: { host: listen[1]!, port: Number(listen[2]) },
      ...(advertise ? { advertise } : {}),
      ...(uuid ? { uuid } : {}),
      ...(instance ? { instance } : {}),
      ...(substrate ? { substrate } : {}),
      ...(adminPassword ? { adminPassword } : {}),
    });
    process.stdout.write(JSON.stringify(res) + "\n");
    return;
  }
  if (args[0] === "restore") {
    const listen = /^(.+):(\d+)$/.exec(flag("--listen") ?? "");
    const backup = flag("--backup");
    if (!listen || !backup) {
      process.stderr.write(USAGE);
      process.exitCode = 1;
      return;
    }
    const advertise = flag("--advertise")?.split(",").filter(Boolean);
    const passphrase = (await readStdin()).replace(/\r?\n$/, "");
    // eslint-disable-next-line @typescript-eslint/consistent-type-imports
    const { checkBackup, restoreControllerDir } = require("./backup") as typeof import("./backup");
    // --check-only: open and parse it, write nothing (a restore checks before it stops anything).
    if (args.includes("--check-only")) {
      process.stdout.write(JSON.stringify(await checkBackup(await readFile(backup), passphrase)) + "\n");
      return;
    }
    const res = await restoreControllerDir({
      dataDir,
      file: await readFile(backup),
      passphrase,
      listen: { host: listen[1]!, port: Number(listen[2]) },
      ...(advertise ? { advertise } : {}),
      force: args.includes("--force"),
    });
    process.stdout.write(JSON.stringify(res) + "\n");
    return;
  }
  const log = createLogger({ fields: { component: "controller" } });
  const port = flag("--port");
  let controller: Controller | undefined;
  const pod = args.includes("--pod");
  if (pod) {
    const [seedDir, enrolDir, peers, podName] = [
      flag("--seed"),
      flag("--enrol"),
      flag("--peers"),
      process.env.POD_NAME,
    ];
    if (!seedDir || !enrolDir || !peers || !podName) {
      process.stderr.write(
        "usage: main.js --pod --data-dir DIR --seed DIR --enrol DIR --peers SERVICE.NAMESPACE, with POD_NAME set from the pod's metadata.name\n",
      );
      process.exitCode = 1;
      return;
    }
    // eslint-disable-next-line @typescript-eslint/consistent-type-imports
    const { preparePodReplica } = require("./pod-replica") as typeof import("./pod-replica");
    await preparePodReplica({ dataDir, seedDir, enrolDir, peers, podName, log });
  }
  // A replaced replica stays up doing nothing, so its service manager does not restart it in a loop;
  // in a pod it empties its claim and exits instead, so the pod starts again empty and is taken back as a new replica.
  const idle = (why: string): void => {
    if (pod) {
      log.error("this replica stood down: emptying its volume so the pod joins again as a new replica", { why });
      // eslint-disable-next-line @typescript-eslint/consistent-type-imports
      void (require("./pod-replica") as typeof import("./pod-replica"))
        .emptyDataDir(dataDir)
        .finally(() => process.exit(1));
      return;
    }
    log.error("this replica stood down and stays idle", { why });
    setInterval(() => undefined, 3600_000);
  };
  const start = async (): Promise<void> => {
    try {
      controller = await Controller.start({
        dataDir,
        log,
        ...(port !== undefined ? { port: Number(port) } : {}),
        // enable-ha on the embedded store: stop, move into etcd (done by start), start again.
        requestRestart: () => {
          log.info("restarting the controller");
          const old = controller;
          controller = undefined;
          void (old?.stop() ?? Promise.resolve()).then(start).catch((err: unknown) => {
            log.error("restart failed", { err });
            process.exit(1);
          });
        },
        onStoodDown: idle,
      });
      // A failed replica exits non-zero: its service manager (systemd, the pod's restart policy) starts it again.
      const started = controller;
      started.done.catch((err: unknown) => {
        if (controller !== started) return;
        log.error("the controller failed; exiting", { err });
        process.exit(1);
      });
    } catch (err) {
      if (err instanceof StoodDownError) return idle(err.message);
      throw err;
    }
  };
  await start();
  await writeFile(join(dataDir, dataFiles.pid), String(process.pid));
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log.info("stopping on signal", { signal });
    (controller?.stop() ?? Promise.resolve()).then(
      () => process.exit(0),
      (err: unknown) => {
        log.error("stop failed", { err });
        process.exit(1);
      },
    );
  };
  for (const s of ["SIGINT", "SIGTERM"] as const) process.on(s, () => stop(s));
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

main().catch((err: unknown) => {
  process.stderr.write(
    `${process.argv[2] === "restore" ? "restore failed" : "controller failed to start"}: ${(err as Error).message}\n`,
  );
  process.exitCode = 1;
});
