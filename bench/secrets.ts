/**
 * Secrets (issue 33): what they cost where they are paid for. (a) The agent-view push round
 * (AgentViewRound.text for every machine) of N units, without secrets and with K secrets visible to
 * each unit (granted to its application over a relation, tracked by every unit with a label): the
 * round runs on the controller's event loop, so what secrets add to it delays every other agent's
 * answer. (b) `secret.get` over the real agent protocol against a controller in its own process. (c) A
 * user's add-secret and update-secret through the REST client. Figures only, never asserted on.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newSecretId, readOperatorDir, routes } from "../api";
import type { SecretDoc } from "../controller";
import { AgentViewRound, EmbeddedStore, StateCache, StateOps, keys } from "../controller";
import { pgRelation, putRelation } from "../test/harness/state";
import { benchController, deploySimulated } from "./bench-controller";
import type { SimAgent } from "./sim-agent";
import type { BenchOptions } from "./util";
import { median, percentile, report } from "./util";

const DEFAULT_UNITS = Number(process.env.BENCH_UNITS ?? 10_000);
/** Secrets each unit sees in the with-secrets rounds. */
const SECRETS_PER_UNIT = 5;
const ROUNDS = 15;

export interface SecretsBenchOptions extends BenchOptions {
  /** `secret.get` calls and user add/update calls measured (default 1,000 and 200). */
  calls?: number;
  userCalls?: number;
}

/** `size`: units in the push-round figures (default 10,000, or BENCH_UNITS). */
export async function benchSecrets(o: SecretsBenchOptions = {}): Promise<void> {
  await benchPushRound(o.size ?? DEFAULT_UNITS);
  await benchSecretCalls(o.calls ?? 1000, o.userCalls ?? 200);
}

async function benchPushRound(units: number): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "steward-bench-secrets-"));
  const store = await EmbeddedStore.open({ dir });
  const cache = await StateCache.start(store, () => undefined);
  try {
    const ops = new StateOps(store);
    const { uuid } = await ops.models.create("admin", "m");
    const { bundle } = await readOperatorDir(join(__dirname, "..", "..", "operators", "motd"));
    const hash = (await ops.operators.upload(bundle, { quotaBytes: 1 << 30 })).doc.hash;
    await ops.applications.deploy(uuid, { name: "db", operator: hash, units: 1 });
    for (let done = 0; done < units; done += 1000)
      if (done === 0)
        await ops.applications.deploy(uuid, { name: "app", operator: hash, units: Math.min(1000, units) });
      else await ops.applications.addUnits(uuid, "app", Math.min(1000, units - done));
    await putRelation(store, uuid, 0, pgRelation("db", "app"));
    await cache.catchUp();
    const idx = cache.models.get(uuid)!;
    const machines = [...new Set([...idx.units.values()].map((u) => u.machine))];
    const addresses = ["10.0.0.1:17070", "10.0.0.2:17070", "10.0.0.3:17070"];

    const measure = (): { ms: number[]; bytes: number } => {
      const ms: number[] = [];
      let bytes = 0;
      for (let r = -2; r < ROUNDS; r++) {
        const t0 = performance.now();
        const round = new AgentViewRound(cache, addresses, 60);
        let n = 0;
        for (const m of machines) n += round.text(idx, m).length;
        if (r >= 0) ms.push(performance.now() - t0);
        bytes = n;
      }
      return { ms, bytes };
    };
    const without = measure();

    // K secrets owned by db, granted to app over relation 0, each read by every unit of app (with a label).
    const appUnits = [...idx.units.values()].filter((u) => u.app === "app").map((u) => u.name);
    let rev = 0;
    for (let k = 0; k < SECRETS_PER_UNIT; k++) {
      const id = newSecretId((n) => new Uint8Array(n).map(() => Math.floor(Math.random() * 256)));
      const at = "2026-01-01T00:00:00.000Z";
      const doc: SecretDoc = {
        id,
        owner: { kind: "application", app: "db" },
        label: `db-credentials-${k}`,
        rotate: "never",
        latest: 2,
        revisions: [
          { revision: 1, createdAt: at },
          { revision: 2, createdAt: at },
        ],
        grants: [{ app: "app", relationId: 0 }],
        consumers: Object.fromEntries(appUnits.map((u, i) => [u, { revision: i % 2 ? 2 : 1, label: `db-${k}` }])),
        createdAt: at,
        updatedAt: at,
      };
      rev = await store.put(keys.secret(uuid, id), JSON.stringify(doc));
    }
    await cache.waitForRevision(rev);
    const withSecrets = measure();
    const perView = (b: number) => b / machines.length;
    report(`agent-view push round, ${appUnits.length + 1} units on as many machines (${ROUNDS} rounds)`, {
      "without secrets: median (ms)": median(without.ms),
      "without secrets: p95 (ms)": percentile(without.ms, 95),
      [`with ${SECRETS_PER_UNIT} secrets per unit: median (ms)`]: median(withSecrets.ms),
      [`with ${SECRETS_PER_UNIT} secrets per unit: p95 (ms)`]: percentile(withSecrets.ms, 95),
      "bytes per round without / with": `${without.bytes} / ${withSecrets.bytes}`,
      "bytes per view without / with": `${perView(without.bytes).toFixed(0)} / ${perView(withSecrets.bytes).toFixed(0)}`,
    });
  } finally {
    cache.stop();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
}

async function benchSecretCalls(calls: number, userCalls: number): Promise<void> {
  const bc = await benchController("secrets");
  const agents: SimAgent[] = [];
  try {
    await deploySimulated(bc, "secrets", 1, agents);
    const agent = agents[0]!;
    const unit = (await agent.viewWhere((v) => v.units.length === 1)).units[0]!.name;
    const model = { model: "secrets" };
    const values = { password: "p".repeat(32), username: "steward" };
    const added = await bc.client.call(routes.addSecret, model, { name: "db-password", values });
    await bc.client.call(routes.grantSecret, { ...model, secret: "db-password" }, { apps: ["app"] });
    await agent.viewWhere((v) => (v.units[0]?.secrets ?? []).some((s) => s.uri === added.uri));

    const get: number[] = [];
    for (let i = -20; i < calls; i++) {
      const t0 = performance.now();
      await agent.call("secret.get", { unit, uri: added.uri, which: "latest" });
      if (i >= 0) get.push(performance.now() - t0);
    }

    const add: number[] = [];
    const update: number[] = [];
    for (let i = 0; i < userCalls; i++) {
      const name = `user-secret-${i}`;
      let t0 = performance.now();
      await bc.client.call(routes.addSecret, model, { name, values: { token: `t-${i}-1` } });
      add.push(performance.now() - t0);
      t0 = performance.now();
      await bc.client.call(routes.updateSecret, { ...model, secret: name }, { values: { token: `t-${i}-2` } });
      update.push(performance.now() - t0);
    }
    report(`secret calls against a controller in its own process (pid ${bc.pid})`, {
      [`secret.get (agent protocol), ${calls} calls: median (ms)`]: median(get),
      "secret.get: p95 (ms)": percentile(get, 95),
      [`add-secret (REST), ${userCalls} calls: median (ms)`]: median(add),
      "add-secret: p95 (ms)": percentile(add, 95),
      [`update-secret (REST), ${userCalls} calls: median (ms)`]: median(update),
      "update-secret: p95 (ms)": percentile(update, 95),
    });
  } finally {
    for (const a of agents) a.close();
    await bc.stop();
  }
}
