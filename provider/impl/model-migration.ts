/**
 * A Model whose connection names another controller is MIGRATED there, not replaced: its machines,
 * units and their state move with it (controller/migration/). Whether two connections are two
 * controllers is asked of them (each answers who it is, proven by its CA); a new password or
 * address of the same controller is no migration.
 */
import type { ControllerHello, MigrationInfo } from "../../api/core";
import { ControllerClient, StewardError, TERMINAL_PHASES, routes } from "../../api/core";
import type { ControllerConnection } from "../connection";
import { clientFor, isNotFound, until } from "./session";

async function hello(c: ControllerConnection): Promise<ControllerHello> {
  const anonymous = new ControllerClient({ addresses: c.addresses, caCert: c.caCert, retryUnavailableMs: 5000 });
  try {
    return await anonymous.hello();
  } finally {
    anonymous.close();
  }
}

/**
 * Moves model `name` (uuid `uuid`) from the controller of `from` to that of `to`, waiting until it
 * is done (at most `timeoutMs`). Nothing to do when both are one controller, or the model is
 * already there (moved by `steward migrate`, or an earlier update that lost its answer).
 */
export async function migrateIfMoved(
  name: string,
  uuid: string,
  from: ControllerConnection,
  to: ControllerConnection,
  timeoutMs: number,
): Promise<void> {
  const there = async (): Promise<boolean> => (await clientFor(to).listModels()).some((m) => m.uuid === uuid);
  const target = await hello(to);
  const source = await hello(from).catch(() => undefined);
  if (source?.controller === target.controller) return;
  if (await there()) return;
  if (!source)
    throw new StewardError(
      "unavailable",
      `model "${name}" is to move to controller ${target.name}, but its current controller (${from.addresses.join(", ")}) does not answer`,
      { reason: "controller-unreachable" },
    );
  // The source's own client: following a redirect here would hide where the model is.
  const src = new ControllerClient({
    addresses: from.addresses,
    caCert: from.caCert,
    user: from.user,
    password: from.password,
  });
  try {
    await src
      .call(
        routes.migrate,
        { model: name },
        {
          target: {
            name: target.name,
            addresses: to.addresses,
            caCert: to.caCert,
            user: to.user,
            password: to.password,
          },
        },
      )
      .catch(async (e: unknown) => {
        // One already under way (a retried update) is waited for, not started again.
        if (!(StewardError.isInstance(e) && e.reason === "migration-running")) throw e;
      });
    let last: MigrationInfo | undefined;
    await until(
      `model "${name}" to migrate to controller ${target.name}`,
      timeoutMs,
      async () => {
        // The migration started above, not an earlier arrival of the model.
        last = (await src.call(routes.migration, { model: name })) as MigrationInfo;
        return TERMINAL_PHASES.has(last.phase);
      },
      1000,
    );
    if (last?.phase !== "DONE")
      throw new StewardError(
        "conflict",
        `the migration of model "${name}" to ${target.name} was aborted: ${last?.failure ?? "no reason recorded"}; the model stays where it was`,
      );
  } catch (e) {
    if (isNotFound(e) && (await there())) return;
    throw e;
  } finally {
    src.close();
  }
}
