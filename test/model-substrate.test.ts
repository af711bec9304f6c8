/**
 * A model records where its machines come from, as a Juju model records its cloud: units placed
 * without --to get machines from a `local` model's substrate; a `manual` or `ssh` model refuses
 * them with a message that says what to do, and changes nothing.
 */
import test from "ava";
import { join } from "node:path";
import type { StewardError } from "../api";
import type { TestController } from "./harness/controller";
import { operatorsDir, startTestController } from "./harness/controller";
import { rawRequest } from "./harness/http";
import { cliRunner } from "./harness/cli";

let tc: TestController;
test.before(async () => {
  tc = await startTestController();
});
test.after.always(async () => {
  await tc?.close();
});

test("a model's substrate is recorded, listed, and decides where unplaced units go", async (t) => {
  const local = await tc.admin.createModel("plain");
  t.is(local.substrate, "local", "local unless asked otherwise");
  const manual = await tc.admin.createModel("by-hand", undefined, "manual");
  t.is(manual.substrate, "manual");
  const listed = Object.fromEntries((await tc.admin.listModels()).map((m) => [m.name, m.substrate]));
  t.like(listed, { plain: "local", "by-hand": "manual" });

  const op = await tc.upload(join(operatorsDir, "motd"));
  const refused = await t.throwsAsync<StewardError>(
    tc.admin.deploy("by-hand", { name: "motd", operator: op, units: 1 }),
  );
  t.is(refused?.code, "invalid-request");
  t.regex(refused?.message ?? "", /machines come from the manual substrate.*add-machine.*--to/);
  const untouched = await tc.admin.status("by-hand");
  t.deepEqual(
    [Object.keys(untouched.applications), Object.keys(untouched.machines)],
    [[], []],
    "the refused deploy created nothing",
  );

  // With machines added to it, the same deploy placed on them works.
  const [m] = (await tc.admin.addMachines("by-hand", "manual", 1)).machines;
  await tc.admin.deploy("by-hand", { name: "motd", operator: op, units: 1, to: [m!.id] });
  const s = await tc.admin.status("by-hand");
  t.is(s.applications.motd!.units["motd/0"]!.machine, m!.id);
  t.is(s.machines[m!.id]!.substrate, "manual");
  // Adding a second unit without a machine for it is refused the same way.
  const more = await t.throwsAsync<StewardError>(tc.admin.addUnits("by-hand", "motd", 1));
  t.regex(more?.message ?? "", /manual substrate/);
});

test("an unknown substrate is a 400 that names the field", async (t) => {
  const token = await tc.admin.login();
  const res = await rawRequest(
    tc.addresses[0]!,
    tc.caCert,
    "POST",
    "/v1/models",
    JSON.stringify({ name: "cloudy", substrate: "gcp" }),
    { "content-type": "application/json", authorization: `Bearer ${token}` },
  );
  t.is(res.status, 400);
  t.regex(res.body.message ?? "", /substrate/);
  t.false((await tc.admin.listModels()).some((m) => m.name === "cloudy"));
});

test("steward add-model refuses an unknown --substrate before contacting anything", async (t) => {
  const r = await cliRunner("/nonexistent-steward-home", process.cwd())("add-model", "x", "--substrate", "gcp");
  t.is(r.code, 1);
  t.regex(r.stdout + r.stderr, /--substrate.*(local|manual|ssh|aws)/s);
});
