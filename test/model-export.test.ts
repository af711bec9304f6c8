/**
 * A model as a document, between two real controllers: a model with two applications, an
 * integration, unit and application relation data, a leader with leader data, open ports and status
 * is exported from the first (one store revision), its local machines' directories are moved (the
 * machine is its directory, credential and hook state included), and it is imported into a second,
 * fresh controller. The second serves the same status and show-unit; the original agents log in
 * with the credentials they had, get their units, and no hook runs again (recorder's hooks log).
 */
import test from "ava";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import type { ModelStatus, UnitDetails } from "../api";
import type { TestController } from "./harness/controller";
import { allReady, startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";
import { recordDir, recorderVariant, sequences } from "./harness/operators";
import { killProcessesUnder } from "./harness/processes";

let src: TestController;
let dst: TestController;
test.before(async () => {
  [src, dst] = await Promise.all([startTestController(), startTestController()]);
});
test.after.always(async () => {
  await Promise.all([src?.close(), dst?.close()]);
});

/** A recorder that also sets leader data, its application's databag when it leads, and opens a port. */
async function chattyRecorder(
  name: string,
  endpoints: { provides?: Record<string, string>; requires?: Record<string, string> },
): Promise<string> {
  const dir = await recorderVariant({ name, ...endpoints });
  const extra = `
if [ "$hook" = "leader-elected" ]; then leader-set token="t-$me"; fi
if [ "$hook" = "start" ]; then open-port 8080/tcp; fi
if [ -n "\${STEWARD_RELATION_ID:-}" ] && [ "$(is-leader)" = "true" ]; then relation-set --app app-marker=from-$me; fi
`;
  await writeFile(join(dir, "dispatch"), (await readFile(join(dir, "dispatch"), "utf8")) + extra, { mode: 0o755 });
  return dir;
}

/** What two controllers must agree on: status without times, revisions and the controller's name. */
function comparable(s: ModelStatus): unknown {
  return JSON.parse(
    JSON.stringify(
      { applications: s.applications, machines: s.machines, integrations: s.integrations, model: s.model.name },
      (k, v: unknown) => (k === "since" ? undefined : v),
    ),
  );
}
const noTimes = (u: UnitDetails): unknown =>
  JSON.parse(JSON.stringify(u, (k, v: unknown) => (k === "since" ? undefined : v)));

/** Hook sequences once nothing has run for `quietMs`. */
async function settled(record: string, quietMs = 3000): Promise<Map<string, string[]>> {
  let last = "";
  let since = Date.now();
  return eventually(
    "hooks settled",
    async () => {
      const now = JSON.stringify([...(await sequences(record))]);
      if (now !== last) {
        last = now;
        since = Date.now();
        return undefined;
      }
      return Date.now() - since >= quietMs ? sequences(record) : undefined;
    },
    60_000,
    250,
  );
}

test("a model exported from one controller and imported into another carries on with no hook run again", async (t) => {
  const record = await recordDir();
  await src.admin.createModel("mig");
  const prov = await src.upload(await chattyRecorder("prov", { provides: { db: "rdb" } }));
  const cons = await src.upload(await chattyRecorder("cons", { requires: { db: "rdb" } }));
  await src.admin.deploy("mig", {
    name: "prov",
    operator: prov,
    units: 2,
    config: { "record-dir": record, "set-marker": true },
  });
  await src.admin.deploy("mig", {
    name: "cons",
    operator: cons,
    units: 1,
    config: { "record-dir": record, "set-marker": true },
  });
  await src.admin.integrate("mig", "cons:db", "prov:db");
  await src.waitForUnits("mig", allReady(3), "3 units active", 60_000);
  const before = await settled(record);
  const srcStatus = await src.admin.status("mig");
  const srcUnit = await src.admin.showUnit("mig", "cons/0");
  const srcLeaderUnit = Object.values(srcStatus.applications.prov!.units).find((u) => u.leader)!.name;
  t.truthy(
    srcUnit.integrations[0]?.remoteAppData["app-marker"],
    "the provider's leader wrote its application's databag",
  );
  t.truthy(
    Object.values(srcUnit.integrations[0]!.remoteUnits).every((bag) => bag.marker),
    "relation data of each remote unit",
  );

  // Export, timed, and its size gzipped (what export-model writes).
  const t0 = Date.now();
  const doc = await src.admin.call<{
    version: number;
    source: { revision: number };
    documents: Record<string, Record<string, unknown>>;
    versions: { bags: Record<string, number> };
  }>("GET", "/v1/models/mig/export");
  const exportMs = Date.now() - t0;
  const json = JSON.stringify(doc);
  t.log(
    `export: ${json.length} bytes JSON, ${gzipSync(json).length} gzipped, ${exportMs} ms, ${Object.values(doc.documents).reduce((n, g) => n + Object.keys(g).length, 0)} documents`,
  );
  t.is(doc.version, 5);
  t.truthy(doc.documents["leader-data"]?.prov, "leader data travels");
  t.truthy(
    doc.documents.leader?.prov && !("lease" in (doc.documents.leader.prov as object)),
    "the leader travels, without the source's lease",
  );
  t.truthy(
    Object.values(doc.documents.machine ?? {}).every(
      (m) => typeof (m as { credentialHash?: string }).credentialHash === "string",
    ),
    "machines carry their credential hashes",
  );
  t.falsy(doc.documents.presence, "presence is not exported");
  t.true(Object.keys(doc.versions.bags).length >= 4, "databag versions travel");

  // The source controller stops; its agents stop; their directories (credential, hook state) move
  // to where the target's local substrate keeps machines, pointed at the target.
  const uuid = srcStatus.model.uuid;
  await src.controller.stop();
  await killProcessesUnder(join(src.dir, "c", "machines"));
  const credentials = new Map<string, string>();
  for (const id of Object.keys(srcStatus.machines)) {
    const from = join(src.dir, "c", "machines", uuid, id);
    const to = join(dst.dir, "c", "machines", uuid, id);
    await mkdir(join(to, ".."), { recursive: true });
    await rename(from, to);
    await rm(join(to, "agent.pid"), { force: true });
    const cfg = JSON.parse(await readFile(join(to, "agent.json"), "utf8")) as {
      credential: string;
      controllerAddresses: string[];
      caCert: string;
    };
    credentials.set(id, cfg.credential);
    await writeFile(
      join(to, "agent.json"),
      JSON.stringify({ ...cfg, controllerAddresses: dst.addresses, caCert: dst.caCert }),
      { mode: 0o600 },
    );
  }

  const t1 = Date.now();
  const res = await dst.admin.call<{ name: string; uuid: string; documents: Record<string, number> }>(
    "POST",
    "/v1/models/import",
    doc,
  );
  t.log(`import: ${Date.now() - t1} ms`);
  t.is(res.uuid, uuid);
  // The agents log in with the credentials they had (a machine given a new one would show it in agent.json).
  await dst.waitForUnits("mig", allReady(3), "3 units active on the target", 60_000);
  await eventually(
    "every machine started on the target",
    async () => Object.values((await dst.admin.status("mig")).machines).every((m) => m.status.current === "started"),
    30_000,
  );
  for (const [id, credential] of credentials) {
    const cfg = JSON.parse(await readFile(join(dst.dir, "c", "machines", uuid, id, "agent.json"), "utf8")) as {
      credential: string;
    };
    t.is(cfg.credential, credential, `machine ${id} kept its credential`);
  }
  const after = await settled(record);
  t.deepEqual([...after].sort(), [...before].sort(), "no hook ran again on the target");

  const dstStatus = await dst.admin.status("mig");
  t.deepEqual(comparable(dstStatus), comparable(srcStatus));
  t.deepEqual(noTimes(await dst.admin.showUnit("mig", "cons/0")), noTimes(srcUnit));
  t.is(
    Object.values(dstStatus.applications.prov!.units).find((u) => u.leader)?.name,
    srcLeaderUnit,
    "the same unit leads",
  );

  // Leadership is held by the agent, not just copied: it renews past the lease the import granted.
  // And a change after the import is seen as one: a new unit joins and the consumer runs its hooks.
  await dst.admin.addUnits("mig", "prov", 1);
  await dst.waitForUnits("mig", allReady(4), "the new unit active", 60_000);
  const grown = await settled(record);
  t.true((grown.get("cons/0") ?? []).length > (before.get("cons/0") ?? []).length, "cons/0 saw the new unit");
  for (const u of ["prov/0", "prov/1", "cons/0"]) {
    const added = (grown.get(u) ?? []).slice((before.get(u) ?? []).length);
    t.false(
      added.some((h) => ["install", "start", "leader-elected", "relation-created"].includes(h)),
      `${u} ran only hooks about the new unit: ${added.join(" ")}`,
    );
  }

  // A second import of the same model is refused whole.
  const again = await dst.admin
    .call("POST", "/v1/models/import", doc)
    .catch((e: unknown) => e as { code: string; message: string });
  t.is((again as { code: string }).code, "already-exists");
});
