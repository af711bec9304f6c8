/**
 * Installing a single-replica controller on a host over SSH (`steward bootstrap ssh:user@host`):
 * facts, Node.js, the controller and agent bundles, `main.js init` (which prints the admin password
 * and CA back over the encrypted channel), and a service. Idempotent: on a host that already runs
 * a controller it changes nothing and returns no password (log in with the one you kept).
 */
import { createHash } from "node:crypto";
import { StewardError } from "../../api/core";
import type { HostFacts } from "./facts";
import { gatherFacts } from "./facts";
import { ensureFile, ensureNode, fileSha256 } from "./runtime";
import { ensureService, writeIfDifferent } from "./service";
import type { SshSession } from "./ssh-session";
import { shellQuote } from "./ssh-session";

export interface ControllerInstallPlan {
  name: string;
  /** The controller bundle and the agent bundle it installs on machines. */
  bundle: { controller: string; agentMain: string; toolClient: string };
  nodeBinary: string;
  /** API port on the host. @default 17070 */
  port: number;
  progress?(step: string): void;
}

export interface ControllerInstallResult { created: boolean; adminPassword?: string; caCert: string; addresses: string[]; facts: HostFacts }

const DATA = "/var/lib/steward/controller";

export async function installController(s: SshSession, plan: ControllerInstallPlan): Promise<ControllerInstallResult> {
  const note = (step: string): void => plan.progress?.(step);
  const facts = await gatherFacts(s);
  note(`facts: ${facts.distro} ${facts.arch}, ${facts.systemd ? "systemd" : "no systemd"}, node ${facts.nodeMajor ?? "none"}`);
  const node = await ensureNode(s, facts, plan.nodeBinary, (step) => note(step));
  const shas = await Promise.all([plan.bundle.controller, plan.bundle.agentMain, plan.bundle.toolClient].map(fileSha256));
  const root = `/opt/steward/controller/${createHash("sha256").update(shas.join("")).digest("hex").slice(0, 16)}`;
  const sent = (await ensureFile(s, plan.bundle.controller, `${root}/controller-bundle/main.js`, "0644"))
    + (await ensureFile(s, plan.bundle.agentMain, `${root}/agent-bundle/main.js`, "0644"))
    + (await ensureFile(s, plan.bundle.toolClient, `${root}/agent-bundle/tool-client.js`, "0644"));
  note(sent > 0 ? `controller bundle uploaded (${Math.round(sent / 1024)} KiB)` : "controller bundle already in place");
  const address = `${s.target.host}:${plan.port}`;
  const initOut = await s.must("initialising the controller", `${shellQuote(node)} ${shellQuote(`${root}/controller-bundle/main.js`)} init --data-dir ${DATA} --name ${shellQuote(plan.name)} --listen 0.0.0.0:${plan.port} --advertise ${shellQuote(address)}`, { sudo: true });
  const init = JSON.parse(initOut.trim().split("\n").pop()!) as { created: boolean; adminPassword?: string; caCert: string };
  note(init.created ? "controller data, CA and admin credentials created" : "controller data already present");
  const launch = `#!/bin/sh\n# Starts the Steward controller ${plan.name}.\nexec ${shellQuote(node)} --max-semi-space-size=4 ${shellQuote(`${root}/controller-bundle/main.js`)} --data-dir ${DATA}\n`;
  const launchChanged = await writeIfDifferent(s, `${DATA}/launch`, launch, "0755");
  const changed = await ensureService(s, { unit: "steward-controller", description: `Steward controller ${plan.name}`, dir: DATA, log: "controller.log", systemd: facts.systemd, restart: launchChanged });
  note(changed ? "controller service started" : "controller service already running");
  if (!init.caCert) throw new StewardError("internal", `the controller on ${s.target.host} did not report its CA`);
  return { created: init.created, ...(init.adminPassword ? { adminPassword: init.adminPassword } : {}), caCert: init.caCert, addresses: [address], facts };
}
