/**
 * The agent's configuration file (`agent.json`, 0600 because it holds the credential): who the
 * agent is and where its controllers are. One format, written by whoever installs an agent (the
 * local substrate, the SSH installer, cloud-init) and read by the agent.
 */
import { StewardError } from "./errors";

export const AGENT_CONFIG_FILE = "agent.json";

export interface AgentConfig {
  /** The model's uuid. */
  model: string;
  machine: string;
  credential: string;
  /** Never empty: an update with no addresses is ignored rather than stranding the agent. */
  controllerAddresses: string[];
  /** The controller CA the agent pins (PEM). */
  caCert: string;
}

export function agentConfigText(cfg: AgentConfig): string {
  return JSON.stringify(cfg, null, 2) + "\n";
}

/** Parses and checks `text` (from `where`, named in errors). */
export function parseAgentConfig(text: string, where: string): AgentConfig {
  let cfg: Partial<AgentConfig>;
  try {
    cfg = JSON.parse(text) as Partial<AgentConfig>;
  } catch {
    throw new StewardError("invalid-request", `${where} is not valid JSON`);
  }
  if (typeof cfg !== "object" || cfg === null)
    throw new StewardError("invalid-request", `${where} must hold a JSON object`);
  for (const k of ["model", "machine", "credential", "caCert"] as const) {
    if (typeof cfg[k] !== "string" || cfg[k] === "")
      throw new StewardError("invalid-request", `${where}: "${k}" is missing`);
  }
  if (
    !Array.isArray(cfg.controllerAddresses) ||
    cfg.controllerAddresses.length === 0 ||
    !cfg.controllerAddresses.every((a) => typeof a === "string")
  ) {
    throw new StewardError("invalid-request", `${where}: "controllerAddresses" must list at least one host:port`);
  }
  return {
    model: cfg.model!,
    machine: cfg.machine!,
    credential: cfg.credential!,
    controllerAddresses: cfg.controllerAddresses,
    caCert: cfg.caCert!,
  };
}
