/**
 * The agent's side of operator content: it re-checks every path before writing (it never trusts the
 * controller with its disk), and a unit whose operator cannot be unpacked says so in its status.
 */
import test from "ava";
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Bundle } from "../api";
import { bundleFilePath, unpackBundle } from "../agent";
import { operatorsDir, startTestController } from "./harness/controller";
import { eventually } from "./harness/eventually";

const b64 = (text: string): string => Buffer.from(text).toString("base64");
const file = (path: string, content = "x", mode = 0o644) => ({ path, mode, content: b64(content) });

test("a bundle path is placed under the operator directory only when it stays inside it", (t) => {
  const root = "/var/lib/steward/operators/v2-abc.tmp-1";
  t.is(bundleFilePath(root, "hooks/install"), `${root}/hooks/install`);
  t.is(bundleFilePath(root, "..data"), `${root}/..data`, "a name that merely starts with two dots is fine");
  const refused: [string, RegExp][] = [
    ["../../etc/passwd", /not a plain relative path/],
    ["hooks/../../x", /not a plain relative path/],
    ["/etc/passwd", /is an absolute path/],
    ["hooks/inst\0all", /control character \(such as NUL\)/],
    ["a\\..\\b", /backslash/],
    ["", /not a plain relative path/],
  ];
  for (const [path, message] of refused) {
    const err = t.throws(() => bundleFilePath(root, path), undefined, JSON.stringify(path));
    t.regex(err!.message, message, JSON.stringify(path));
  }
});

test("unpacking writes every file with its mode, and refuses a bad bundle before writing anything", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "steward-unpack-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const good: Bundle = { files: [file("operator.yaml", "name: x\n"), file("hooks/install", "#!/bin/sh\n", 0o755)] };
  await unpackBundle(good, join(dir, "good"));
  t.is(await readFile(join(dir, "good", "operator.yaml"), "utf8"), "name: x\n");
  t.is((await stat(join(dir, "good", "hooks", "install"))).mode & 0o777, 0o755);

  const bad: [Bundle, RegExp][] = [
    [{ files: [file("ok"), file("../escape")] }, /"\.\.\/escape" is not a plain relative path/],
    [{ files: [file("lib"), file("lib/helper.sh")] }, /"lib" is also a directory \(of "lib\/helper\.sh"\)/],
    [{ files: [file("ok"), file("a\0b")] }, /control character/],
  ];
  for (const [i, [bundle, message]] of bad.entries()) {
    const target = join(dir, `bad-${i}`);
    await t.throwsAsync(unpackBundle(bundle, target), { message });
    t.false(
      await stat(target).then(
        () => true,
        () => false,
      ),
      "nothing was written",
    );
  }
  t.deepEqual((await readdir(dir)).sort(), ["good"]);
});

test("a unit whose operator cannot be unpacked says why in its status, and recovers once it can", async (t) => {
  const tc = await startTestController();
  t.teardown(() => tc.close());
  const { uuid } = await tc.admin.createModel("unpack");
  const { machines } = await tc.admin.addMachines("unpack", "local");
  const agentDir = join(tc.dir, "c", "machines", uuid, machines[0]!.id);
  await eventually("the machine's agent directory", () =>
    stat(agentDir).then(
      () => true,
      () => false,
    ),
  );
  // A file where the agent keeps unpacked operators: unpacking fails on this machine's disk.
  await writeFile(join(agentDir, "operators"), "in the way");
  const hash = await tc.upload(join(operatorsDir, "motd"));
  await tc.admin.deploy("unpack", { name: "motd", operator: hash, units: 1, to: [machines[0]!.id] });
  const failed = await tc.waitForUnits(
    "unpack",
    (units) => units.some((u) => u.agent.current === "error"),
    "the unit to report the unpack failure",
  );
  const unit = failed.applications.motd!.units["motd/0"]!;
  t.regex(unit.agent.message, /operator v2-[0-9a-f]{12}… cannot be unpacked: .*operators/);
  t.is(unit.workload.current, "error");
  t.regex(unit.workload.message, /cannot be unpacked/);

  await rm(join(agentDir, "operators"));
  const recovered = await tc.waitForUnits(
    "unpack",
    (units) => units.some((u) => u.agent.current === "idle" && u.workload.current === "active"),
    "the unit to recover once the operator unpacks",
  );
  t.is(recovered.applications.motd!.units["motd/0"]!.workload.current, "active");
});
