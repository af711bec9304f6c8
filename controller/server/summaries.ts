/**
 * The answers of `GET /v1/controller` and `GET /v1/models`, built where the REST API and the
 * dashboard's live feed can both use them. The cluster's layout (replica and etcd hosts, spares,
 * the replica cloud) is for superusers; every other user sees the controller's overview.
 */
import type { ControllerInfo, ControllerOverview, ModelSummary, StoreFormatInfo } from "../../api";
import {
  STEWARD_VERSION,
  STORE_FORMAT,
  compareVersions,
  describePlacement,
  parseVersion,
  formatConstraints,
  hasConstraints,
} from "../../api";
import type { ClusterControl } from "../cluster";
import { distrusted } from "../releases/release-source";
import type { StateCache } from "../state";
import { migrationWaitsFor, modelSettings } from "../state";
import type { Principal } from "../access/auth";
import { modelAccess } from "../access/auth";

/** What every user sees of the controller: who it is, and how to reach and recognise it. */
export function controllerOverview(cache: StateCache, addresses: string[], caFingerprint: string): ControllerOverview {
  // Keys a superuser changed rule out releases signed by one no longer trusted (before, every held one was verified).
  const trusted = cache.releaseKeys?.keys;
  const available = [...cache.releases.values()]
    .filter((d) => !trusted || !distrusted(d, trusted))
    .map((d) => d.version)
    .filter((v) => parseVersion(v) && compareVersions(v, STEWARD_VERSION) > 0)
    .sort(compareVersions);
  return {
    name: cache.controller?.name ?? "",
    uuid: cache.controller?.uuid ?? "",
    version: STEWARD_VERSION,
    addresses,
    caFingerprint,
    ...(available.length ? { available } : {}),
  };
}

/** The overview part of a superuser's answer (what the live feed sends other users). */
export function overviewOf(info: ControllerInfo): ControllerOverview {
  return {
    name: info.name,
    uuid: info.uuid,
    version: info.version,
    addresses: info.addresses,
    caFingerprint: info.caFingerprint,
    ...(info.available ? { available: info.available } : {}),
  };
}

export async function describeController(
  cache: StateCache,
  cluster: Pick<ClusterControl, "info">,
  addresses: string[],
  caFingerprint: string,
): Promise<ControllerInfo> {
  const info = await cluster.info();
  // Without quorum this replica's view of who leads is frozen at the cut: it names no leader.
  const leader = info.degraded ? undefined : cache.leader?.replica;
  return {
    ...controllerOverview(cache, addresses, caFingerprint),
    replicas: [...cache.replicas.values()]
      .map((r) => ({ ...r, leader: leader === r.id }))
      .sort((a, b) => a.since.localeCompare(b.since)),
    cluster: info,
    ...(cache.controller ? { store: storeFormatOf(cache) } : {}),
  };
}

/** The store's format; its migration when one ran, or why the one this release wants waits. */
function storeFormatOf(cache: StateCache): StoreFormatInfo {
  const format = cache.controller!.schemaVersion;
  const m = cache.storeMigration;
  // A record's migration is the one that brought the store to its format (it bumps both at once).
  if (m && m.to === format)
    return {
      format,
      migration: {
        from: m.from,
        to: m.to,
        startedAt: m.startedAt,
        rewritten: m.rewritten,
        ...(m.doneAt ? { doneAt: m.doneAt } : {}),
      },
    };
  const waitsFor = format < STORE_FORMAT ? migrationWaitsFor(cache) : undefined;
  return waitsFor ? { format, migration: { from: format, to: STORE_FORMAT, rewritten: 0, waitsFor } } : { format };
}

/** The models the user has some access to, by name. */
export function modelSummaries(cache: StateCache, p: Extract<Principal, { kind: "user" }>): ModelSummary[] {
  const out: ModelSummary[] = [];
  for (const idx of cache.models.values()) {
    if (!idx.model) continue;
    const access = modelAccess(p, idx);
    if (!access) continue;
    out.push({
      name: idx.model.name,
      uuid: idx.uuid,
      life: idx.model.life,
      owner: idx.model.owner,
      applications: idx.apps.size,
      machines: idx.machines.size,
      units: idx.units.size,
      access,
      config: modelSettings(idx.model.config),
      substrate: idx.model.placement.substrate,
      ...(idx.model.placement.credential ? { credential: idx.model.placement.credential } : {}),
      settings: { ...idx.model.placement.settings },
      where: describePlacement(idx.model.placement),
      ...(hasConstraints(idx.model.constraints) ? { constraints: formatConstraints(idx.model.constraints) } : {}),
    });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}
