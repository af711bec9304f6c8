/**
 * Logins under floods, against real controllers (attackers each from a distinct 127.x.y.z on
 * loopback): bad agent credentials at a migration's target must not get a real agent's validation
 * told to come back.
 */
import test from "ava";
import { Agent } from "node:https";
import { randomUUID } from "node:crypto";
import type { TestController } from "./harness/controller";
import { startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { rawRequest } from "./harness/http";

const started: TestController[] = [];
test.after.always(async () => { await Promise.all(started.map((tc) => tc.close())); });

async function controller(opts: Parameters<typeof startTestController>[0] = {}): Promise<TestController> {
  const tc = await startTestController(opts);
  started.push(tc);
  return tc;
}

/** A keep-alive connection pool whose sockets leave from `localAddress` (any 127/8 address reaches the controller). */
const from = (localAddress: string): Agent => new Agent({ keepAlive: true, maxSockets: 1, localAddress });

/** Counts of answers by status. */
function tally(into: Map<number, number>, status: number): void { into.set(status, (into.get(status) ?? 0) + 1); }

test.serial("a flood of bad credentials at a migration's validate route does not get a real agent told to come back", async (t) => {
  // The source only makes a real export with a real agent credential; the target has a small
  // validation budget, which the flood would exhaust at once if it spent it.
  const [source, target] = await Promise.all([controller(), controller({ migrationValidations: { perSecond: 5, burst: 5 } })]);
  await source.admin.createModel("m");
  const [machine] = (await source.admin.addMachines("m", "manual", 1)).machines;
  const sourceToken = await source.admin.login();
  const exported = await rawRequest(source.addresses[0]!, source.caCert, "GET", "/v1/models/m/export", undefined, { authorization: `Bearer ${sourceToken}` });
  t.is(exported.status, 200);
  const model = (exported.body as unknown as { documents: { model: Record<string, { uuid: string }> } }).documents.model[""]!.uuid;
  const id = randomUUID();
  const targetToken = await target.admin.login();
  const staged = await rawRequest(target.addresses[0]!, target.caCert, "POST", `/v1/migrations/${id}/stage?source=${randomUUID()}`, JSON.stringify(exported.body), { authorization: `Bearer ${targetToken}` });
  t.is(staged.status, 201, JSON.stringify(staged.body));

  const validate = (agent: Agent, authorization: string) =>
    rawRequest(target.addresses[0]!, target.caCert, "POST", `/v1/migrations/${id}/validate`, JSON.stringify({ units: [] }), { authorization }, agent);
  const bad = [`Agent ${model}/${machine!.id}/wrong`, `Agent ${model}/99/secret`, "Agent x/0/secret", "Bearer forged.token"];
  let stop = false;
  const floodAnswers = new Map<number, number>();
  const attackers = Array.from({ length: 4 }, (_, i) => from(`127.40.${i}.1`));
  const flooder = async (i: number): Promise<void> => {
    for (let n = i; !stop; n++) tally(floodAnswers, (await validate(attackers[i]!, bad[n % bad.length]!).catch(() => ({ status: 0 }))).status);
  };
  const flood = attackers.map((_, i) => flooder(i));
  const agent = from("127.41.0.1");
  try {
    // Under way: some attacker has been told to come back (with the budget spent by any attempt, at once).
    await eventually("the flood under way", () => floodAnswers.has(429) && [...floodAnswers.values()].reduce((a, b) => a + b, 0) >= 100, 120_000, 20);
    const real: number[] = [];
    for (let i = 0; i < 5; i++) real.push((await validate(agent, `Agent ${model}/${machine!.id}/${machine!.credential!}`)).status);
    t.log("flood answers", Object.fromEntries(floodAnswers), "real", real.join(","));
    t.deepEqual(real, Array(5).fill(200), "the real agent's validation was answered every time");
  } finally {
    stop = true;
    await Promise.all(flood);
    for (const a of [agent, ...attackers]) a.destroy();
  }
  t.deepEqual([...floodAnswers.keys()].filter((s) => s !== 401 && s !== 429).sort(), [], "bad credentials get 401, or 429 once a source keeps sending them");
  t.true((floodAnswers.get(429) ?? 0) > 0, "a source that keeps failing is answered 429");
});
