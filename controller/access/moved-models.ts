/**
 * Models that moved to another controller: the last migration of a model known here by name or
 * uuid, and who may be told where it went. Shared by the route rule `model:follow` and the
 * migration guards, which answer a moved model's requests with where it went (410).
 */
import type { MigrationDoc, StateCache } from "../state";
import type { Principal } from "./auth";

/** The last migration of the model known here by `nameOrUuid`. */
export function migrationOf(cache: StateCache, nameOrUuid: string): MigrationDoc | undefined {
  const byUuid = cache.migrations.get(nameOrUuid);
  if (byUuid) return byUuid;
  let found: MigrationDoc | undefined;
  for (const m of cache.migrations.values())
    if (m.modelName === nameOrUuid && (!found || m.startedAt > found.startedAt)) found = m;
  return found;
}

/** Whether `p` may be told where a moved model went: superusers, and users who had access to it then. */
export function mayFollow(p: Principal, m: MigrationDoc): boolean {
  return p.kind === "user" && (p.superuser || (m.usersWithAccess ?? []).includes(p.user));
}
