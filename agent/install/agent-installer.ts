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
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { StewardError } from "../../api/core";
import type { HostFacts } from "./facts";
import { gatherFacts } from "./facts";
import type { SshSession } from "./ssh-session";
import { shellQuote } from "./ssh-session";

export interface AgentConfigContent {
  model: string;
  machine: string;
  credential: string;
  controllerAddresses: string[];
  caCert: string;
}

export interface AgentInstallPlan {
  /** Unique per agent on a host: `<model-uuid>-<machine-id>`. */
  name: string;
  bundle: { main: string; toolClient: string };
  /** The Node.js binary to ship to hosts that have none (this process's own). */
  nodeBinary: string;
  /** Whether an existing config on the host is still right (same model, machine, controllers, CA). */
  configMatches(existing: AgentConfigContent): boolean;
  /** A fresh config, issuing a new credential; called only when the config must be (re)written. */
  newConfig(): Promise<AgentConfigContent>;
  /** Resolves once the agent has logged in. */
  waitForLogin(): Promise<void>;
  progress?(step: string, state: "ok" | "changed"): void;
}

export interface InstallResult { changed: boolean; steps: { step: string; state: "ok" | "changed" }[]; bytesUploaded: number; facts: HostFacts }

export const PATHS = {
  lib: "/opt/steward/lib",
  node: "/opt/steward/node",
  agents: "/var/lib/steward/agents",
  bootDir: "/etc/steward/boot.d",
  unitDir: "/etc/systemd/system",
};

const hashCache = new Map<string, Promise<string>>();
/** SHA-256 of a local file (cached: the node binary is 100 MB and the same for every host). */
export function fileSha256(path: string): Promise<string> {
  let p = hashCache.get(path);
  if (!p) {
    p = new Promise((resolve, reject) => {
      const h = createHash("sha256");
      createReadStream(path).on("data", (d) => h.update(d)).on("end", () => resolve(h.digest("hex"))).on("error", reject);
    });
    hashCache.set(path, p);
  }
  return p;
}

export async function installAgent(s: SshSession, plan: AgentInstallPlan): Promise<InstallResult> {
  const steps: InstallResult["steps"] = [];
  let bytesUploaded = 0;
  const note = (step: string, state: "ok" | "changed"): void => { steps.push({ step, state }); plan.progress?.(step, state); };
  const remoteSha = async (path: string): Promise<string> => (await s.run(`sha256sum ${shellQuote(path)} 2>/dev/null`, { sudo: true })).stdout.split(" ")[0] ?? "";

  const facts = await gatherFacts(s);
  note(`facts: ${facts.distro} ${facts.arch}, ${facts.systemd ? "systemd" : "no systemd"}, node ${facts.nodeMajor ?? "none"}`, "ok");

  // Node.js
  let node: string;
  if (facts.nodeMajor !== undefined && facts.nodeMajor >= 20 && facts.nodePath) {
    node = facts.nodePath;
    note(`node: using the host's ${node} (v${facts.nodeMajor})`, "ok");
  } else {
    if (facts.arch !== (process.arch === "arm64" ? "arm64" : "x64")) {
      throw new StewardError("invalid-request", `${s.target.host} has no Node.js 20 or newer and is ${facts.arch}, unlike this controller (${process.arch}): install Node.js 20+ on it (e.g. apt-get install nodejs) and run again`);
    }
    const sha = await fileSha256(plan.nodeBinary);
    node = `${PATHS.node}/${sha.slice(0, 16)}/node`;
    if ((await remoteSha(node)) === sha) note("node: shipped runtime already in place", "ok");
    else { bytesUploaded += await s.putFile(plan.nodeBinary, node, "0755", sha); note(`node: shipped ${process.version} to ${node}`, "changed"); }
  }

  // The agent bundle, content-addressed.
  const [mainSha, toolSha] = await Promise.all([fileSha256(plan.bundle.main), fileSha256(plan.bundle.toolClient)]);
  const libDir = `${PATHS.lib}/${createHash("sha256").update(mainSha + toolSha).digest("hex").slice(0, 16)}`;
  let bundleChanged = false;
  for (const [local, name, sha] of [[plan.bundle.main, "main.js", mainSha], [plan.bundle.toolClient, "tool-client.js", toolSha]] as const) {
    if ((await remoteSha(`${libDir}/${name}`)) !== sha) { bytesUploaded += await s.putFile(local, `${libDir}/${name}`, "0644", sha); bundleChanged = true; }
  }
  note(`agent bundle ${libDir}`, bundleChanged ? "changed" : "ok");

  // Config.
  const dir = `${PATHS.agents}/${plan.name}`;
  const existingText = (await s.run(`cat ${shellQuote(`${dir}/agent.json`)} 2>/dev/null`, { sudo: true })).stdout;
  let existing: AgentConfigContent | undefined;
  try { existing = existingText ? (JSON.parse(existingText) as AgentConfigContent) : undefined; } catch { existing = undefined; }
  let configChanged = false;
  if (!existing || !plan.configMatches(existing)) {
    await s.writeFile(`${dir}/agent.json`, JSON.stringify(await plan.newConfig(), null, 2), "0600");
    configChanged = true;
  }
  note("agent config (0600)", configChanged ? "changed" : "ok");

  // Launch script and service.
  const launch = `#!/bin/sh\n# Starts the Steward agent ${plan.name}.\nexec ${shellQuote(node)} --max-semi-space-size=1 ${shellQuote(`${libDir}/main.js`)} --dir ${shellQuote(dir)}\n`;
  const launchChanged = await writeIfDifferent(s, `${dir}/launch`, launch, "0755");
  await writeIfDifferent(s, `${dir}/uninstall`, uninstallScript(plan.name, facts.systemd), "0755");
  const serviceChanged = facts.systemd ? await ensureSystemdUnit(s, plan.name, dir, configChanged || launchChanged) : await ensureSupervisor(s, plan.name, dir, configChanged || launchChanged);
  note(facts.systemd ? `systemd unit steward-agent-${plan.name}` : `supervised process (registered in ${PATHS.bootDir})`, serviceChanged ? "changed" : "ok");

  await plan.waitForLogin();
  note("agent logged in to the controller", "ok");
  return { changed: steps.some((x) => x.state === "changed"), steps, bytesUploaded, facts };
}

async function writeIfDifferent(s: SshSession, path: string, content: string, mode: string): Promise<boolean> {
  const current = (await s.run(`cat ${shellQuote(path)} 2>/dev/null`, { sudo: true })).stdout;
  if (current === content.trimEnd()) return false; // execCommand trims output
  await s.writeFile(path, content, mode);
  return true;
}

async function ensureSystemdUnit(s: SshSession, name: string, dir: string, restart: boolean): Promise<boolean> {
  const unit = `[Unit]\nDescription=Steward agent ${name}\nAfter=network-online.target\nWants=network-online.target\n\n[Service]\nExecStart=${dir}/launch\nRestart=always\nRestartSec=2\nStandardOutput=append:${dir}/agent.log\nStandardError=append:${dir}/agent.log\n\n[Install]\nWantedBy=multi-user.target\n`;
  const path = `${PATHS.unitDir}/steward-agent-${name}.service`;
  const changed = await writeIfDifferent(s, path, unit, "0644");
  if (changed) await s.must("enabling the agent service", `systemctl daemon-reload && systemctl enable steward-agent-${name}`, { sudo: true });
  const active = (await s.run(`systemctl is-active --quiet steward-agent-${name}`, { sudo: true })).code === 0;
  if (!active || changed || restart) await s.must("starting the agent service", `systemctl restart steward-agent-${name}`, { sudo: true });
  return changed || restart || !active;
}

/** Hosts without systemd: a small supervisor loop, started now and registered to start at boot. */
async function ensureSupervisor(s: SshSession, name: string, dir: string, restart: boolean): Promise<boolean> {
  const script = [
    "#!/bin/sh",
    `# Keeps the Steward agent ${name} running on a host without systemd; the host's init runs ${PATHS.bootDir}/* at boot.`,
    `dir=${shellQuote(dir)}`,
    'echo $$ > "$dir/supervisor.pid"',
    "child=",
    'trap \'[ -n "$child" ] && kill "$child" 2>/dev/null; exit 0\' TERM INT',
    "while :; do",
    '  "$dir/launch" >>"$dir/agent.log" 2>&1 &',
    "  child=$!",
    "  wait $child",
    "  sleep 2",
    "done",
    "",
  ].join("\n");
  const path = `${PATHS.bootDir}/steward-agent-${name}`;
  const changed = await writeIfDifferent(s, path, script, "0755");
  const running = (await s.run(`kill -0 "$(cat ${shellQuote(`${dir}/supervisor.pid`)} 2>/dev/null)" 2>/dev/null`, { sudo: true })).code === 0;
  if (running && !changed && !restart) return false;
  if (running) await s.run(`kill "$(cat ${shellQuote(`${dir}/supervisor.pid`)})"; sleep 0.5`, { sudo: true });
  await s.must("starting the agent", `setsid ${shellQuote(path)} </dev/null >/dev/null 2>&1 &`, { sudo: true });
  return true;
}

/** What `remove-machine` runs (through the agent itself): stop, unregister, delete; the shared runtime goes with the last agent. */
function uninstallScript(name: string, systemd: boolean): string {
  const dir = `${PATHS.agents}/${name}`;
  return [
    "#!/bin/sh",
    `# Removes the Steward agent ${name} from this host.`,
    "sleep 1",
    systemd
      ? `systemctl disable --now steward-agent-${name} 2>/dev/null; rm -f ${PATHS.unitDir}/steward-agent-${name}.service; systemctl daemon-reload`
      : `rm -f ${PATHS.bootDir}/steward-agent-${name}; kill "$(cat ${dir}/supervisor.pid 2>/dev/null)" 2>/dev/null`,
    `rm -rf ${dir}`,
    `rmdir ${PATHS.agents} 2>/dev/null && rm -rf ${PATHS.lib} ${PATHS.node}`,
    "exit 0",
    "",
  ].join("\n");
}
