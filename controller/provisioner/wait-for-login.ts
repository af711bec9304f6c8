import { StewardError } from "../../api";
import type { StateCache } from "../state";

/**
 * Resolves once the machine's agent is present (logged in); `hint` says where to look when it does
 * not. Gives up at once when `abandoned` says so (the machine was removed meanwhile, the
 * provisioner stopped), rather than waiting out the timeout for an agent that cannot come.
 */
export async function waitForAgentLogin(
  cache: StateCache,
  model: string,
  machine: string,
  timeoutMs: number,
  hint: string,
  abandoned?: () => string | undefined,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (cache.models.get(model)?.presence.has(machine)) return;
    const why = abandoned?.();
    if (why) throw new StewardError("cancelled", `stopped waiting for the agent: ${why}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new StewardError(
    "deadline-exceeded",
    `the agent did not log in within ${Math.round(timeoutMs / 1000)} s: ${hint}`,
  );
}
