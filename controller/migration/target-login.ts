/**
 * The login to a migration's target that its user gave: sealed in the migration document (so any
 * replica that leads, or sends its part of the logs, can use it) and dropped when the migration ends.
 */
import { ControllerClient, StewardError } from "../../api";
import type { MigrationDoc } from "../state";
import type { Sealer } from "../security/sealing";

/** The sealed login to the target (`MigrationDoc.sealedAuth`). */
export interface TargetAuth {
  user: string;
  password?: string;
  token?: string;
}

export const authPurpose = (id: string): string => `migration/${id}`;

/** A client of the migration's target, logged in as its user asked. */
export function targetClient(m: MigrationDoc, sealer: Sealer): ControllerClient {
  const auth = m.sealedAuth ? sealer.openJson<TargetAuth>(authPurpose(m.id), m.sealedAuth) : undefined;
  if (!auth) throw new StewardError("unauthorized", "this migration holds no login for the target any more");
  return new ControllerClient({
    addresses: m.target.addresses,
    caCert: m.target.caCert,
    user: auth.user,
    ...(auth.password ? { password: auth.password } : {}),
    ...(auth.token ? { token: auth.token } : {}),
    retryUnavailableMs: 5000,
    timeoutMs: 60_000,
  });
}
