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
import { z } from "zod";
import { StewardError, parseRequest } from "../../api";
import type { StateCache } from "../state";
import type { Store } from "../store";
import type { KeptBackups } from "../backup";
import { checkBackupId, createBackup } from "../backup";
import { authenticate, requireSuperuser } from "../access/auth";

export interface BackupRouteDeps { cache: StateCache; store: Store; dataDir: string; kept: KeptBackups }

const CreateBackup = z.strictObject({ passphrase: z.string().min(8, "a backup passphrase must be at least 8 characters").max(1024) });

export function registerBackupRoutes(app: FastifyInstance, deps: BackupRouteDeps): void {
  const su = (req: { headers: Record<string, unknown>; method: string }): void => requireSuperuser(authenticate(deps.cache, req.headers as never, { method: req.method }));
  let making = false;

  app.post("/v1/backups", async (req, reply) => {
    su(req);
    const { passphrase } = parseRequest(CreateBackup, req.body, "backup request");
    if (making) throw new StewardError("conflict", "a backup is being made on this controller replica; try again when it is done", { retryable: true });
    making = true;
    try {
      const made = await createBackup({ store: deps.store, dataDir: deps.dataDir, passphrase, kept: deps.kept });
      reply.code(201);
      return made;
    } finally {
      making = false;
    }
  });

  app.get("/v1/backups", async (req) => {
    su(req);
    return { backups: await deps.kept.list() };
  });

  app.get("/v1/backups/:id", async (req) => {
    su(req);
    const id = checkBackupId((req.params as { id: string }).id);
    const part = Number((req.query as { part?: string }).part ?? "0");
    const { record, data } = await deps.kept.part(id, part);
    return { record, part, data: data.toString("base64") };
  });

  app.delete("/v1/backups/:id", async (req) => {
    su(req);
    const id = checkBackupId((req.params as { id: string }).id);
    await deps.kept.get(id);
    await deps.kept.remove(id);
    return { removed: id };
  });
}
