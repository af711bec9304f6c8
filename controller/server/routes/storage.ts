/**
 * Storage (issue 32): the model's instances (listed, one in full), detaching, attaching and removing
 * them on live units, and the model's pools (its substrate's built-in ones and those users make).
 */
import type { StorageDetails } from "../../../api";
import { DEFAULT_SUBSTRATE, notFound, routes } from "../../../api";
import type { ModelIndex } from "../../state";
import { poolInfos, resolvePool, storageInfoOf } from "../../state";
import type { Route } from "../../access/route";
import type { HttpApiDeps } from "./deps";

export function registerStorageRoutes(route: Route, deps: HttpApiDeps): void {
  const { ops } = deps;
  const substrateOf = (idx: ModelIndex) => idx.model?.placement.substrate ?? DEFAULT_SUBSTRATE;

  route(routes.listStorage, async ({ model: idx }) => ({
    storage: [...idx.storage.values()].map(storageInfoOf).sort((a, b) => storageOrder(a.id, b.id)),
  }));

  route(routes.showStorage, async ({ model: idx, params: { store, n } }): Promise<StorageDetails> => {
    const s = idx.storage.get(`${store}/${n}`);
    if (!s) throw notFound("storage", `${store}/${n}`);
    const pool = resolvePool(substrateOf(idx), s.pool, idx.storagePools.get(s.pool));
    return {
      ...storageInfoOf(s),
      ...(s.machine !== undefined ? { machine: s.machine } : {}),
      poolType: pool?.type.name ?? s.pool,
      life: s.life,
      createdAt: s.createdAt,
    };
  });

  route(routes.detachStorage, async ({ model: idx, body, settled }) => {
    const res = await ops.storageAttachments.detach(idx.uuid, body.ids, body.force);
    await settled(res.revision);
    return { ids: res.ids };
  });

  route(routes.attachStorage, async ({ model: idx, body, settled }) => {
    const res = await ops.storageAttachments.attach(idx.uuid, body.unit, body.ids);
    await settled(res.revision);
    return { ids: res.ids };
  });

  route(routes.removeStorage, async ({ model: idx, body, settled }) => {
    const res = await ops.storageAttachments.remove(idx.uuid, body.ids, body.force);
    await settled(res.revision);
    return { ids: res.ids };
  });

  route(routes.listStoragePools, async ({ model: idx }) => ({
    pools: poolInfos(substrateOf(idx), idx.storagePools.values()),
  }));

  route(routes.createStoragePool, async ({ reply, model: idx, body, settled }) => {
    const res = await ops.storagePools.create(idx.uuid, body);
    await settled(res.revision);
    reply.code(res.created ? 201 : 200);
    return poolInfos(substrateOf(idx), [res.pool]).find((p) => p.name === res.pool.name)!;
  });

  route(routes.removeStoragePool, async ({ model: idx, params: { pool }, settled }) => {
    await settled((await ops.storagePools.remove(idx.uuid, pool)).revision);
  });
}

/** `data/2` before `data/10`: by store name, then number. */
function storageOrder(a: string, b: string): number {
  const [an, ai] = a.split("/");
  const [bn, bi] = b.split("/");
  return an === bn ? Number(ai) - Number(bi) : an!.localeCompare(bn!);
}
