/**
 * Users, passwords and tokens against a real controller: logins limited per user and per source network,
 * the same answer for unknown users and wrong passwords, only canonical tokens, logout, password
 * changes and revoked access (each ending the tokens or watches it should), and short-lived tokens.
 */
import test from "ava";
import { Agent } from "node:https";
import type { ModelStatus, StewardError } from "../api";
import { ControllerClient } from "../api";
import { signToken, verifyToken } from "../controller";
import type { TestController } from "./harness/controller";
import { startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { rawRequest } from "./harness/http";

let tc: TestController;
let adminToken: string;
test.before(async () => {
  // Limits high enough for the tests that fail logins on purpose, low enough to reach in one.
  tc = await startTestController({ failedLogins: { perUser: 3, perSource: 1000 } });
  adminToken = await tc.admin.login();
  await tc.admin.createModel("m");
});
test.after.always(async () => {
  await tc?.close();
});

const login = (user: string, password: string) =>
  rawRequest(tc.addresses[0]!, tc.caCert, "POST", "/v1/login", JSON.stringify({ user, password }));
const withToken = (token: string, method = "GET", path = "/v1/models") =>
  rawRequest(tc.addresses[0]!, tc.caCert, method, path, undefined, { authorization: `Bearer ${token}` });

/** Creates a user with read access to model m and returns a client logged in as them. */
async function reader(name: string): Promise<ControllerClient> {
  await tc.admin.createUser(name, `${name}-password`, false);
  await tc.admin.grant("m", name, "read");
  return tc.clientFor(name, `${name}-password`);
}

/**
 * Opens a status watch with `token` alone (a client with a password would log in again and carry
 * on); `ended` resolves with the error that ends it.
 */
function watchUntilClosed(token: string): { opened: Promise<void>; ended: Promise<StewardError> } {
  const client = new ControllerClient({ addresses: tc.addresses, caCert: tc.caCert, token });
  let opened!: () => void;
  const first = new Promise<void>((resolve) => {
    opened = resolve;
  });
  const abort = new AbortController();
  const ended = client
    .watchStatus("m", (_s: ModelStatus) => opened(), abort.signal)
    .then(
      () => {
        throw new Error("the watch ended without an error");
      },
      (err: StewardError) => err,
    )
    .finally(() => client.close());
  return { opened: first, ended };
}

test("an unknown user and a wrong password get the same 401", async (t) => {
  const unknown = await login("nobody-here", "whatever");
  const wrong = await login("admin", "not-the-password");
  t.is(unknown.status, 401);
  t.is(wrong.status, 401);
  t.deepEqual(unknown.body, wrong.body);
  t.is(unknown.body.code, "unauthorized");
});

test("after repeated failures a user gets 429 with Retry-After, even with the right password; others still log in", async (t) => {
  await tc.admin.createUser("target", "target-password", false);
  for (let i = 0; i < 3; i++) t.is((await login("target", "guess-" + i)).status, 401);
  const locked = await login("target", "target-password");
  t.is(locked.status, 429);
  t.is(locked.body.code, "rate-limited");
  t.regex(locked.body.message!, /too many failed logins .* try again in \d+ s/);
  t.true(Number(locked.headers["retry-after"]) >= 1, `Retry-After: ${String(locked.headers["retry-after"])}`);
  // Unknown users are limited the same way (no difference to probe).
  for (let i = 0; i < 3; i++) t.is((await login("ghost", "guess")).status, 401);
  t.is((await login("ghost", "guess")).status, 429);
  // Another user, from the same address, is not locked out.
  const other = await login("admin", tc.adminPassword);
  t.is(other.status, 200, JSON.stringify(other.body));
});

// Serial (run before the others): the flood also makes other logins wait or be refused for load.
test.serial(
  "a legitimate write completes while an attacker floods logins, without queueing behind the guesses",
  async (t) => {
    const total = 100;
    // Guesses at users that exist (two each, under the per-user limit): guesses at made-up names are
    // answered without the work once a few are being checked, so they would not hold the pool at all.
    await Promise.all(
      Array.from({ length: 50 }, (_, i) => tc.admin.createUser(`flood-${i}`, `flood-password-${i}`, false)),
    );
    // Connections opened first, so every guess reaches the controller at once, before the write.
    const agent = new Agent({ keepAlive: true, maxSockets: total });
    const address = tc.addresses[0]!;
    await Promise.all(
      Array.from({ length: total }, () => rawRequest(address, tc.caCert, "GET", "/v1/health", undefined, {}, agent)),
    );
    let answered = 0;
    let refused = 0;
    const attackers = Array.from({ length: total }, (_, i) =>
      rawRequest(
        address,
        tc.caCert,
        "POST",
        "/v1/login",
        JSON.stringify({ user: `flood-${i % 50}`, password: `guess-${i}` }),
        {},
        agent,
      ).then((r) => {
        answered++;
        if (r.status === 401) refused++;
        return r;
      }),
    );
    try {
      // The guesses are being checked once the first has been turned down.
      await eventually("the first guess checked", () => refused > 0, 60_000, 5);
      const write = await tc.admin.createModel("during-flood");
      const pendingAtWrite = total - answered;
      t.is(write.name, "during-flood");
      const answers = await Promise.all(attackers);
      // Each guess is refused: wrong password, or told to wait when too many are being checked at once.
      t.true(
        answers.every((a) => a.status === 401 || a.status === 429),
        JSON.stringify([...new Set(answers.map((a) => a.status))]),
      );
      // Password checks hold only part of the thread pool, so the write did not wait for the guesses
      // that arrived before it (unbounded, it finishes after nearly all of them).
      t.true(pendingAtWrite >= 10, `${pendingAtWrite} guesses were still being checked when the write completed`);
    } finally {
      agent.destroy();
    }
  },
);

test("a token with trailing bytes, or re-encoded, is refused", async (t) => {
  t.is((await withToken(adminToken)).status, 200);
  for (const bad of [`${adminToken}x`, `${adminToken} junk`, `${adminToken}=`, `${adminToken}.x`, ` ${adminToken}`]) {
    const r = await withToken(bad);
    t.is(r.status, 401, bad);
    t.is(r.body.code, "unauthorized");
  }
});

test("a token that claims more than the maximum lifetime is refused even with a valid signature", (t) => {
  const key = "k".repeat(43);
  const now = Date.now();
  const ok = signToken({ user: "admin", id: "a", issuedAt: now, expiresAt: now + 3600_000 }, key);
  t.is(verifyToken(ok, key, now)?.user, "admin");
  const until2100 = signToken(
    { user: "admin", id: "b", issuedAt: now, expiresAt: Date.parse("2100-01-01T00:00:00Z") },
    key,
  );
  t.is(verifyToken(until2100, key, now), undefined);
  const backdated = signToken(
    { user: "admin", id: "c", issuedAt: now - 48 * 3600_000, expiresAt: now + 3600_000 },
    key,
  );
  t.is(verifyToken(backdated, key, now), undefined);
});

test("logout revokes the token presented, not the user's other tokens, and closes its watches", async (t) => {
  const alice = await reader("alice");
  const other = await (await reader("alice2")).login(); // unrelated user, unaffected
  const second = tc.clientFor("alice", "alice-password");
  const secondToken = await second.login();
  const firstToken = await alice.login();
  const watch = watchUntilClosed(firstToken);
  await watch.opened;
  await alice.logout();
  const r = await withToken(firstToken);
  t.is(r.status, 401);
  t.regex(r.body.message!, /revoked/);
  t.is((await withToken(secondToken)).status, 200);
  t.is((await withToken(other)).status, 200);
  const err = await watch.ended;
  t.is(err.code, "unauthorized");
  t.regex(err.message, /revoked/);
});

test("changing your own password needs the current one and ends your existing tokens", async (t) => {
  const bob = await reader("bob");
  const oldToken = await bob.login();
  const watch = watchUntilClosed(oldToken);
  await watch.opened;
  const wrong = await t.throwsAsync<StewardError>(bob.changePassword("bob", "bob-new-password", "not-it"));
  t.is(wrong?.code, "forbidden");
  const missing = await t.throwsAsync<StewardError>(bob.changePassword("bob", "bob-new-password"));
  t.is(missing?.code, "invalid-request");
  t.is((await withToken(oldToken)).status, 200, "a refused change ends nothing");
  await bob.changePassword("bob", "bob-new-password", "bob-password");
  t.is((await withToken(oldToken)).status, 401);
  t.is((await login("bob", "bob-password")).status, 401);
  t.is((await login("bob", "bob-new-password")).status, 200);
  t.is((await watch.ended).code, "unauthorized");
});

test("a superuser resets another user's password; other users may not", async (t) => {
  const carol = await reader("carol");
  const dave = await reader("dave");
  const carolToken = await carol.login();
  const refused = await t.throwsAsync<StewardError>(dave.changePassword("carol", "dave-chose-this"));
  t.is(refused?.code, "forbidden");
  await tc.admin.changePassword("carol", "carol-new-password");
  t.is((await withToken(carolToken)).status, 401);
  t.is((await login("carol", "carol-new-password")).status, 200);
  const ghost = await t.throwsAsync<StewardError>(tc.admin.changePassword("no-such-user", "whatever-password"));
  t.is(ghost?.code, "not-found");
});

test("revoke takes away a user's access to a model and closes their watches of it", async (t) => {
  const erin = await reader("erin");
  t.truthy(await erin.status("m"));
  const watch = watchUntilClosed(await erin.login());
  await watch.opened;
  const notAdmin = await t.throwsAsync<StewardError>(erin.revoke("m", "erin"));
  t.is(notAdmin?.code, "forbidden");
  await tc.admin.revoke("m", "erin");
  const err = await t.throwsAsync<StewardError>(erin.status("m"));
  t.is(err?.code, "not-found", "without access the model is answered as unknown");
  const closed = await watch.ended;
  t.is(closed.code, "forbidden");
  t.regex(closed.message, /access to model m was revoked/);
  const again = await t.throwsAsync<StewardError>(tc.admin.revoke("m", "erin"));
  t.is(again?.code, "not-found");
  t.regex(again!.message, /has no access/);
});

test("a short-lived token stops working, and its watch is closed, when it expires; a client with a password carries on", async (t) => {
  const short = await startTestController({ tokenLifetimeSeconds: 2 });
  try {
    await short.admin.createModel("m");
    const token = await short.admin.login();
    // A client holding only the token: its watch ends with the token.
    const tokenOnly = new ControllerClient({ addresses: short.addresses, caCert: short.caCert, token });
    const abort = new AbortController();
    const err = await tokenOnly
      .watchStatus("m", () => undefined, abort.signal)
      .then(
        () => undefined,
        (e: StewardError) => e,
      );
    tokenOnly.close();
    t.is(err?.code, "unauthorized");
    t.regex(err!.message, /expired/);
    const r = await rawRequest(short.addresses[0]!, short.caCert, "GET", "/v1/models", undefined, {
      authorization: `Bearer ${token}`,
    });
    t.is(r.status, 401);

    // A client with a password logs in again when its watch's token ends, and keeps receiving status.
    const withPassword = short.clientFor("admin", short.adminPassword);
    const keepOn = new AbortController();
    let latest = 0;
    const watching = withPassword.watchStatus(
      "m",
      (s) => {
        latest = s.model.revision;
      },
      keepOn.signal,
    );
    await new Promise((resolve) => setTimeout(resolve, 3000)); // past the first token's life
    await short.admin.updateModel("m", { updateStatusInterval: 77 });
    const changed = (await short.admin.status("m")).model.revision;
    await eventually("the change seen through the renewed watch", () => latest >= changed, 10_000, 50);
    keepOn.abort();
    await watching;
    t.true(latest >= changed, "the renewed watch delivered the change");
  } finally {
    await short.close();
  }
});

test("a debug-log stream ends when its token is revoked, and when the user's access is", async (t) => {
  const dora = await reader("dora");
  const token = await dora.login();
  const follow = (tok: string): Promise<StewardError> => {
    const client = new ControllerClient({ addresses: tc.addresses, caCert: tc.caCert, token: tok });
    return client
      .debugLog("m", { lines: 0 }, () => undefined)
      .then(
        () => {
          throw new Error("the stream ended without an error");
        },
        (err: StewardError) => err,
      )
      .finally(() => client.close());
  };
  const byToken = follow(token);
  await new Promise((r) => setTimeout(r, 500)); // the stream is open
  await dora.logout();
  const ended = await byToken;
  t.is(ended.code, "unauthorized");
  t.regex(ended.message, /log stream closed: .*revoked/);

  const fresh = await tc.clientFor("dora", "dora-password").login();
  const byAccess = follow(fresh);
  await new Promise((r) => setTimeout(r, 500));
  await tc.admin.revoke("m", "dora");
  const denied = await byAccess;
  t.is(denied.code, "forbidden");
  t.regex(denied.message, /access to model m was revoked/);
});
