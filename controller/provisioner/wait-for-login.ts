import { StewardError } from "../../api";
import type { StateCache } from "../state";

/** Resolves once the machine's agent is present (logged in); `hint` says where to look when it does not. */
export async function waitForAgentLogin(cache: StateCache, model: string, machine: string, timeoutMs: number, hint: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (cache.models.get(model)?.presence.has(machine)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new StewardError("unavailable", `the agent did not log in within ${Math.round(timeoutMs / 1000)} s: ${hint}`);
}
