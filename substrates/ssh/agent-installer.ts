/**
 * Installing a machine agent over SSH. Every step checks what is there before changing it, so a
 * second run changes nothing (and says so) and a run killed half-way is finished by the next:
 *
 * 1. facts (refuse an unsupported host with the reason);
 * 2. Node.js: the host's own if ≥ 20, else this process's binary uploaded (same architecture only);
 * 3. the agent bundle, content-addressed under /opt/steward/lib/<hash>/;
 * 4. the agent's config (0600; a new credential only when the config must change);
 * 5. a systemd unit where systemd runs, else a supervisor registered in /etc/steward/boot.d;
 * 6. wait until the agent has logged in to the controller.
 */
import type { AgentConfig } from "../../api/core";
import { AGENT_CONFIG_FILE, agentConfigText, parseAgentConfig } from "../../api/core";
import { createHash } from "node:crypto";
import type { HostFacts } from "./facts";
import { gatherFacts } from "./facts";
import { NODE_DIR, ensureFile, ensureNode, fileSha256 } from "./runtime";
import type { SshSession } from "./ssh-session";
import { shellQuote } from "./ssh-session";
import { SERVICE_PATHS, ensureService, removeServiceCommands, writeIfDifferent } from "./service";

export interface AgentInstallPlan {
  /** Unique per agent on a host: `<model-uuid>-<machine-id>`. */
  name: string;
  bundle: { main: string; toolClient: string };
  /** The Node.js binary to ship to hosts that have none (this process's own). */
  nodeBinary: string;
  /** Whether an existing config on the host is still right (same model, machine, controllers, CA). */
  configMatches(existing: AgentConfig): boolean;
  /** A fresh config, issuing a new credential; called only when the config must be (re)written. */
  newConfig(): Promise<AgentConfig>;
  /** Resolves once the agent has logged in. */
  waitForLogin(): Promise<void>;
  progress?(step: string, state: "ok" | "changed"): void;
}

export interface InstallResult {
  changed: boolean;
  steps: { step: string; state: "ok" | "changed" }[];
  bytesUploaded: number;
  facts: HostFacts;
}

export const PATHS = {
  lib: "/opt/steward/lib",
  node: NODE_DIR,
  agents: "/var/lib/steward/agents",
  controller: "/var/lib/steward/controller",
  controllerLib: "/opt/steward/controller",
};

export async function installAgent(s: SshSession, plan: AgentInstallPlan): Promise<InstallResult> {
  const steps: InstallResult["steps"] = [];
  let bytesUploaded = 0;
  const note = (step: string, state: "ok" | "changed"): void => {
    steps.push({ step, state });
    plan.progress?.(step, state);
  };

  const facts = await gatherFacts(s);
  note(
    `facts: ${facts.distro} ${facts.arch}, ${facts.systemd ? "systemd" : "no systemd"}, node ${facts.nodeMajor ?? "none"}`,
    "ok",
  );

  const node = await ensureNode(s, facts, plan.nodeBinary, (step, changed, bytes) => {
    bytesUploaded += bytes;
    note(step, changed ? "changed" : "ok");
  });

  // The agent bundle, content-addressed.
  const [mainSha, toolSha] = await Promise.all([fileSha256(plan.bundle.main), fileSha256(plan.bundle.toolClient)]);
  const libDir = `${PATHS.lib}/${createHash("sha256")
    .update(mainSha + toolSha)
    .digest("hex")
    .slice(0, 16)}`;
  const sent =
    (await ensureFile(s, plan.bundle.main, `${libDir}/main.js`, "0644")) +
    (await ensureFile(s, plan.bundle.toolClient, `${libDir}/tool-client.js`, "0644"));
  bytesUploaded += sent;
  note(`agent bundle ${libDir}`, sent > 0 ? "changed" : "ok");

  // Config.
  const dir = `${PATHS.agents}/${plan.name}`;
  const existingText = (await s.run(`cat ${shellQuote(`${dir}/${AGENT_CONFIG_FILE}`)} 2>/dev/null`, { sudo: true }))
    .stdout;
  let existing: AgentConfig | undefined;
  try {
    existing = existingText ? parseAgentConfig(existingText, `${dir}/${AGENT_CONFIG_FILE}`) : undefined;
  } catch {
    existing = undefined;
  }
  let configChanged = false;
  if (!existing || !plan.configMatches(existing)) {
    await s.writeFile(`${dir}/${AGENT_CONFIG_FILE}`, agentConfigText(await plan.newConfig()), "0600");
    configChanged = true;
  }
  note("agent config (0600)", configChanged ? "changed" : "ok");

  // Launch script and service.
  const launch = `#!/bin/sh\n# Starts the Steward agent ${plan.name}.\nexec ${shellQuote(node)} --max-semi-space-size=1 ${shellQuote(`${libDir}/main.js`)} --dir ${shellQuote(dir)}\n`;
  const launchChanged = await writeIfDifferent(s, `${dir}/launch`, launch, "0755");
  const service = {
    unit: `steward-agent-${plan.name}`,
    description: `Steward agent ${plan.name}`,
    dir,
    log: "agent.log",
    systemd: facts.systemd,
  };
  await writeIfDifferent(s, `${dir}/uninstall`, uninstallScript(service), "0755");
  const serviceChanged = await ensureService(s, { ...service, restart: configChanged || launchChanged });
  note(
    facts.systemd ? `systemd unit ${service.unit}` : `supervised process (registered in ${SERVICE_PATHS.bootDir})`,
    serviceChanged ? "changed" : "ok",
  );

  await plan.waitForLogin();
  note("agent logged in to the controller", "ok");
  return { changed: steps.some((x) => x.state === "changed"), steps, bytesUploaded, facts };
}

/** What `remove-machine` runs (through the agent itself): stop, unregister, delete; the shared runtime goes with the last agent. */
function uninstallScript(service: { unit: string; dir: string; systemd: boolean }): string {
  return [
    "#!/bin/sh",
    `# Removes ${service.unit} from this host.`,
    "sleep 1",
    removeServiceCommands(service),
    `rm -rf ${service.dir}`,
    `rmdir ${PATHS.agents} 2>/dev/null && rm -rf ${PATHS.lib} ${PATHS.node}`,
    "exit 0",
    "",
  ].join("\n");
}
