/**
 * Operator quotas per model and per user, and the superusers' reserve of the controller's quota:
 * one writer filling their share (deploying with no units pins operators) blocks neither another
 * user's model nor an admin's upload or refresh. Sizes are in units of one test operator's stored size.
 */
import test from "ava";
import type { ExecutionContext } from "ava";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Bundle, ControllerClient, StewardError } from "../api";
import { readOperatorDir } from "../api";
import type { Txn } from "../controller";
import { EmbeddedStore, StateOps, keys } from "../controller";
import type { TestController } from "./harness/controller";
import { operatorsDir, startTestController } from "./harness/controller";

let tc: TestController;
let motd: Bundle;
/** Stored bytes of one operator made by {@link operator} (all the same size). */
let unit: number;
let alice: ControllerClient;
let bob: ControllerClient;
/** alice's first operator, uploaded again later. */
let first: Bundle;

/** motd with 200 KiB of random content: every call a different operator of the same size. */
const operator = (): Bundle => ({
  files: [...motd.files, { path: "payload.bin", mode: 0o644, content: randomBytes(200 * 1024).toString("base64") }],
});

test.before(async () => {
  motd = (await readOperatorDir(join(operatorsDir, "motd"))).bundle;
  unit = Buffer.byteLength(JSON.stringify(operator()));
  // Users may fill 7 of the controller's 10 units; a model holds 2.5 and a user's uploads 4.5.
  tc = await startTestController({
    operators: {
      quotaBytes: 10 * unit,
      reservedBytes: 3 * unit,
      modelQuotaBytes: Math.floor(2.5 * unit),
      userQuotaBytes: Math.floor(4.5 * unit),
    },
  });
  // Manual models: only superusers may write to local ones.
  for (const m of ["a1", "a2", "b"]) await tc.admin.createModel(m, undefined, "manual");
  await tc.admin.createUser("alice", "alice-password", false);
  await tc.admin.createUser("bob", "bob-password", false);
  await tc.admin.grant("a1", "alice", "write");
  await tc.admin.grant("a2", "alice", "write");
  await tc.admin.grant("b", "bob", "write");
  alice = tc.clientFor("alice", "alice-password");
  bob = tc.clientFor("bob", "bob-password");
});
test.after.always(async () => {
  await tc?.close();
});

const refusal = async (t: ExecutionContext, p: Promise<unknown>, quota: string): Promise<StewardError> => {
  const err = await t.throwsAsync<StewardError>(p);
  t.is(err?.code, "quota-exceeded");
  t.is(err?.httpStatus, 413);
  t.is(err?.details.quota, quota);
  t.is(err?.reason, "operator-quota");
  return err!;
};

test.serial(
  "a writer filling their model's quota is refused naming it; another user's model and the admin are unaffected",
  async (t) => {
    first = operator();
    const a = (await alice.uploadOperator(first)).hash;
    // Two applications of one operator count it once.
    await alice.deploy("a1", { name: "x1", operator: a, units: 0 });
    await alice.deploy("a1", { name: "x2", operator: a, units: 0 });
    const b = (await alice.uploadOperator(operator())).hash;
    await alice.deploy("a1", { name: "y", operator: b, units: 0 });
    const c = (await alice.uploadOperator(operator())).hash;

    const full = await refusal(
      t,
      alice.deploy("a1", { name: "z", operator: c, units: 0 }),
      "operators.modelQuotaBytes",
    );
    t.regex(
      full.message,
      new RegExp(
        `model a1 uses ${2 * unit} bytes of operators \\(each counted once however many applications use it\\); this one \\(${unit} bytes\\) would take it to ${3 * unit} bytes, over the model operator quota of ${Math.floor(2.5 * unit)} bytes`,
      ),
    );
    t.regex(
      full.message,
      /remove applications this model no longer needs, or ask a controller superuser to raise operators\.modelQuotaBytes in controller\.json/,
    );
    t.is(full.details.usedBytes, 2 * unit);
    // A refresh that would grow the model is refused too; one that swaps an operator for one of its size is not.
    await refusal(t, alice.updateApplication("a1", "x1", { operator: c }), "operators.modelQuotaBytes");
    await alice.updateApplication("a1", "y", { operator: c });
    // The same operator fits alice's other model.
    await alice.deploy("a2", { name: "z", operator: c, units: 0 });

    // Bob's model is his own: alice's full one changes nothing for him.
    const f = (await bob.uploadOperator(operator())).hash;
    await bob.deploy("b", { name: "f", operator: f, units: 0 });

    // The admin deploys into alice's full model and refreshes there.
    const h = (await tc.admin.uploadOperator(operator())).hash;
    await tc.admin.deploy("a1", { name: "admins", operator: h, units: 0 });
    const h2 = (await tc.admin.uploadOperator(operator())).hash;
    await tc.admin.updateApplication("a1", "x1", { operator: h2 });
  },
);

test.serial(
  "a user's uploads are limited across models, and the last of the controller's quota is kept for superusers",
  async (t) => {
    // alice has uploaded 3 operators (a, b, c): a fourth fits her 4.5, a fifth does not.
    await alice.uploadOperator(operator());
    const mine = await refusal(t, alice.uploadOperator(operator()), "operators.userQuotaBytes");
    t.regex(
      mine.message,
      new RegExp(
        `the operators user alice uploaded take ${4 * unit} bytes; this one \\(${unit} bytes\\) would go over the user operator quota of ${Math.floor(4.5 * unit)} bytes`,
      ),
    );
    t.regex(
      mine.message,
      /operators no application uses are deleted 1 h after their upload or last use\), or ask a controller superuser to raise operators\.userQuotaBytes/,
    );
    t.is(mine.details.user, "alice");
    // What she stored already is counted once: uploading it again at her quota is no new use.
    t.false((await alice.uploadOperator(first)).created);

    // Stored now: alice 4, bob 1, admin 2 = 7 units, all that is open to users who are not superusers.
    const open = await refusal(t, bob.uploadOperator(operator()), "operators.reservedBytes");
    t.regex(
      open.message,
      new RegExp(
        `the operators stored on this controller take ${7 * unit} bytes; this one \\(${unit} bytes\\) would go over the ${7 * unit} bytes open to users who are not superusers`,
      ),
    );
    t.regex(open.message, /kept for superusers/);
    // The admin still uploads into the reserve, up to the controller's quota.
    t.true((await tc.admin.uploadOperator(operator())).created);
    await tc.admin.updateApplication("b", "f", { operator: (await tc.admin.uploadOperator(operator())).hash });
    t.true((await tc.admin.uploadOperator(operator())).created);
    const whole = await refusal(t, tc.admin.uploadOperator(operator()), "operators.quotaBytes");
    t.regex(whole.message, new RegExp(`over the operator quota of ${10 * unit} bytes`));
  },
);

/** `store` with its transactions held, once {@link Gate.hold} is called, until `n` have arrived: a race made certain. */
interface Gate {
  store: EmbeddedStore;
  hold(n: number): void;
  readonly open: boolean;
}
function gate(store: EmbeddedStore): Gate {
  let held: { n: number; waiting: (() => void)[] } | undefined;
  const gated = new Proxy(store, {
    get(target, prop) {
      if (prop === "txn") {
        return async (txn: Txn) => {
          const h = held;
          if (h)
            await new Promise<void>((release) => {
              h.waiting.push(release);
              if (h.waiting.length === h.n) {
                held = undefined;
                for (const r of h.waiting) r();
              }
            });
          return target.txn(txn);
        };
      }
      const v = Reflect.get(target, prop) as unknown;
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return {
    store: gated,
    hold: (n) => {
      held = { n, waiting: [] };
    },
    get open() {
      return held === undefined;
    },
  };
}

async function gatedStore(t: ExecutionContext): Promise<Gate> {
  const dir = await mkdtemp(join(tmpdir(), "steward-quotas-"));
  const store = await EmbeddedStore.open({ dir });
  t.teardown(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  return gate(store);
}

test("refreshes checked at once cannot together take a model over its quota", async (t) => {
  const g = await gatedStore(t);
  const ops = new StateOps(g.store);
  const model = await ops.models.create("admin", "race");
  const hashes: string[] = [];
  for (let i = 0; i < 4; i++) hashes.push((await ops.operators.upload(operator(), { quotaBytes: 1 << 30 })).doc.hash);
  const charge = {
    by: { user: "carol", superuser: false },
    quotas: { quotaBytes: 1 << 30, modelQuotaBytes: Math.floor(2.5 * unit) },
  };
  for (let i = 0; i < 4; i++)
    await ops.applications.deploy(model.uuid, { name: `app${i}`, operator: hashes[0]!, units: 0 }, charge);
  // Each refresh alone fits (a second operator beside the first); all three together would not.
  g.hold(3);
  const results = await Promise.allSettled(
    [1, 2, 3].map((i) => ops.applications.update(model.uuid, `app${i}`, { operator: hashes[i]! }, charge)),
  );
  t.true(g.open, "all three reached their transaction together");
  t.is(results.filter((r) => r.status === "fulfilled").length, 1, "one more operator fits the model");
  for (const r of results)
    if (r.status === "rejected") t.is((r.reason as StewardError).details.quota, "operators.modelQuotaBytes");
});

test("uploads checked at once (as on two replicas) cannot together take a user over their quota", async (t) => {
  const g = await gatedStore(t);
  const ops = new StateOps(g.store);
  const quotas = { quotaBytes: 1 << 30, userQuotaBytes: Math.floor(1.5 * unit) };
  const carol = { user: "carol", superuser: false };
  g.hold(2);
  const results = await Promise.allSettled([operator(), operator()].map((b) => ops.operators.upload(b, quotas, carol)));
  t.true(g.open, "both reached their transaction together");
  t.is(results.filter((r) => r.status === "fulfilled").length, 1, "one operator fits carol's quota");
  const refused = results.find((r) => r.status === "rejected");
  t.is((refused?.reason as StewardError | undefined)?.details.quota, "operators.userQuotaBytes");
  const kept = results.flatMap((r) => (r.status === "fulfilled" ? [r.value.doc.hash] : []))[0]!;
  t.deepEqual((await g.store.range(keys.operatorUploads)).kvs, [], "no upload is left unfinished");
  t.true(
    (await g.store.range("/blobs/operators/")).kvs.every((kv) => kv.key.startsWith(keys.operatorChunks(kept))),
    "the refused upload's chunks are deleted at once",
  );
});
