/** Argument handling of the hook tools (the end-to-end path is in agent-lifecycle.test.ts). */
import test from "ava";
import type { UnitView } from "../api";
import { runTool } from "../agent";
import type { HookContext } from "../agent";

function context(): HookContext & { statuses: [string, string][]; versions: string[] } {
  const view: UnitView = { name: "web/0", app: "web", life: "alive", operator: { hash: "h", name: "op", version: "1" }, config: { port: 80, name: "x", debug: false } };
  const ctx = {
    statuses: [] as [string, string][],
    versions: [] as string[],
    unit: "web/0", hook: "install",
    view: () => view,
    workloadStatus: () => ({ status: "active", message: "fine" }),
    async setWorkloadStatus(s: string, m: string) { ctx.statuses.push([s, m]); },
    async setVersion(v: string) { ctx.versions.push(v); },
    log: () => undefined,
  };
  return ctx;
}

test("status-set records the status and message", async (t) => {
  const ctx = context();
  t.is((await runTool(ctx, "status-set", ["active", "serving", "on", "80"])).code, 0);
  t.deepEqual(ctx.statuses, [["active", "serving on 80"]]);
});

test("status-set refuses a status operators may not set", async (t) => {
  const ctx = context();
  const r = await runTool(ctx, "status-set", ["error", "boom"]);
  t.is(r.code, 2);
  t.regex(r.stderr!, /first argument must be one of active, blocked, maintenance, waiting/);
  t.deepEqual(ctx.statuses, []);
});

test("an unknown flag is a usage error naming the flag", async (t) => {
  const r = await runTool(context(), "config-get", ["--formt", "json"]);
  t.is(r.code, 2);
  t.regex(r.stderr!, /unknown flag --formt\nusage: config-get/);
});

test("config-get prints one value, or everything as JSON", async (t) => {
  t.is((await runTool(context(), "config-get", ["port"])).stdout, "80\n");
  t.is((await runTool(context(), "config-get", ["--format=json", "debug"])).stdout, "false\n");
  t.deepEqual(JSON.parse((await runTool(context(), "config-get", [])).stdout!), { port: 80, name: "x", debug: false });
  const missing = await runTool(context(), "config-get", ["nope"]);
  t.is(missing.code, 1);
  t.regex(missing.stderr!, /"nope" is not set/);
});

test("status-get prints text or JSON", async (t) => {
  t.is((await runTool(context(), "status-get", [])).stdout, "active\n");
  t.deepEqual(JSON.parse((await runTool(context(), "status-get", ["--format", "json"])).stdout!), { status: "active", message: "fine" });
});

test("every tool answers --help with its usage", async (t) => {
  for (const tool of ["status-set", "status-get", "config-get", "application-version-set", "log"]) {
    const r = await runTool(context(), tool, ["--help"]);
    t.is(r.code, 0);
    t.regex(r.stdout!, new RegExp(`^usage: ${tool}`));
  }
  t.is((await runTool(context(), "relation-get", [])).code, 2);
});

test("log refuses an unknown level", async (t) => {
  const r = await runTool(context(), "log", ["--level", "LOUD", "hi"]);
  t.is(r.code, 2);
  t.regex(r.stderr!, /--level must be one of DEBUG, INFO, WARNING, ERROR/);
});
