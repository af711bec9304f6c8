/**
 * One-time enrolment tokens (controller/state/enrolment-ops.ts) on a real embedded store: a machine's
 * token is traded once for its agent's credential; a replica's token first marks its instance
 * staged, then hands over the data the leader left, once; neither kind works as the other; expired
 * tokens are refused and swept.
 */
import test from "ava";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StewardError } from "../api";
import { EmbeddedStore, EnrolmentOps, StateOps, credentialMatches, keys } from "../controller";

async function withStore(fn: (store: EmbeddedStore) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "steward-enrol-"));
  const store = await EmbeddedStore.open({ dir });
  try {
    await fn(store);
  } finally {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
}

test("a machine's token is traded once for a credential the machine then holds", async (t) => {
  await withStore(async (store) => {
    const ops = new StateOps(store);
    await ops.initController("t", "admin-password-1");
    const model = await ops.models.create("admin", "m", {}, "local");
    const [m] = (await ops.machines.add(model.uuid, "local", 1)).machines;
    const enrol = new EnrolmentOps(store);
    const token = await enrol.issue(model.uuid, m!.id);
    t.deepEqual(
      await enrol.check(token),
      { model: model.uuid, machine: m!.id, expiresAt: (await enrol.check(token)).expiresAt },
      "checking does not spend it",
    );
    const got = await enrol.redeem(token);
    t.is(got.machine, m!.id);
    const doc = JSON.parse((await store.get(keys.machine(model.uuid, m!.id)))!.value) as { credentialHash: string };
    t.true(credentialMatches(got.credential, doc.credentialHash), "the machine's credential is the one handed over");
    t.is(
      (await t.throwsAsync<StewardError>(enrol.redeem(token)))?.code,
      "unauthorized",
      "a spent token enrols nothing",
    );
    t.is((await t.throwsAsync<StewardError>(enrol.check(token)))?.code, "unauthorized");
    t.is((await store.range("/enrolments/")).kvs.length, 0, "only hashes were stored, and the spent one is gone");
  });
});

test("a replica's token: staged on first ask, its data collected once, and never good for an agent", async (t) => {
  await withStore(async (store) => {
    const enrol = new EnrolmentOps(store);
    const token = await enrol.issueReplica();
    t.false(await enrol.replicaStaged(token));
    t.is(await enrol.collectReplicaData(token), undefined, "nothing to collect before the leader leaves it");
    t.true(await enrol.replicaStaged(token), "asking marks the instance staged");
    await enrol.provideReplicaData(token, "v1.sealed-bytes");
    t.is(await enrol.collectReplicaData(token), "v1.sealed-bytes");
    t.is((await t.throwsAsync<StewardError>(enrol.collectReplicaData(token)))?.code, "unauthorized", "collected once");
    const other = await enrol.issueReplica();
    t.is(
      (await t.throwsAsync<StewardError>(enrol.redeem(other)))?.code,
      "unauthorized",
      "a replica token is not an agent's",
    );
  });
});

test("expired tokens are refused and swept; live ones stay", async (t) => {
  await withStore(async (store) => {
    let now = Date.now();
    const enrol = new EnrolmentOps(store, () => new Date(now));
    const old = await enrol.issue("m", "0", 1000);
    const fresh = await enrol.issue("m", "1", 60_000);
    now += 5000;
    t.is((await t.throwsAsync<StewardError>(enrol.check(old)))?.code, "unauthorized");
    t.is(await enrol.sweepExpired(), 1);
    t.is((await store.range("/enrolments/")).kvs.length, 1);
    t.is((await enrol.check(fresh)).machine, "1");
  });
});
