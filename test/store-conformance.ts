/**
 * The store conformance suite: what every backend of the store port must do. A backend's test file
 * calls {@link storeConformance} with a factory; the etcd backend runs this same suite.
 */
import type { ExecutionContext } from "ava";

/** `test` or `test.serial` (backends sharing one server, whose revisions are global, run serially). */
export type Register = (title: string, fn: (t: ExecutionContext) => Promise<void>) => void;
import type { Store, WatchEvent } from "../controller";
import { CompactedError, LeaseNotFoundError, absent, unchanged } from "../controller";
import { StewardError } from "../api";

export interface StoreFactory {
  /** A fresh, empty store. */
  create(): Promise<Store>;
  /** Closes `store` and opens the same data again (a restart), when the backend can. */
  reopen?(store: Store): Promise<Store>;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Collects watch events until `count` have arrived or `ms` pass. */
function collect(store: Store, prefix: string, count: number, fromRevision?: number, ms = 5000): Promise<WatchEvent[]> {
  return new Promise((resolve, reject) => {
    const got: WatchEvent[] = [];
    const timer = setTimeout(() => {
      w.close();
      resolve(got);
    }, ms);
    const w = store.watch(
      prefix,
      (events) => {
        got.push(...events);
        if (got.length >= count) {
          clearTimeout(timer);
          w.close();
          resolve(got);
        }
      },
      {
        ...(fromRevision !== undefined ? { fromRevision } : {}),
        onError: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      },
    );
  });
}

export function storeConformance(test: Register, name: string, factory: StoreFactory): void {
  const withStore = (title: string, fn: (t: ExecutionContext, s: Store) => Promise<void>): void => {
    test(`${name}: ${title}`, async (t) => {
      const s = await factory.create();
      try {
        await fn(t, s);
      } finally {
        await s.close();
      }
    });
  };

  withStore("put then get returns the value with revisions and a version", async (t, s) => {
    const r1 = await s.put("/a", "1");
    const r2 = await s.put("/a", "2");
    t.true(r2 > r1);
    const kv = await s.get("/a");
    t.is(kv?.value, "2");
    t.is(kv?.createRevision, r1);
    t.is(kv?.modRevision, r2);
    t.is(kv?.version, 2);
    t.is(await s.get("/missing"), undefined);
  });

  withStore("a transaction with several writes takes exactly one revision", async (t, s) => {
    const before = await s.currentRevision();
    const res = await s.txn({
      success: [
        { type: "put", key: "/x", value: "1" },
        { type: "put", key: "/y", value: "2" },
        { type: "delete", key: "/none" },
      ],
    });
    t.true(res.succeeded);
    t.is(res.revision, before + 1);
    t.is((await s.get("/x"))?.modRevision, before + 1);
    t.is((await s.get("/y"))?.modRevision, before + 1);
    const readOnly = await s.txn({ success: [{ type: "get", key: "/x" }] });
    t.is(readOnly.revision, before + 1);
    t.is(readOnly.responses[0]![0]!.value, "1");
  });

  withStore("compares decide between success and failure branches", async (t, s) => {
    const created = await s.txn({ compare: [absent("/k")], success: [{ type: "put", key: "/k", value: "v1" }] });
    t.true(created.succeeded);
    const again = await s.txn({
      compare: [absent("/k")],
      success: [{ type: "put", key: "/k", value: "v2" }],
      failure: [{ type: "get", key: "/k" }],
    });
    t.false(again.succeeded);
    t.is(again.responses[0]![0]!.value, "v1");
    const kv = (await s.get("/k"))!;
    t.true(
      (await s.txn({ compare: [unchanged("/k", kv.modRevision)], success: [{ type: "put", key: "/k", value: "v3" }] }))
        .succeeded,
    );
    t.false(
      (await s.txn({ compare: [unchanged("/k", kv.modRevision)], success: [{ type: "put", key: "/k", value: "v4" }] }))
        .succeeded,
    );
    t.true((await s.txn({ compare: [{ key: "/k", target: "value", value: "v3" }], success: [] })).succeeded);
    t.true((await s.txn({ compare: [{ key: "/k", target: "version", op: ">", value: 1 }], success: [] })).succeeded);
    t.is((await s.get("/k"))?.value, "v3");
  });

  withStore("concurrent compare-and-swap increments lose no update", async (t, s) => {
    await s.put("/counter", "0");
    const increment = async (): Promise<void> => {
      for (;;) {
        const kv = (await s.get("/counter"))!;
        const res = await s.txn({
          compare: [unchanged("/counter", kv.modRevision)],
          success: [{ type: "put", key: "/counter", value: String(Number(kv.value) + 1) }],
        });
        if (res.succeeded) return;
      }
    };
    await Promise.all(Array.from({ length: 25 }, increment));
    t.is((await s.get("/counter"))?.value, "25");
  });

  withStore("range returns only the prefix, sorted by key", async (t, s) => {
    for (const k of ["/p/b", "/p/a", "/p/c/d", "/q/a", "/pz"]) await s.put(k, k);
    const { kvs, revision } = await s.range("/p/");
    t.deepEqual(
      kvs.map((kv) => kv.key),
      ["/p/a", "/p/b", "/p/c/d"],
    );
    t.is(revision, await s.currentRevision());
    const del = await s.txn({ success: [{ type: "deletePrefix", prefix: "/p/" }] });
    t.is(del.responses[0]!.length, 3);
    t.deepEqual(
      (await s.range("/p")).kvs.map((kv) => kv.key),
      ["/pz"],
    );
  });

  withStore("a value over 1.5 MiB is refused and nothing is written", async (t, s) => {
    const err = await t.throwsAsync(
      s.txn({
        success: [
          { type: "put", key: "/small", value: "x" },
          { type: "put", key: "/big", value: "x".repeat(1600 * 1024) },
        ],
      }),
    );
    t.true(StewardError.isInstance(err));
    t.is(await s.get("/small"), undefined);
  });

  withStore("keys on a revoked lease disappear with it", async (t, s) => {
    const lease = await s.grantLease(30);
    await s.put("/l/1", "a", { lease: lease.id });
    await s.put("/l/2", "b", { lease: lease.id });
    await s.put("/l/3", "c");
    await s.revokeLease(lease.id);
    t.deepEqual(
      (await s.range("/l/")).kvs.map((kv) => kv.key),
      ["/l/3"],
    );
    await t.throwsAsync(s.put("/l/4", "d", { lease: lease.id }), { instanceOf: LeaseNotFoundError });
    t.is(await s.get("/l/4"), undefined);
  });

  withStore("an unrenewed lease expires after its TTL and a renewed one does not", async (t, s) => {
    const short = await s.grantLease(1);
    const kept = await s.grantLease(1);
    await s.put("/e/short", "x", { lease: short.id });
    await s.put("/e/kept", "y", { lease: kept.id });
    for (let i = 0; i < 8; i++) {
      await sleep(300);
      await s.keepAlive(kept.id);
    }
    t.is(await s.get("/e/short"), undefined);
    t.is((await s.get("/e/kept"))?.value, "y");
    await t.throwsAsync(s.keepAlive(short.id), { instanceOf: LeaseNotFoundError });
    // Revoked now: left to expire, its key's deletion would move a shared etcd's revision during a later test.
    await s.revokeLease(kept.id);
  });

  withStore("a watch delivers puts and deletes under its prefix in order", async (t, s) => {
    const got = collect(s, "/w/", 3);
    await s.put("/w/a", "1");
    await s.put("/other", "x");
    await s.put("/w/a", "2");
    await s.delete("/w/a");
    const events = await got;
    t.deepEqual(
      events.map((e) => [e.type, e.kv.key, e.type === "put" ? e.kv.value : ""]),
      [
        ["put", "/w/a", "1"],
        ["put", "/w/a", "2"],
        ["delete", "/w/a", ""],
      ],
    );
    t.true(events[0]!.kv.modRevision < events[1]!.kv.modRevision);
  });

  withStore("a watch replays history from a revision, then continues live", async (t, s) => {
    const from = await s.put("/h/1", "a");
    await s.put("/h/2", "b");
    const got = collect(s, "/h/", 3, from);
    await sleep(50);
    await s.put("/h/3", "c");
    t.deepEqual(
      (await got).map((e) => e.kv.key),
      ["/h/1", "/h/2", "/h/3"],
    );
  });

  withStore("a watch from a compacted revision fails with CompactedError", async (t, s) => {
    const first = await s.put("/c/1", "a");
    await s.put("/c/2", "b");
    const last = await s.put("/c/3", "c");
    await s.compact(last);
    const err = await t.throwsAsync(collect(s, "/c/", 1, first));
    t.true(err instanceof CompactedError || (StewardError.isInstance(err) && /compacted/.test(err.message)));
    const events = await collect(s, "/c/", 1, last);
    t.is(events[0]?.kv.key, "/c/3");
  });

  withStore("writing one key twice in a transaction is refused", async (t, s) => {
    await t.throwsAsync(
      s.txn({
        success: [
          { type: "put", key: "/d", value: "1" },
          { type: "put", key: "/d", value: "2" },
        ],
      }),
    );
    t.is(await s.get("/d"), undefined);
  });

  if (factory.reopen) {
    const reopen = factory.reopen.bind(factory);
    test(`${name}: state and revision survive a restart`, async (t) => {
      let s = await factory.create();
      try {
        for (let i = 0; i < 50; i++) await s.put(`/r/${i}`, String(i));
        await s.delete("/r/7");
        const lease = await s.grantLease(60);
        await s.put("/r/leased", "x", { lease: lease.id });
        const rev = await s.currentRevision();
        s = await reopen(s);
        t.is(await s.currentRevision(), rev);
        t.is((await s.range("/r/")).kvs.length, 50);
        t.is(await s.get("/r/7"), undefined);
        t.is((await s.get("/r/49"))?.version, 1);
        await s.revokeLease(lease.id);
        t.is(await s.get("/r/leased"), undefined);
      } finally {
        await s.close();
      }
    });
  }
}
