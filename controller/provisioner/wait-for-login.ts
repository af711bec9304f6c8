/**
 * Waiting for a machine's agent to log in, the last step of an install or a launch: it may take
 * minutes (a cloud instance boots first), so the wait ends early when its work is cancelled.
 */
import { StewardError } from "../../api";
import type { StateCache } from "../state";
import { sleep } from "../workers";

export interface LoginWait {
  timeoutMs: number;
  /** Where to look when the agent does not come. */
  hint: string;
  /** Why to stop waiting now (the machine was removed meanwhile), if there is a reason. */
  abandoned?: () => string | undefined;
  /** Aborts the wait (the provisioner stopping): it throws `cancelled` at once. */
  signal?: AbortSignal;
}

/**
 * Resolves once the machine's agent is present (logged in). Gives up at once when abandoned or
 * aborted, rather than waiting out the timeout for an agent that cannot come or nobody awaits.
 */
export async function waitForAgentLogin(
  cache: StateCache,
  model: string,
  machine: string,
  o: LoginWait,
): Promise<void> {
  const deadline = Date.now() + o.timeoutMs;
  while (Date.now() < deadline) {
    if (cache.models.get(model)?.presence.has(machine)) return;
    const why = o.signal?.aborted ? "the provisioner stopped" : o.abandoned?.();
    if (why) throw new StewardError("cancelled", `stopped waiting for the agent: ${why}`);
    await sleep(100, o.signal);
  }
  throw new StewardError(
    "deadline-exceeded",
    `the agent did not log in within ${Math.round(o.timeoutMs / 1000)} s: ${o.hint}`,
  );
}
