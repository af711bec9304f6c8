/**
 * Controller backups (superuser only; controller/backup/):
 *
 * - `POST /v1/backups` `{passphrase}` → the new backup's record (made, verified, kept), 201
 * - `GET /v1/backups` → the kept backups, oldest first
 * - `GET /v1/backups/<id>?part=N` → `{record, part, data}`: part N of the encrypted file, base64
 * - `DELETE /v1/backups/<id>`
 *
 * The passphrase travels in the body over TLS to the controller, which holds every secret the
 * backup does anyway; it is never stored or logged. One backup is made at a time per replica.
 */
import type { FastifyInstance } from "fastify";
import { StewardError, routes } from "../../api";
import type { StateCache } from "../state";
import type { Store } from "../store";
import type { KeptBackups } from "../backup";
import { checkBackupId, createBackup } from "../backup";
import { routeOn } from "../access/route";

export interface BackupRouteDeps {
  cache: StateCache;
  store: Store;
  dataDir: string;
  kept: KeptBackups;
}

export function registerBackupRoutes(app: FastifyInstance, deps: BackupRouteDeps): void {
  const route = routeOn(app, deps.cache);
  let making = false;

  route(routes.createBackup, async ({ body: { passphrase } }) => {
    if (making)
      throw new StewardError(
        "conflict",
        "a backup is being made on this controller replica; try again when it is done",
        { retryable: true },
      );
    making = true;
    try {
      return await createBackup({ store: deps.store, dataDir: deps.dataDir, passphrase, kept: deps.kept });
    } finally {
      making = false;
    }
  });

  route(routes.listBackups, async () => ({ backups: await deps.kept.list() }));

  route(routes.backupPart, async ({ params, query }) => {
    const id = checkBackupId(params.id);
    const part = Number(query.part ?? "0");
    const { record, data } = await deps.kept.part(id, part);
    return { record, part, data: data.toString("base64") };
  });

  route(routes.removeBackup, async ({ params }) => {
    const id = checkBackupId(params.id);
    await deps.kept.get(id);
    await deps.kept.remove(id);
    return { removed: id };
  });
}
