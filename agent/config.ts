/** Reading and saving the agent's own configuration (format: api/agent-config.ts). */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { AgentConfig } from "../api/core";
import { AGENT_CONFIG_FILE, StewardError, agentConfigText, parseAgentConfig } from "../api/core";
import { writeFileAtomic } from "./files";

export type { AgentConfig };

export async function readAgentConfig(dir: string): Promise<AgentConfig> {
  const path = join(dir, AGENT_CONFIG_FILE);
  const text = await readFile(path, "utf8").catch(() => {
    throw new StewardError("invalid-request", `${path} not found: this directory holds no agent configuration`);
  });
  return parseAgentConfig(text, path);
}

export async function saveAgentConfig(dir: string, cfg: AgentConfig): Promise<void> {
  if (cfg.controllerAddresses.length === 0) return;
  await writeFileAtomic(join(dir, AGENT_CONFIG_FILE), agentConfigText(cfg));
}
