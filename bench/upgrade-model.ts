/**
 * `steward upgrade-model` on a model of `size` local machines (real agent processes), one unit of
 * motd on each: the wall time of the whole upgrade, `batch` machines at a time, and for each machine
 * how long its unit could run no hook. That is read from its agent's log: from the old agent's
 * switch (it switches only once no hook runs, and runs none after) to the new release's agent
 * confirmed (logged in and reported; its unit's hooks free to run again). The release is this build
 * with a higher patch version, signed and held from the controller's release source.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readOperatorDir } from "../api";
import { generateReleaseKey } from "../controller";
import { cliOnControllers } from "../test/harness/cli";
import { allReady, startTestController } from "../test/harness/controller";
import { makeRelease, publishAgentRelease } from "../test/harness/release";
import type { BenchOptions } from "./util";
import { median, percentile, report } from "./util";

const MODEL = "fleet";

/** `size`: machines (default 100); `batch`: machines of the application moved at once (default 10). */
export async function benchUpgradeModel(o: BenchOptions & { batch?: number } = {}): Promise<void> {
  const size = o.size ?? 100;
  const batch = o.batch ?? 10;
  const release = await makeRelease({ bump: "patch" });
  const home = await mkdtemp(join(tmpdir(), "steward-bench-upgrade-model-"));
  const key = generateReleaseKey();
  await publishAgentRelease(release, join(home, "releases"), key.privateKeyPem);
  const tc = await startTestController({
    releases: { source: join(home, "releases"), keys: [key.publicKey] },
    localMachines: { maxPerHost: size },
    // Every agent logs in again as it switches: the login budget is not what is measured.
    agentLogins: { perSecond: 1000, burst: 1000 },
  });
  try {
    const steward = await cliOnControllers(home, { here: tc }, { currentModel: MODEL });
    const { uuid } = await tc.admin.createModel(MODEL);
    const op = await readOperatorDir(join(__dirname, "..", "..", "operators", "motd"));
    await tc.admin.uploadOperator(op.bundle);
    await tc.admin.deploy(MODEL, { name: "motd", operator: op.hash, units: size });
    await tc.waitForUnits(MODEL, allReady(size), `${size} motd units active`, 30 * 60_000);
    const t0 = Date.now();
    const run = await steward("upgrade-model", "--to", release.version, "--batch", String(batch), "--timeout", "20m");
    const wallSeconds = (Date.now() - t0) / 1000;
    if (run.code !== 0) throw new Error(`bench: upgrade-model failed: ${run.stderr || run.stdout}`);
    const status = await tc.admin.status(MODEL);
    const behind = Object.values(status.machines).filter((m) => m.agentVersion !== release.version);
    if (behind.length) throw new Error(`bench: ${behind.length} machines do not report ${release.version}`);
    const gaps: number[] = [];
    for (const id of Object.keys(status.machines))
      gaps.push(await noHookSeconds(join(tc.dir, "agents", uuid, id, "agent.log"), release.version));
    report(`upgrade-model: ${size} local machines, --batch ${batch}`, {
      "wall time (s)": round(wallSeconds),
      "machines per minute": round((size / wallSeconds) * 60),
      "no-hook time per machine, median (s)": round(median(gaps)),
      "no-hook time per machine, p95 (s)": round(percentile(gaps, 95)),
      "longest time a unit could run no hook (s)": round(Math.max(...gaps)),
    });
  } finally {
    await tc.close();
    await release.close();
    await rm(home, { recursive: true, force: true });
  }
}

/** Seconds from the agent's switch to `version` to that release's confirmation, from its log's timestamps. */
async function noHookSeconds(logFile: string, version: string): Promise<number> {
  const lines = (await readFile(logFile, "utf8")).split("\n");
  const at = (re: RegExp): number => {
    const line = lines.find((l) => re.test(l));
    if (!line)
      throw new Error(`bench: ${logFile} has no line matching ${re}; its lines:\n${lines.slice(-40).join("\n")}`);
    return Date.parse(line.slice(0, line.indexOf(" ")));
  };
  const v = version.replace(/\./g, "\\.");
  const switched = at(new RegExp(`switching to agent release; restarting .*version=${v}\\b`));
  const confirmed = at(new RegExp(`agent release confirmed: it came up and reported .*version=${v}\\b`));
  return (confirmed - switched) / 1000;
}

const round = (n: number): number => Math.round(n * 100) / 100;
