/**
 * Backups against each store: from a controller on a real etcd, read at one revision while writes go
 * on, superuser only, kept and downloaded in parts, then restored into a fresh controller whose
 * admin, models and sealed cloud credentials work; and the quota on kept backups (embedded store).
 */
import test from "ava";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ControllerClient, silentLogger } from "../api";
import type { BackupRecord } from "../controller";
import {
  Controller,
  CredentialOps,
  EmbeddedStore,
  EtcdStore,
  KeptBackups,
  Sealer,
  openBackup,
  parseSnapshot,
  readBackupHeader,
  restoreControllerDir,
  sealBackup,
} from "../controller";
import { haveEtcd, startEtcd } from "./harness/etcd";
import { startTestController } from "./harness/controller";

const PASS = "a passphrase of some length";

(haveEtcd ? test : test.skip)(
  "a backup of a controller on etcd is one revision's snapshot, and restores into a working controller",
  async (t) => {
    t.timeout(120_000);
    const etcd = await startEtcd();
    t.teardown(() => etcd.stop());
    const src = await startTestController({ store: { backend: "etcd", endpoints: [etcd.endpoint], prefix: "/bk" } });
    t.teardown(() => src.close());
    await src.admin.createModel("e");
    await src.admin.call("PUT", "/v1/credentials/cloud", {
      substrate: "aws",
      attributes: { "access-key-id": "AKIA1", "secret-access-key": "s3cret" },
    });
    await src.admin.createUser("bob", "bob-password-1");
    const bob = src.clientFor("bob", "bob-password-1");
    await t.throwsAsync(bob.call("POST", "/v1/backups", { passphrase: PASS }), { message: /superuser/ });
    await t.throwsAsync(src.admin.call("POST", "/v1/backups", { passphrase: "short" }), {
      message: /at least 8 characters/,
    });

    // Writes go on while the backup is read: it must hold one revision's state, nothing later.
    let writing = true;
    let writes = 0;
    const writer = (async () => {
      while (writing) {
        await src.admin.updateModel("e", { updateStatusInterval: 60 + (writes++ % 100) });
      }
    })();
    const made = await src.admin.call<{ record: BackupRecord }>("POST", "/v1/backups", { passphrase: PASS });
    writing = false;
    await writer;
    t.true(writes > 0);
    const list = await src.admin.call<{ backups: BackupRecord[] }>("GET", "/v1/backups");
    t.deepEqual(
      list.backups.map((b) => b.id),
      [made.record.id],
    );
    const parts: Buffer[] = [];
    for (let i = 0; i < made.record.chunks; i++)
      parts.push(
        Buffer.from(
          (await src.admin.call<{ data: string }>("GET", `/v1/backups/${made.record.id}?part=${i}`)).data,
          "base64",
        ),
      );
    const file = Buffer.concat(parts);
    t.is(file.length, made.record.bytes);
    const snap = parseSnapshot((await openBackup(file, PASS)).plain);
    t.is(snap.manifest.revision, made.record.revision);
    t.true(
      snap.kvs.every((kv) => kv.modRevision <= snap.manifest.revision),
      "nothing written after the backup's revision",
    );
    t.false(
      snap.kvs.some((kv) => kv.key.startsWith("/backups/") || kv.key.startsWith("/blobs/backups/")),
      "a backup holds no backups",
    );
    // Every key but the kept backups: what the store held at that revision, read whole now (nothing is written meanwhile but presence).
    const direct = await EtcdStore.connect({ endpoints: [etcd.endpoint], prefix: "/bk" });
    t.teardown(() => direct.close());
    const now = (await direct.range("/")).kvs.filter(
      (kv) =>
        kv.modRevision <= snap.manifest.revision &&
        !kv.key.startsWith("/backups/") &&
        !kv.key.startsWith("/blobs/backups/"),
    );
    const inBackup = new Set(snap.kvs.map((kv) => kv.key));
    t.deepEqual(
      now.filter((kv) => !inBackup.has(kv.key)).map((kv) => kv.key),
      [],
      "no key of the store is missed",
    );
    t.deepEqual(
      snap.manifest.models.map((m) => m.name),
      ["e"],
    );

    await t.throwsAsync(bob.call("GET", "/v1/backups"), { message: /superuser/ });
    await t.throwsAsync(bob.call("GET", `/v1/backups/${made.record.id}?part=0`), { message: /superuser/ });
    await t.throwsAsync(src.admin.call("GET", `/v1/backups/${made.record.id}?part=${made.record.chunks}`), {
      message: /has parts 0 to/,
    });
    await src.admin.call("DELETE", `/v1/backups/${made.record.id}`);
    t.deepEqual((await src.admin.call<{ backups: unknown[] }>("GET", "/v1/backups")).backups, []);
    t.deepEqual((await direct.range("/blobs/backups/")).kvs, [], "its chunks went with it");

    // Restored into a fresh controller: the same admin password, the model, the credential opens.
    const dir = await mkdtemp(join(tmpdir(), "steward-rs-"));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const res = await restoreControllerDir({
      dataDir: join(dir, "c"),
      file,
      passphrase: PASS,
      listen: { host: "127.0.0.1", port: 0 },
    });
    t.is(res.controller.uuid, snap.manifest.controller.uuid);
    await t.throwsAsync(
      restoreControllerDir({ dataDir: join(dir, "c"), file, passphrase: PASS, listen: { host: "127.0.0.1", port: 0 } }),
      { message: /holds a controller; restore over it only with --force/ },
    );
    const restored = await Controller.start({ dataDir: join(dir, "c"), log: silentLogger });
    const admin = new ControllerClient({
      addresses: restored.apiAddresses,
      caCert: src.caCert,
      user: "admin",
      password: src.adminPassword,
    });
    try {
      t.deepEqual(
        (await admin.call<{ name: string }[]>("GET", "/v1/models")).map((m) => m.name),
        ["e"],
      );
      t.deepEqual(
        (await admin.call<{ backups: unknown[] }>("GET", "/v1/backups")).backups,
        [],
        "kept backups are not restored",
      );
    } finally {
      admin.close();
      await restored.stop();
    }
    const store = await EmbeddedStore.open({ dir: join(dir, "c", "store") });
    try {
      t.deepEqual(await new CredentialOps(store, await Sealer.forDataDir(join(dir, "c"))).open("cloud", "aws"), {
        "access-key-id": "AKIA1",
        "secret-access-key": "s3cret",
      });
    } finally {
      await store.close();
    }
  },
);

test("kept backups: at most `keep`, oldest removed first; one over the byte quota is refused", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "steward-kb-"));
  const store = await EmbeddedStore.open({ dir });
  t.teardown(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  const kept = new KeptBackups(store, { keep: 2, quotaBytes: 3 * 1024 * 1024 });
  const rec = (id: string, bytes: number): Omit<BackupRecord, "chunks"> => ({
    id,
    createdAt: `2026-11-25T00:00:0${id.at(-1)}Z`,
    controller: { uuid: "u", name: "n" },
    revision: 1,
    bytes,
    keys: 1,
    models: 0,
    sha256: "",
  });
  const ids = ["20261125T000001Z-aaaaa1", "20261125T000002Z-aaaaa2", "20261125T000003Z-aaaaa3"];
  for (const id of ids) await kept.keep(rec(id, 600 * 1024), Buffer.alloc(600 * 1024, 7));
  t.deepEqual(
    (await kept.list()).map((b) => b.id),
    ids.slice(1),
  );
  t.is((await store.range(`/blobs/backups/${ids[0]}/`)).kvs.length, 0, "the oldest one's chunks went with it");
  t.deepEqual((await kept.part(ids[2]!, 1)).data, Buffer.alloc(600 * 1024 - 512 * 1024, 7));
  // Room is made by removing the oldest; a backup that alone is over the quota is refused.
  await kept.keep(rec("20261125T000004Z-aaaaa4", 2 * 1024 * 1024), Buffer.alloc(2 * 1024 * 1024));
  t.deepEqual(
    (await kept.list()).map((b) => b.id),
    [ids[2], "20261125T000004Z-aaaaa4"],
  );
  await t.throwsAsync(kept.keep(rec("20261125T000005Z-aaaaa5", 4 * 1024 * 1024), Buffer.alloc(4 * 1024 * 1024)), {
    message: /over the controller's backup quota/,
  });
  await t.throwsAsync(kept.part("../etc", 0), { message: /is not a backup id/ });
});

/** `file` with its header's scrypt parameters replaced (and the header length fixed up). */
function withKdf(file: Buffer, kdf: Record<string, unknown>): Buffer {
  const magic = "STEWARD-BACKUP\n".length;
  const len = file.readUInt32BE(magic);
  const header = JSON.parse(file.subarray(magic + 4, magic + 4 + len).toString("utf8")) as {
    kdf: Record<string, unknown>;
  };
  const bytes = Buffer.from(JSON.stringify({ ...header, kdf: { ...header.kdf, ...kdf } }));
  const l = Buffer.alloc(4);
  l.writeUInt32BE(bytes.length);
  return Buffer.concat([file.subarray(0, magic), l, bytes, file.subarray(magic + 4 + len)]);
}

test("a backup whose header asks for more scrypt work than Steward writes is refused before any key is derived", async (t) => {
  const file = await sealBackup(Buffer.from("archive"), PASS, {
    id: "20261127T000000Z-aaaaa1",
    controller: { uuid: "u", name: "n" },
    revision: 1,
    createdAt: "2026-11-27T00:00:00Z",
    stewardVersion: "0.1.0",
  });
  t.like(readBackupHeader(file).header.kdf, { name: "scrypt", N: 2 ** 17, r: 8, p: 1 }, "what Steward writes");
  // The audit's header: 128 × 2^20 × 32 B = 4 GiB, sixteen times over.
  const forged = withKdf(file, { N: 2 ** 20, r: 32, p: 16 });
  const err = t.throws(() => readBackupHeader(forged));
  t.is(
    err?.message,
    "the backup file's header asks for scrypt N=1048576, r=32, p=16 (4096 MiB of memory, 16× the work); Steward writes N=131072, r=8, p=1 and derives no key above that (the file was not made by Steward, or its header was altered)",
  );
  // Only once the header is known to be refused: without the cap this would try to derive with 4 GiB.
  if (err) await t.throwsAsync(openBackup(forged, PASS), { message: err.message });
  const refused: [Record<string, unknown>, RegExp][] = [
    [{ N: 2 ** 18 }, /N=262144, r=8, p=1 \(256 MiB/],
    [{ r: 9 }, /r=9/],
    [{ p: 2 }, /p=2 /],
    [{ N: "131072" }, /not whole numbers/],
    [{ N: 3 }, /not valid scrypt parameters/],
    [{ r: 0 }, /not valid scrypt parameters/],
    [{ salt: 7 }, /without a salt/],
  ];
  for (const [kdf, message] of refused)
    t.throws(() => readBackupHeader(withKdf(file, kdf)), { message }, JSON.stringify(kdf));
  t.is((await openBackup(file, PASS)).plain.toString(), "archive", "Steward's own backup still opens");
});
