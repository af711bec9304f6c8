/** The agent's own configuration (`agent.json`, 0600): who it is and where its controllers are. */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { StewardError } from "../api/core";
import { writeFileAtomic } from "./files";

export interface AgentConfig {
  model: string;
  machine: string;
  credential: string;
  /** Never empty: an update with no addresses is ignored rather than stranding the agent. */
  controllerAddresses: string[];
  caCert: string;
}

export async function readAgentConfig(dir: string): Promise<AgentConfig> {
  const path = join(dir, "agent.json");
  const text = await readFile(path, "utf8").catch(() => { throw new StewardError("invalid-request", `${path} not found: this directory holds no agent configuration`); });
  const cfg = JSON.parse(text) as AgentConfig;
  for (const k of ["model", "machine", "credential", "caCert"] as const) {
    if (typeof cfg[k] !== "string" || cfg[k] === "") throw new StewardError("invalid-request", `${path}: "${k}" is missing`);
  }
  if (!Array.isArray(cfg.controllerAddresses) || cfg.controllerAddresses.length === 0) throw new StewardError("invalid-request", `${path}: "controllerAddresses" must list at least one host:port`);
  return cfg;
}

export async function saveAgentConfig(dir: string, cfg: AgentConfig): Promise<void> {
  if (cfg.controllerAddresses.length === 0) return;
  await writeFileAtomic(join(dir, "agent.json"), JSON.stringify(cfg, null, 2));
}
