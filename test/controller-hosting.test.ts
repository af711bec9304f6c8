/**
 * The bootstrap flow every kind shares (substrates/bootstrap-controller.ts), on the kind that runs
 * here without a lab: a local controller. The first replica is recorded as soon as it answers, a
 * place that holds a controller is refused in the caller's words before anything starts, adopting
 * it with its password takes it over, and destroy takes the whole directory away.
 */
import test from "ava";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { ControllerClient } from "../api";
import type { HostedController } from "../substrates";
import { CONTROLLER_HOSTING, bootstrapController, destroyController } from "../substrates";

test("every hosting kind loads, with bootstrap and destroy", (t) => {
  for (const [kind, load] of Object.entries(CONTROLLER_HOSTING)) {
    const hosting = load();
    t.is(typeof hosting.bootstrap, "function", kind);
    t.is(typeof hosting.destroy, "function", kind);
  }
});

test("a local bootstrap: recorded once it answers, a second refused in the caller's words, adopted with its password, destroyed", async (t) => {
  t.timeout(120_000);
  const dir = await mkdtemp(join(tmpdir(), "steward-hosting-"));
  const dataDir = join(dir, "c");
  const lines: string[] = [];
  const recorded: HostedController[] = [];
  const plan = { name: "hosting", settings: { dataDir }, replicas: 1, timeoutMs: 60_000 };
  try {
    const first = await bootstrapController("local", plan, {
      progress: (l) => lines.push(l),
      recorded: (c) => {
        recorded.push({ ...c });
      },
    });
    t.deepEqual(lines, [`Creating controller "hosting" in ${dataDir}`, "Starting the controller (embedded store)"]);
    t.is(recorded.length, 1, "one replica: recorded once, when it answers");
    t.deepEqual(recorded[0], first);
    t.truthy(first.token);
    t.regex(first.uuid, /^[0-9a-f-]{36}$/);

    const refused = await bootstrapController("local", plan, {
      progress: () => undefined,
      existing: (where) => new Error(`taken: ${where}`),
    }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    t.is(refused?.message, `taken: ${dataDir}`);

    const adopted = await bootstrapController(
      "local",
      { ...plan, adopt: true, adminPassword: first.adminPassword },
      { progress: () => undefined },
    );
    t.is(adopted.uuid, first.uuid, "the same controller, taken over");
    const client = new ControllerClient({
      addresses: adopted.addresses,
      caCert: adopted.caCert,
      user: "admin",
      password: first.adminPassword,
    });
    try {
      t.is((await client.controllerInfo()).uuid, first.uuid);
    } finally {
      client.close();
    }

    lines.length = 0;
    await destroyController("local", { settings: { dataDir } }, { progress: (l) => lines.push(l) });
    t.deepEqual(lines, ["Stopping the controller"]);
    await t.throwsAsync(stat(dataDir), { code: "ENOENT" });
  } finally {
    await destroyController("local", { settings: { dataDir } }, { progress: () => undefined }).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
});
