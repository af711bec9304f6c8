/**
 * Installing controller replicas on hosts over SSH.
 *
 * - {@link installController}: a single-replica controller (`steward bootstrap ssh:user@host`):
 *   `main.js init` creates its data directory there and prints the admin password and CA back over
 *   the encrypted channel.
 * - {@link installReplica}: one more replica of a running cluster (enable-ha, the quorum keeper):
 *   the leader hands it its certificate, the CA and its configuration, and it joins as an etcd learner.
 *
 * Both stage the same files first ({@link stageController}: Node.js, the bundles, etcd's protocol
 * files, etcd itself) and run the same service. Idempotent: what is already in place is not sent again.
 */
import { createHash } from "node:crypto";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import type { ControllerInitResult } from "../../api/core";
import { StewardError } from "../../api/core";
import type { HostFacts } from "./facts";
import { gatherFacts } from "./facts";
import { ensureFile, ensureNode, fileSha256 } from "./runtime";
import { ensureService, writeIfDifferent } from "./service";
import type { SshSession } from "./ssh-session";
import { shellQuote } from "./ssh-session";

/** What a controller install ships, all from this controller's (or CLI's) own installation. */
export interface ControllerFiles {
  controller: string;
  agentMain: string;
  toolClient: string;
  /** The CLI bundle, which the dashboard's console pane runs. */
  cliMain: string;
  /** Directory of etcd's .proto files (the etcd client loads them at run time). */
  protoDir: string;
  nodeBinary: string;
  /** This machine's etcd binary, shipped to hosts that have none (same architecture only). */
  etcdBinary?: string;
}

export interface ControllerInstallPlan {
  name: string;
  files: ControllerFiles;
  /** API port on the host. @default 17070 */
  port: number;
  /** The controller's UUID, chosen before it exists (its cloud instances are tagged with it). */
  uuid?: string;
  /** The cloud instance or VM the host is, recorded with the replica (show-controller). */
  instance?: string;
  progress?(step: string): void;
}

export interface ControllerInstallResult {
  created: boolean;
  adminPassword?: string;
  caCert: string;
  addresses: string[];
  facts: HostFacts;
}

/** Where a replica keeps its data on a host. */
export const CONTROLLER_DATA = "/var/lib/steward/controller";

/** The controller's service (a systemd unit, or a supervised process named so). */
export const CONTROLLER_UNIT = "steward-controller";

/** A release staged on a host: `root` is `/opt/steward/controller/<content hash>`, so releases sit side by side. */
export interface Staged {
  node: string;
  root: string;
  etcd?: string;
  facts: HostFacts;
}

/** Uploads everything a replica runs (only what the host lacks); starts nothing. */
export async function stageController(
  s: SshSession,
  files: ControllerFiles,
  note: (step: string) => void,
  opts: { etcd: boolean },
): Promise<Staged> {
  const facts = await gatherFacts(s);
  note(
    `facts: ${facts.distro} ${facts.arch}, ${facts.systemd ? "systemd" : "no systemd"}, node ${facts.nodeMajor ?? "none"}`,
  );
  const node = await ensureNode(s, facts, files.nodeBinary, (step) => note(step));
  const protos = (await readdir(files.protoDir)).filter((f) => f.endsWith(".proto")).sort();
  const shipped: [string, string][] = [
    [files.controller, "controller-bundle/main.js"],
    [files.agentMain, "agent-bundle/main.js"],
    [files.toolClient, "agent-bundle/tool-client.js"],
    [files.cliMain, "cli-bundle/main.js"],
    ...protos.map((p): [string, string] => [join(files.protoDir, p), `proto/${p}`]),
  ];
  const shas = await Promise.all(shipped.map(([local]) => fileSha256(local)));
  const root = `/opt/steward/controller/${createHash("sha256").update(shas.join("")).digest("hex").slice(0, 16)}`;
  let sent = 0;
  for (const [local, rel] of shipped) sent += await ensureFile(s, local, `${root}/${rel}`, "0644");
  note(sent > 0 ? `controller bundle uploaded (${Math.round(sent / 1024)} KiB)` : "controller bundle already in place");
  const etcd = opts.etcd ? await ensureEtcd(s, facts, files.etcdBinary, note) : undefined;
  return { node, root, facts, ...(etcd ? { etcd } : {}) };
}

/** etcd 3.4 or newer: the host's own, else this machine's binary shipped (same architecture). */
async function ensureEtcd(
  s: SshSession,
  facts: HostFacts,
  local: string | undefined,
  note: (step: string) => void,
): Promise<string> {
  const own = (await s.run("command -v etcd && etcd --version 2>/dev/null | head -1")).stdout.trim().split("\n");
  const version = /etcd Version: (\d+)\.(\d+)/.exec(own[1] ?? "");
  if (own[0] && version && (Number(version[1]) > 3 || Number(version[2]) >= 4)) {
    note(`etcd: using the host's ${own[0]} (${version[1]}.${version[2]})`);
    return own[0];
  }
  if (!local || facts.arch !== (process.arch === "arm64" ? "arm64" : "x64")) {
    throw new StewardError(
      "invalid-request",
      `${s.target.host} has no etcd 3.4 or newer${local ? ` and is ${facts.arch}, unlike this machine` : ""}: install it there (apt-get install etcd-server) and run again`,
    );
  }
  const path = `/opt/steward/etcd/${(await fileSha256(local)).slice(0, 16)}/etcd`;
  const bytes = await ensureFile(s, local, path, "0755");
  note(
    bytes > 0 ? `etcd: shipped ${Math.round(bytes / 1048576)} MiB to ${path}` : "etcd: shipped binary already in place",
  );
  return path;
}

/** `launch` runs the staged release; a changed one (a new release: upgrade-controller) restarts the service, as does `restart`. */
export async function startControllerService(
  s: SshSession,
  staged: Staged,
  description: string,
  note: (step: string) => void,
  restart = false,
): Promise<void> {
  const main = `${staged.root}/controller-bundle/main.js`;
  const launch = `#!/bin/sh\n# Starts ${description}.\n${staged.etcd ? `PATH=${shellQuote(staged.etcd.replace(/\/etcd$/, ""))}:$PATH; export PATH\n` : ""}exec ${shellQuote(staged.node)} --max-semi-space-size=4 ${shellQuote(main)} --data-dir ${CONTROLLER_DATA}\n`;
  const launchChanged = await writeIfDifferent(s, `${CONTROLLER_DATA}/launch`, launch, "0755");
  const changed = await ensureService(s, {
    unit: CONTROLLER_UNIT,
    description,
    dir: CONTROLLER_DATA,
    log: "controller.log",
    systemd: staged.facts.systemd,
    restart: launchChanged || restart,
  });
  note(changed ? "controller service started" : "controller service already running");
}

export async function installController(s: SshSession, plan: ControllerInstallPlan): Promise<ControllerInstallResult> {
  const note = (step: string): void => plan.progress?.(step);
  // etcd is staged too, so that enable-ha later finds it in place.
  const staged = await stageController(s, plan.files, note, { etcd: plan.files.etcdBinary !== undefined });
  const address = `${s.target.host}:${plan.port}`;
  const initOut = await s.must(
    "initialising the controller",
    `${shellQuote(staged.node)} ${shellQuote(`${staged.root}/controller-bundle/main.js`)} init --data-dir ${CONTROLLER_DATA} --name ${shellQuote(plan.name)} --listen 0.0.0.0:${plan.port} --advertise ${shellQuote(address)}${plan.uuid ? ` --uuid ${shellQuote(plan.uuid)}` : ""}${plan.instance ? ` --instance ${shellQuote(plan.instance)}` : ""}`,
    { sudo: true },
  );
  const init = JSON.parse(initOut.trim().split("\n").pop()!) as ControllerInitResult;
  note(init.created ? "controller data, CA and admin credentials created" : "controller data already present");
  await startControllerService(s, staged, `the Steward controller ${plan.name}`, note);
  if (!init.caCert) throw new StewardError("internal", `the controller on ${s.target.host} did not report its CA`);
  return {
    created: init.created,
    ...(init.adminPassword ? { adminPassword: init.adminPassword } : {}),
    caCert: init.caCert,
    addresses: [address],
    facts: staged.facts,
  };
}

export interface ReplicaInstallPlan {
  /** The replica's id (its etcd member name). */
  name: string;
  files: ControllerFiles;
  /** Its data files: controller.json, ca.crt, ca.key, server.crt, server.key (the keys 0600). */
  data: Record<string, string>;
  progress?(step: string): void;
}

/** Stages the files; {@link startReplica} then writes the data directory and starts the service. */
export async function stageReplica(
  s: SshSession,
  name: string,
  files: ControllerFiles,
  note: (step: string) => void,
): Promise<Staged> {
  // A host that was a replica before keeps a data directory that can never rejoin: start afresh.
  const old = (await s.run(`cat ${CONTROLLER_DATA}/controller.json 2>/dev/null`, { sudo: true })).stdout;
  if (old && !old.includes(`"name": ${JSON.stringify(name)}`)) {
    note("removing an earlier controller's data from this host");
    await s.must("removing old controller data", removeControllerCommand(), { sudo: true });
  }
  return stageController(s, files, note, { etcd: true });
}

export async function startReplica(s: SshSession, staged: Staged, plan: ReplicaInstallPlan): Promise<void> {
  const note = (step: string): void => plan.progress?.(step);
  await s.must("creating the data directory", `mkdir -p -m 0700 ${CONTROLLER_DATA}`, { sudo: true });
  for (const [file, content] of Object.entries(plan.data)) {
    await writeIfDifferent(
      s,
      `${CONTROLLER_DATA}/${file}`,
      content,
      file.endsWith(".key") || file === "controller.json" ? "0600" : "0644",
    );
  }
  note("replica configuration and certificate written");
  await startControllerService(s, staged, `Steward controller replica ${plan.name}`, note);
}

/** Stops the controller service and its etcd member on this host and deletes its data. */
export async function uninstallController(s: SshSession): Promise<void> {
  await s.must(
    "removing the controller",
    `${removeControllerCommand()}; rm -f /etc/systemd/system/steward-controller.service; systemctl daemon-reload 2>/dev/null; true`,
    { sudo: true },
  );
}

function removeControllerCommand(): string {
  // "[d]ata-dir": the pattern must not match this very shell's command line, which contains it.
  return `kill "$(cat ${CONTROLLER_DATA}/supervisor.pid 2>/dev/null)" 2>/dev/null; systemctl stop steward-controller 2>/dev/null; pkill -f ${shellQuote(`[d]ata-dir ${CONTROLLER_DATA}`)}; pkill -x etcd; sleep 0.5; rm -rf ${CONTROLLER_DATA}`;
}
