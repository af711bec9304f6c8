import test from "ava";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { appendFile, mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Store } from "../controller";
import { EmbeddedStore, embeddedStoreSize } from "../controller";
import { eventually } from "./harness/eventually";
import { storeConformance } from "./store-conformance";

const dirs = new Map<Store, string>();
const tmp = (): Promise<string> => mkdtemp(join(tmpdir(), "steward-store-"));

storeConformance(test, "embedded", {
  async create() {
    const dir = await tmp();
    const s = await EmbeddedStore.open({ dir });
    dirs.set(s, dir);
    return s;
  },
  async reopen(store) {
    const dir = dirs.get(store)!;
    await store.close();
    const s = await EmbeddedStore.open({ dir });
    dirs.set(s, dir);
    return s;
  },
});

test("embedded: a torn frame at the end of the log is cut off and earlier writes stay", async (t) => {
  const dir = await tmp();
  let s = await EmbeddedStore.open({ dir });
  for (let i = 0; i < 10; i++) await s.put(`/t/${i}`, "v");
  await s.close();
  await appendFile(join(dir, "wal.log"), Buffer.from([0x40, 0, 0, 0, 1, 2, 3, 4, 0x7b, 0x22])); // a header promising 64 bytes, then 2
  s = await EmbeddedStore.open({ dir });
  t.is((await s.range("/t/")).kvs.length, 10);
  await s.put("/t/after", "ok");
  await s.close();
  s = await EmbeddedStore.open({ dir });
  t.is((await s.get("/t/after"))?.value, "ok");
  await s.close();
  await rm(dir, { recursive: true });
});

test("embedded: a snapshot replaces the log and a reopen restores from it", async (t) => {
  const dir = await tmp();
  let s = await EmbeddedStore.open({ dir, snapshotAfterBytes: 4096 });
  for (let i = 0; i < 200; i++) await s.put(`/s/${i % 20}`, `value-${i}`);
  const rev = await s.currentRevision();
  await s.close();
  t.true((await stat(join(dir, "snapshot.frames"))).size > 0);
  t.true((await stat(join(dir, "wal.log"))).size < 4096 + 512);
  s = await EmbeddedStore.open({ dir });
  t.is(await s.currentRevision(), rev);
  t.is((await s.get("/s/19"))?.value, "value-199");
  t.is((await s.get("/s/19"))?.version, 10);
  await s.close();
  await rm(dir, { recursive: true });
});

test.serial("embedded: kill -9 in the middle of writes loses no acknowledged write", async (t) => {
  const dir = await tmp();
  // A child process writes as fast as it can (32 writers at once, so batches are group-committed)
  // and prints each key once its write is acknowledged; we kill it without warning.
  const script = `
    const { EmbeddedStore } = require(${JSON.stringify(join(__dirname, "..", "controller"))});
    (async () => {
      const s = await EmbeddedStore.open({ dir: ${JSON.stringify(dir)}, snapshotAfterBytes: 64 * 1024 });
      let n = 0;
      const writer = async (w) => { for (;;) { const k = "/k/" + w + "/" + (n++); await s.put(k, "x".repeat(200)); process.stdout.write(k + "\\n"); } };
      for (let w = 0; w < 32; w++) writer(w);
    })();`;
  const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
  });
  await new Promise<void>((resolve) => {
    const check = setInterval(() => {
      if (out.split("\n").length > 3000) {
        clearInterval(check);
        resolve();
      }
    }, 20);
  });
  child.kill("SIGKILL");
  await new Promise((r) => child.once("exit", r));
  const acked = out.split("\n").slice(0, -1); // the last line may be cut mid-write
  const s = await EmbeddedStore.open({ dir });
  const present = new Set((await s.range("/k/")).kvs.map((kv) => kv.key));
  const missing = acked.filter((k) => !present.has(k));
  t.true(acked.length > 3000, `acknowledged ${acked.length}`);
  t.deepEqual(missing, [], `${missing.length} acknowledged writes missing`);
  await s.close();
  t.truthy(await readFile(join(dir, "wal.log")));
  await rm(dir, { recursive: true });
});

test.serial("embedded: a store of many large values snapshots key by key and reopens whole", async (t) => {
  const dir = await tmp();
  const valueBytes = 1400 * 1024;
  const count = 40;
  const valueOf = (i: number): string =>
    String.fromCharCode(97 + (i % 26)).repeat(valueBytes - 8) + String(i).padStart(8, "0");
  // Watch every JSON.stringify while the store snapshots: none may hold more than about one value.
  const stringify = JSON.stringify;
  let longest = 0;
  JSON.stringify = ((...args: Parameters<typeof stringify>) => {
    const out = stringify(...args);
    longest = Math.max(longest, out?.length ?? 0);
    return out;
  }) as typeof JSON.stringify;
  let s: EmbeddedStore;
  try {
    s = await EmbeddedStore.open({ dir, snapshotAfterBytes: 8 * 1024 * 1024 });
    for (let i = 0; i < count; i++) await s.put(`/big/${i}`, valueOf(i));
    await s.close();
  } finally {
    JSON.stringify = stringify;
  }
  const { snapshotBytes, blobBytes } = await embeddedStoreSize(dir);
  t.true(
    snapshotBytes + blobBytes > 32 * valueBytes,
    `the snapshot and its blob files hold most values (${snapshotBytes + blobBytes} bytes)`,
  );
  t.true(longest < 2 * valueBytes, `the longest string JSON.stringify built was ${longest} characters`);
  s = await EmbeddedStore.open({ dir });
  const kvs = (await s.range("/big/")).kvs;
  t.is(kvs.length, count);
  for (const kv of kvs) t.is(kv.value, valueOf(Number(kv.key.slice("/big/".length))), kv.key);
  await s.put("/after", "ok");
  await s.close();
  await rm(dir, { recursive: true });
});

test("embedded: a snapshot in the first format (one JSON document) is still read, then replaced", async (t) => {
  const dir = await tmp();
  await mkdir(dir, { recursive: true });
  const kv = { key: "/old/a", value: "kept", createRevision: 3, modRevision: 7, version: 2 };
  await writeFile(join(dir, "snapshot.json"), JSON.stringify({ revision: 7, kvs: [kv], leases: [] }));
  let s = await EmbeddedStore.open({ dir, snapshotAfterBytes: 1024 });
  t.deepEqual(await s.get("/old/a"), kv);
  t.is(await s.currentRevision(), 7);
  for (let i = 0; i < 20; i++) await s.put(`/new/${i}`, "x".repeat(100));
  await s.close();
  await t.throwsAsync(stat(join(dir, "snapshot.json")), undefined, "the old snapshot is removed once a new one exists");
  s = await EmbeddedStore.open({ dir });
  t.is((await s.get("/old/a"))?.value, "kept");
  t.is((await s.range("/new/")).kvs.length, 20);
  await s.close();
  await rm(dir, { recursive: true });
});

test("embedded: a damaged snapshot stops the open with a message instead of losing keys", async (t) => {
  const dir = await tmp();
  let s = await EmbeddedStore.open({ dir, snapshotAfterBytes: 1024 });
  for (let i = 0; i < 40; i++) await s.put(`/d/${i}`, "y".repeat(100));
  await s.close();
  const path = join(dir, "snapshot.frames");
  const bytes = await readFile(path);
  bytes[bytes.length - 30]! ^= 0xff; // inside the last key's frame
  await writeFile(path, bytes);
  const err = await t.throwsAsync(EmbeddedStore.open({ dir }));
  t.regex(err!.message, /snapshot .* is damaged \(a checksum mismatch/);
  await rm(dir, { recursive: true });
});

test.serial(
  "embedded: large values live in blob files, not in memory, and read back after a snapshot and a reopen",
  async (t) => {
    const dir = await tmp();
    const valueBytes = 1024 * 1024;
    const count = 24;
    const valueOf = (i: number): string =>
      String.fromCharCode(97 + (i % 26)).repeat(valueBytes - 8) + String(i).padStart(8, "0");
    // Little history, so the blobs of deleted keys are no longer needed for watch replays after a snapshot.
    let s = await EmbeddedStore.open({ dir, snapshotAfterBytes: 8 * 1024 * 1024, historyRevisions: 4 });
    for (let i = 0; i < count; i++) await s.put(`/big/${i}`, valueOf(i));
    await s.put("/small", "kept in memory");
    t.true(
      s.valueCharsInMemory() < 1024,
      `values held in memory: ${s.valueCharsInMemory()} characters for ${count} MiB stored`,
    );
    t.is((await s.get("/big/3"))?.value, valueOf(3));
    const txn = await s.txn({
      compare: [{ key: "/big/5", target: "value", value: valueOf(5) }],
      success: [{ type: "get", key: "/big/5" }],
    });
    t.true(txn.succeeded, "a compare on a large value reads it");
    t.is(txn.responses[0]![0]!.value, valueOf(5));
    // A watch replaying from before the writes gets every value.
    const seen = new Map<string, string>();
    const w = s.watch(
      "/big/",
      (events) => {
        for (const e of events) seen.set(e.kv.key, e.kv.value);
      },
      { fromRevision: (await s.currentRevision()) - 3 },
    );
    await eventually("the replayed events", async () => seen.size === 3, 10_000, 20);
    w.close();
    t.is(seen.get(`/big/${count - 1}`), valueOf(count - 1));
    const held = (await s.get("/big/0"))!;
    for (let i = 0; i < count / 2; i++) await s.delete(`/big/${i}`);
    // Enough log to snapshot twice: the deleted keys' blob files go once no log, snapshot or watch event names them.
    for (let i = 0; i < 20; i++) await s.put(`/churn/${i % 2}`, valueOf(100 + i));
    const blobFiles = new Set(await readdir(join(dir, "blobs")));
    const fileOf = (i: number): string => createHash("sha256").update(valueOf(i)).digest("hex");
    t.deepEqual(
      Array.from({ length: count / 2 }, (_, i) => fileOf(i)).filter((f) => blobFiles.has(f)),
      [],
      "the deleted values' files are gone",
    );
    t.true(blobFiles.has(fileOf(count - 1)), "a live value's file stays");
    t.is(held.value, valueOf(0), "a value read before its key was deleted stays readable");
    await s.close();
    s = await EmbeddedStore.open({ dir });
    t.true(s.valueCharsInMemory() < 1024, "nor after a reopen");
    const kvs = (await s.range("/big/")).kvs;
    t.is(kvs.length, count / 2);
    for (const kv of kvs) t.is(kv.value, valueOf(Number(kv.key.slice("/big/".length))), kv.key);
    t.is((await s.get("/small"))?.value, "kept in memory");
    await s.close();
    await rm(dir, { recursive: true });
  },
);
