/**
 * Reasons and retryability cross the wire with the error: every registered reason thrown in a route
 * comes out of the controller's own error handler as JSON and is rebuilt by the client with its code,
 * reason, retryability, message and details; so does every code, cancellation and deadlines included; an
 * older controller's answer falls back to the defaults, a bodiless one to its HTTP status. And `upgrade-controller`, which meets another run's live record, stops at once with that
 * run's message instead of retrying the write it was told not to.
 */
import test from "ava";
import Fastify from "fastify";
import type { ControllerUpgrade } from "../api";
import {
  ErrorCodes,
  ErrorReasons,
  StewardError,
  errorFromWire,
  isErrorReason,
  isUnavailable,
  silentLogger,
} from "../api";
import type { ErrorCode, ErrorReason } from "../api";
import type { ReplicaUpgrader, UpgradePlan } from "../cli";
import { runUpgrade } from "../cli";
import { installErrorHandling } from "../controller";
import { ssh } from "../substrates";
import type { TestController } from "./harness/controller";
import { startTestController } from "./harness/controller";

const reasons = Object.keys(ErrorReasons) as ErrorReason[];
const codes = Object.values(ErrorCodes) as ErrorCode[];

test("every registered reason is kebab-case and travels with a known code", (t) => {
  t.true(reasons.length >= 14);
  for (const r of reasons) {
    t.regex(r, /^[a-z]+(-[a-z]+)*$/, r);
    t.true((Object.values(ErrorCodes) as string[]).includes(ErrorReasons[r].code), r);
    t.true(isErrorReason(r));
  }
  t.false(isErrorReason("toString"), "only the registry's own keys");
});

test("every reason round-trips through the server's error handler and the client: code, reason, retryable, message, details", async (t) => {
  const app = Fastify();
  installErrorHandling(app, silentLogger);
  // Each reason with its default retryability, and once with the other, which the wire must keep too.
  app.get("/fail/:reason/:flip", async (req) => {
    const { reason, flip } = req.params as { reason: ErrorReason; flip: string };
    const spec = ErrorReasons[reason];
    throw new StewardError(spec.code, `failed because ${reason}`, {
      reason,
      details: { reason, n: 1, nested: { ok: true } },
      ...(flip === "1" ? { retryable: !spec.retryable } : {}),
    });
  });
  try {
    for (const reason of reasons) {
      for (const flip of [false, true]) {
        const res = await app.inject({ method: "GET", url: `/fail/${reason}/${flip ? 1 : 0}` });
        const sent = new StewardError(ErrorReasons[reason].code, "x").httpStatus;
        t.is(res.statusCode, sent, reason);
        const err = errorFromWire(JSON.parse(res.body), res.statusCode);
        const retryable = flip ? !ErrorReasons[reason].retryable : ErrorReasons[reason].retryable;
        t.like(
          err,
          { code: ErrorReasons[reason].code, reason, retryable, message: `failed because ${reason}` },
          reason,
        );
        t.deepEqual(err.details, { reason, n: 1, nested: { ok: true } }, reason);
      }
    }
  } finally {
    await app.close();
  }
});

test("an answer without reason or retryable (an older controller) falls back to the reason in details, else the code's default", (t) => {
  const legacy = errorFromWire(
    { code: "conflict", message: "already activated", details: { reason: "activated" } },
    409,
  );
  t.like(legacy, { code: "conflict", reason: "activated", retryable: false });
  const plain = errorFromWire({ code: "conflict", message: "changed meanwhile" }, 409);
  t.like(plain, { code: "conflict", reason: undefined, retryable: true });
  const unknown = errorFromWire(
    { code: "conflict", reason: "from-a-newer-controller", retryable: false, message: "later" },
    409,
  );
  t.like(unknown, { reason: undefined, retryable: false }, "an unknown reason is dropped; its retryability is kept");
  t.like(errorFromWire({ code: "unavailable", message: "busy" }, 503), { retryable: true });
});

test("every code round-trips through the server's error handler with its own HTTP status and default retryability", async (t) => {
  t.true(codes.includes("cancelled") && codes.includes("deadline-exceeded"));
  const app = Fastify();
  installErrorHandling(app, silentLogger);
  app.get("/code/:code", async (req) => {
    const { code } = req.params as { code: ErrorCode };
    throw new StewardError(code, `failed with ${code}`);
  });
  const statuses = new Map<ErrorCode, number>();
  try {
    for (const code of codes) {
      const res = await app.inject({ method: "GET", url: `/code/${code}` });
      statuses.set(code, res.statusCode);
      t.true(code === "internal" || res.statusCode !== 500, `${code} has a status of its own`);
      const err = errorFromWire(JSON.parse(res.body), res.statusCode);
      t.like(
        err,
        { code, reason: undefined, retryable: new StewardError(code, "x").retryable, message: `failed with ${code}` },
        code,
      );
    }
  } finally {
    await app.close();
  }
  t.is(statuses.get("cancelled"), 503, "work stopped on purpose: the replica is unavailable to this request");
  t.is(
    statuses.get("deadline-exceeded"),
    504,
    "what the controller waited on did not answer in time: a gateway timeout",
  );
  t.like(
    new StewardError("cancelled", "stopped"),
    { retryable: false },
    "someone asked for it: trying again is not the answer",
  );
  t.like(new StewardError("deadline-exceeded", "late"), { retryable: true });
});

test("an answer without a body maps by its status: a gateway or request timeout is a deadline passed, worth trying again", (t) => {
  t.like(errorFromWire("", 504), { code: "deadline-exceeded", retryable: true });
  t.like(errorFromWire(undefined, 408), { code: "deadline-exceeded", retryable: true });
  t.like(errorFromWire("<html>busy</html>", 503), { code: "unavailable", retryable: true });
  t.like(errorFromWire("", 502), { code: "internal" });
  t.like(errorFromWire("", 418), { code: "invalid-request" });
});

test("callers that try again or elsewhere treat a passed deadline as they treat unavailable, and a cancellation as neither", (t) => {
  t.true(isUnavailable(new StewardError("unavailable", "down")));
  t.true(isUnavailable(errorFromWire({ code: "deadline-exceeded", message: "late" }, 504)));
  t.true(isUnavailable({ code: "unavailable" }), "also an error rebuilt by hand from the wire");
  t.false(isUnavailable(new StewardError("cancelled", "stopped")));
  t.false(isUnavailable(new StewardError("conflict", "changed")));
  t.false(isUnavailable(Object.assign(new Error("refused"), { code: "ECONNREFUSED" })));
});

test("a cancelled SSH connect says cancelled, not unavailable", async (t) => {
  const abort = new AbortController();
  abort.abort();
  const err = await t.throwsAsync(
    ssh.SshSession.connect(
      { host: "127.0.0.1", port: 1, user: "nobody", privateKey: "", trustOnFirstUse: true },
      { signal: abort.signal },
    ),
  );
  t.like(err as StewardError, { code: "cancelled", retryable: false });
});

let tc: TestController | undefined;
test.after.always(async () => {
  await tc?.close();
});

test("upgrade-controller meeting another run's live record stops at its first write with that run's message", async (t) => {
  tc = await startTestController();
  const now = new Date().toISOString();
  const theirs: ControllerUpgrade = {
    run: "their-run",
    from: "0.1.0",
    to: "0.1.1",
    state: "running",
    startedAt: now,
    updatedAt: now,
    replicas: [],
    message: "upgrading",
  };
  await tc.admin.recordUpgrade(theirs);
  // The write that meets the conflict goes through the real client; count how often it is tried.
  let writes = 0;
  const client = tc.admin;
  const record = client.recordUpgrade.bind(client);
  client.recordUpgrade = (r: ControllerUpgrade): Promise<ControllerUpgrade> => {
    writes++;
    return record(r);
  };
  const untouched = (): Promise<never> => Promise.reject(new Error("no replica may be touched"));
  const upgrader: ReplicaUpgrader = { stage: untouched, switchOver: untouched, rollBack: untouched, prune: untouched };
  const plan: UpgradePlan = {
    from: "0.1.0",
    to: "0.1.1",
    steps: [{ name: "r1", host: "", addresses: tc.addresses, version: "0.1.0", leader: true }],
    done: [],
  };
  const lines: string[] = [];
  const err = await t.throwsAsync(
    runUpgrade({ client, caCert: tc.caCert, plan, upgrader, timeoutMs: 10_000, progress: (l) => lines.push(l) }),
  );
  t.true(StewardError.isInstance(err));
  t.like(err as StewardError, { code: "conflict", reason: "upgrade-in-progress", retryable: false });
  t.regex(
    err!.message,
    /another upgrade-controller run is upgrading the controller to 0\.1\.1 .*wait for it \(steward show-controller\)/,
  );
  t.is(writes, 1, "the refusal is final: the write is not tried again");
  t.deepEqual(lines, [], "nothing was staged");
  t.is((await tc.admin.controllerInfo()).cluster.upgrade?.run, "their-run", "the other run's record stands");
});
