/**
 * What one provider process shares between the resources it handles: one client per controller
 * connection (one login, kept-alive sockets) and a short-lived status cache per model, so that a
 * refresh of a model's hundred applications costs one status request, not a hundred.
 */
import { createHash } from "node:crypto";
import { ControllerClient, StewardError } from "../../api/core";
import type { ModelStatus } from "../../api/core";
import type { ControllerConnection } from "../connection";

const clients = new Map<string, ControllerClient>();
const statuses = new Map<string, { at: number; status: Promise<ModelStatus> }>();

/** How long a model's status may be reused by reads (refresh) in this process. */
const STATUS_TTL_MS = 2000;

function keyOf(c: ControllerConnection): string {
  return createHash("sha256")
    .update(JSON.stringify([[...c.addresses].sort(), c.caCert, c.user, c.password]))
    .digest("hex");
}

/** The client for `connection`, created on first use; the password never leaves this process. */
export function clientFor(connection: ControllerConnection): ControllerClient {
  if (!connection || !Array.isArray(connection.addresses) || connection.addresses.length === 0) {
    throw new StewardError(
      "invalid-request",
      "connection: no controller addresses; pass a Controller's `connection` output",
    );
  }
  const key = keyOf(connection);
  let client = clients.get(key);
  if (!client) {
    // A model that migrated is followed to its new controller with the same login (the user has one
    // there, having moved it); the stack keeps working until its connection is updated.
    client = new ControllerClient({
      addresses: connection.addresses,
      caCert: connection.caCert,
      user: connection.user,
      password: connection.password,
      onMoved: (m) => ({ addresses: m.target.addresses, caCert: m.target.caCert }),
    });
    clients.set(key, client);
  }
  return client;
}

/**
 * The model's status; `undefined` when the model is gone. With `shared` (reads, as in a refresh)
 * one answer serves every read within {@link STATUS_TTL_MS}; without, it is fetched fresh and not
 * kept, so a change made since (by hand, or by this process) is never hidden.
 */
export async function modelStatus(
  connection: ControllerConnection,
  model: string,
  shared = false,
): Promise<ModelStatus | undefined> {
  if (!shared) return orUndefined(clientFor(connection).status(model));
  const key = `${keyOf(connection)}/${model}`;
  const cached = statuses.get(key);
  if (cached && Date.now() - cached.at < STATUS_TTL_MS) return orUndefined(cached.status);
  const status = clientFor(connection).status(model);
  statuses.set(key, { at: Date.now(), status });
  status.catch(() => statuses.delete(key));
  return orUndefined(status);
}

/** Forgets cached statuses of `model` after this process changed it. */
export function changed(connection: ControllerConnection, model: string): void {
  statuses.delete(`${keyOf(connection)}/${model}`);
}

async function orUndefined(status: Promise<ModelStatus>): Promise<ModelStatus | undefined> {
  return status.catch((e: unknown) => {
    if (isNotFound(e)) return undefined;
    throw e;
  });
}

export const isNotFound = (e: unknown): boolean => StewardError.isInstance(e) && e.code === "not-found";
export const isConflict = (e: unknown): boolean => StewardError.isInstance(e) && e.code === "already-exists";

/** HTTP requests sent by this process so far (benchmarks report it). */
export function requestCount(): number {
  let n = 0;
  for (const c of clients.values()) n += c.requestCount;
  return n;
}

/**
 * An error the dynamic provider turns into a partial success: the engine records the resource with
 * `id` and `properties` (so the next `up` updates it rather than creating a duplicate) and shows the reasons.
 */
export class PartialFailure extends Error {
  constructor(
    public readonly id: string,
    public readonly properties: object,
    public readonly reasons: string[],
  ) {
    super(reasons.join("\n"));
  }
}

/** Polls `probe` until it answers true, or fails with `what` after `timeoutMs`. */
export async function until(
  what: string,
  timeoutMs: number,
  probe: () => Promise<boolean>,
  intervalMs = 500,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline)
      throw new StewardError(
        "deadline-exceeded",
        `timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}`,
      );
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
