/**
 * Logins under floods, against real controllers: wrong passwords from many source addresses (each
 * a distinct 127.x.y.z on loopback, so the controller sees many /24s) must not turn real users
 * away, nor lock an owner out from where she logs in; bad agent credentials at a migration's
 * target must not get a real agent's validation told to come back.
 */
import test from "ava";
import { Agent } from "node:https";
import { randomUUID } from "node:crypto";
import { addressPrefix } from "../controller";
import type { TestController } from "./harness/controller";
import { startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { rawRequest } from "./harness/http";

const started: TestController[] = [];
test.after.always(async () => {
  await Promise.all(started.map((tc) => tc.close()));
});

async function controller(opts: Parameters<typeof startTestController>[0] = {}): Promise<TestController> {
  const tc = await startTestController(opts);
  started.push(tc);
  return tc;
}

/** A keep-alive connection pool whose sockets leave from `localAddress` (any 127/8 address reaches the controller). */
const from = (localAddress: string): Agent => new Agent({ keepAlive: true, maxSockets: 1, localAddress });

function login(tc: TestController, agent: Agent, user: string, password: string, headers: Record<string, string> = {}) {
  return rawRequest(
    tc.addresses[0]!,
    tc.caCert,
    "POST",
    "/v1/login",
    JSON.stringify({ user, password }),
    headers,
    agent,
  );
}

test("login limits group addresses by IPv4 /24 and IPv6 /64", (t) => {
  t.is(addressPrefix("203.0.113.77"), "203.0.113.0/24");
  t.is(addressPrefix("::ffff:203.0.113.77"), "203.0.113.0/24", "an IPv4 client of a dual-stack listener");
  t.is(addressPrefix("::ffff:cb00:714d"), "203.0.113.0/24", "the same, in hex");
  t.is(addressPrefix("2001:db8:1:2:aaaa:bbbb:cccc:dddd"), "2001:db8:1:2::/64");
  t.is(
    addressPrefix("2001:0db8:0001:0002::1"),
    "2001:db8:1:2::/64",
    "leading zeros and :: do not make another network",
  );
  t.is(addressPrefix("2001:db8::1"), "2001:db8:0:0::/64");
  t.is(addressPrefix("fe80::1%eth0"), "fe80:0:0:0::/64");
  t.is(addressPrefix("::1"), "0:0:0:0::/64");
  t.is(addressPrefix("64:ff9b::192.0.2.1"), "64:ff9b:0:0::/64");
  t.is(addressPrefix("not-an-address"), "not-an-address");
});

/** Counts of answers by status. */
function tally(into: Map<number, number>, status: number): void {
  into.set(status, (into.get(status) ?? 0) + 1);
}

test.serial("real users keep logging in while wrong passwords pour in from 64 /24s", async (t) => {
  t.timeout(300_000); // the flood shares this process, and the machine, with the controller
  const tc = await controller();
  await tc.admin.createUser("alice", "alice-password", false);
  await tc.admin.createUser("bob", "bob-password", false);
  await tc.admin.createUser("dave", "dave-password", false);
  // Alice has logged in from her address before; Bob holds a valid token but comes from a new
  // address; Dave has never logged in (each attempt below from a network new to him).
  const alice = from("127.10.0.5");
  t.is((await login(tc, alice, "alice", "alice-password")).status, 200);
  const bobToken = (await login(tc, from("127.11.0.5"), "bob", "bob-password")).body.token as string;
  const bob = from("127.12.0.5");

  // 64 attackers, each from its own /24, each keeping one wrong guess in flight: user names that do
  // not exist (each new, so no per-user count stops them) and the real admin's.
  let stop = false;
  const floodAnswers = new Map<number, number>();
  const attackers = Array.from({ length: 64 }, (_, i) => from(`127.20.${i}.1`));
  const flooder = async (i: number): Promise<void> => {
    for (let n = 0; !stop; n++) {
      const user = n % 4 === 3 ? "admin" : `nobody-${i}-${n}`;
      const r = await login(tc, attackers[i]!, user, `guess-${n}`).catch(() => ({ status: 0 }));
      tally(floodAnswers, r.status);
      // Refused for a while: the attacker comes back a little later, as it was told.
      if (r.status === 429) await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const flood = attackers.map((_, i) => flooder(i));
  try {
    await eventually(
      "the flood under way",
      () => [...floodAnswers.values()].reduce((a, b) => a + b, 0) >= 64,
      120_000,
      20,
    );
    const aliceAnswers: number[] = [];
    const bobAnswers: number[] = [];
    const daveAnswers: number[] = [];
    for (let i = 0; i < 6; i++) {
      aliceAnswers.push((await login(tc, alice, "alice", "alice-password")).status);
      bobAnswers.push((await login(tc, bob, "bob", "bob-password", { authorization: `Bearer ${bobToken}` })).status);
      const dave = from(`127.13.${i}.5`);
      daveAnswers.push((await login(tc, dave, "dave", "dave-password")).status);
      dave.destroy();
    }
    t.log(
      "flood answers",
      Object.fromEntries(floodAnswers),
      "alice",
      aliceAnswers.join(","),
      "bob",
      bobAnswers.join(","),
      "dave",
      daveAnswers.join(","),
    );
    t.deepEqual(aliceAnswers, Array(6).fill(200), "alice, from an address she logged in from, got in every time");
    t.deepEqual(bobAnswers, Array(6).fill(200), "bob, holding a valid token, got in every time");
    // Guesses at made-up names hold only a few of the checks, so they do not fill the queue either.
    t.deepEqual(daveAnswers, Array(6).fill(200), "dave, new everywhere, got in every time");
  } finally {
    stop = true;
    await Promise.all(flood);
    for (const a of [alice, bob, ...attackers]) a.destroy();
  }
  t.deepEqual(
    [...floodAnswers.keys()].filter((s) => s !== 401 && s !== 429).sort(),
    [],
    "wrong guesses get 401 or 429, nothing else",
  );
  t.true((floodAnswers.get(401) ?? 0) > 0);
});

test.serial(
  "wrong guesses for a user from one address lock that address out, not the user where she logs in",
  async (t) => {
    const tc = await controller();
    await tc.admin.createUser("carol", "carol-password", false);
    const carol = from("127.30.0.1");
    const attacker = from("127.31.0.1");
    const elsewhere = from("127.32.0.1");
    try {
      t.is((await login(tc, carol, "carol", "carol-password")).status, 200);
      const guesses: number[] = [];
      for (let i = 0; i < 25; i++) guesses.push((await login(tc, attacker, "carol", `guess-${i}`)).status);
      t.is(guesses[0], 401);
      t.is(guesses.at(-1), 429, `the attacker is stopped: ${guesses.join(",")}`);
      // Even the right password from the attacker's /24 is refused now.
      const attackerWithPassword = await login(tc, from("127.31.0.2"), "carol", "carol-password");
      t.is(attackerWithPassword.status, 429);
      t.regex(attackerWithPassword.body.message ?? "", /try again in \d+ s/);
      // Carol, where she logged in before, still gets in.
      const back = await login(tc, carol, "carol", "carol-password");
      t.is(back.status, 200, JSON.stringify(back.body));
      // From an address she never used, the account's ceiling (against guessing from many places) holds.
      const away = await login(tc, elsewhere, "carol", "carol-password");
      t.is(away.status, 429, JSON.stringify(away.body));
      t.regex(away.body.message ?? "", /log in from an address you used before|try again in \d+ s/);
    } finally {
      for (const a of [carol, attacker, elsewhere]) a.destroy();
    }
  },
);

test.serial(
  "a flood of bad credentials at a migration's validate route does not get a real agent told to come back",
  async (t) => {
    // The source only makes a real export with a real agent credential; the target has a small
    // validation budget, which the flood would exhaust at once if it spent it.
    const [source, target] = await Promise.all([
      controller(),
      controller({ migrationValidations: { perSecond: 5, burst: 5 } }),
    ]);
    await source.admin.createModel("m");
    const [machine] = (await source.admin.addMachines("m", "manual", 1)).machines;
    const sourceToken = await source.admin.login();
    const exported = await rawRequest(source.addresses[0]!, source.caCert, "GET", "/v1/models/m/export", undefined, {
      authorization: `Bearer ${sourceToken}`,
    });
    t.is(exported.status, 200);
    const model = (exported.body as unknown as { documents: { model: Record<string, { uuid: string }> } }).documents
      .model[""]!.uuid;
    const id = randomUUID();
    const targetToken = await target.admin.login();
    const staged = await rawRequest(
      target.addresses[0]!,
      target.caCert,
      "POST",
      `/v1/migrations/${id}/stage?source=${randomUUID()}`,
      JSON.stringify(exported.body),
      { authorization: `Bearer ${targetToken}` },
    );
    t.is(staged.status, 201, JSON.stringify(staged.body));

    const validate = (agent: Agent, authorization: string) =>
      rawRequest(
        target.addresses[0]!,
        target.caCert,
        "POST",
        `/v1/migrations/${id}/validate`,
        JSON.stringify({ units: [] }),
        { authorization },
        agent,
      );
    const bad = [
      `Agent ${model}/${machine!.id}/wrong`,
      `Agent ${model}/99/secret`,
      "Agent x/0/secret",
      "Bearer forged.token",
    ];
    let stop = false;
    const floodAnswers = new Map<number, number>();
    const attackers = Array.from({ length: 4 }, (_, i) => from(`127.40.${i}.1`));
    const flooder = async (i: number): Promise<void> => {
      for (let n = i; !stop; n++)
        tally(floodAnswers, (await validate(attackers[i]!, bad[n % bad.length]!).catch(() => ({ status: 0 }))).status);
    };
    const flood = attackers.map((_, i) => flooder(i));
    const agent = from("127.41.0.1");
    try {
      // Under way: some attacker has been told to come back (with the budget spent by any attempt, at once).
      await eventually(
        "the flood under way",
        () => floodAnswers.has(429) && [...floodAnswers.values()].reduce((a, b) => a + b, 0) >= 100,
        120_000,
        20,
      );
      const real: number[] = [];
      for (let i = 0; i < 5; i++)
        real.push((await validate(agent, `Agent ${model}/${machine!.id}/${machine!.credential!}`)).status);
      t.log("flood answers", Object.fromEntries(floodAnswers), "real", real.join(","));
      t.deepEqual(real, Array(5).fill(200), "the real agent's validation was answered every time");
    } finally {
      stop = true;
      await Promise.all(flood);
      for (const a of [agent, ...attackers]) a.destroy();
    }
    t.deepEqual(
      [...floodAnswers.keys()].filter((s) => s !== 401 && s !== 429).sort(),
      [],
      "bad credentials get 401, or 429 once a source keeps sending them",
    );
    t.true((floodAnswers.get(429) ?? 0) > 0, "a source that keeps failing is answered 429");
  },
);
