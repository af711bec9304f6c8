/**
 * A view of the store for leader-only work: every transaction also requires the leader's campaign
 * key to be ours, so a replica that lost leadership (and does not know yet) cannot write.
 */
import { StewardError } from "../../api";
import type { CallOptions, Compare, Store, Txn, TxnResult } from "../store";

export function fencedStore(store: Store, fence: () => Compare[]): Store {
  const txn = async (t: Txn, call?: CallOptions): Promise<TxnResult> => {
    const guard = fence();
    const res = await store.txn({ ...t, compare: [...(t.compare ?? []), ...guard] }, call);
    if (!res.succeeded) {
      // Tell a lost fence apart from an ordinary failed compare, so callers do not retry in vain.
      for (const g of guard) {
        const kv = await store.get(g.key);
        if ((kv?.createRevision ?? 0) !== g.value)
          throw new StewardError("unavailable", "this replica is no longer the controller leader", {
            reason: "not-leader",
          });
      }
    }
    return res;
  };
  return Object.assign(Object.create(store) as Store, {
    txn,
    put: async (key: string, value: string, opts: { lease?: string } = {}) =>
      (await txn({ success: [{ type: "put", key, value, ...(opts.lease ? { lease: opts.lease } : {}) }] })).revision,
    delete: async (key: string) => (await txn({ success: [{ type: "delete", key }] })).revision,
  });
}
