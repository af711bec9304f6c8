/**
 * How fast the `steward` command answers: wall time and peak RSS of `steward --help` and of
 * `steward status` against the local demo model (examples/local/model.yaml on a bootstrapped
 * controller), each the median of `runs` fresh processes, with their CPU time.
 */
import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { median, report } from "./util";

export interface CliStartupOptions {
  /** Fresh processes per command. @default 10 */
  runs?: number;
  /** The CLI entry point to measure. @default this build's dist/cli/main.js */
  cliPath?: string;
}

export async function benchCliStartup(opts: CliStartupOptions = {}): Promise<void> {
  const runs = opts.runs ?? 10;
  const dist = join(__dirname, "..");
  const cli = opts.cliPath ?? join(dist, "cli", "main.js");
  const home = await mkdtemp(join(tmpdir(), "steward-bench-cli-"));
  const env: NodeJS.ProcessEnv = { ...process.env, STEWARD_HOME: home };
  // Records the process's peak RSS and CPU time when it exits, so the figures are the CLI's own
  // (CPU time also reads true on a busy machine, where wall time includes waiting for a core).
  const probe = join(home, "usage-probe.js");
  const usageFile = join(home, "usage.json");
  // Peak RSS from /proc (VmHWM, this process's own): getrusage's maxRSS keeps the high-water mark of
  // the process that spawned it across exec, so a big bench process would be counted as the CLI's.
  await writeFile(
    probe,
    `process.on("exit", () => { const fs = require("node:fs"); const hwm = Number(/VmHWM:\\s+(\\d+)/.exec(fs.readFileSync("/proc/self/status", "utf8"))[1]); fs.writeFileSync(${JSON.stringify(usageFile)}, JSON.stringify({ ...process.resourceUsage(), peakKiB: hwm })); });\n`,
  );
  // NODE_EXTRA_CA_CERTS makes Node parse that bundle at boot (~50 ms here, where it names the whole
  // system store); most users' shells do not set it, so status is also measured without it.
  const { NODE_EXTRA_CA_CERTS: extraCerts, ...envWithoutExtraCerts } = env;
  const steward = (...args: string[]): { ms: number } => stewardIn(env, ...args);
  const stewardIn = (runEnv: NodeJS.ProcessEnv, ...args: string[]): { ms: number } => {
    const t = process.hrtime.bigint();
    const r = spawnSync(process.execPath, ["--require", probe, cli, ...args], { env: runEnv, encoding: "utf8" });
    const ms = Number(process.hrtime.bigint() - t) / 1e6;
    if (r.status !== 0) throw new Error(`steward ${args.join(" ")} failed: ${r.stdout}${r.stderr}`);
    return { ms };
  };
  const measure = async (...args: string[]): Promise<{ ms: number; cpuMs: number; rss: number }> =>
    measureIn(env, ...args);
  const measureIn = async (
    runEnv: NodeJS.ProcessEnv,
    ...args: string[]
  ): Promise<{ ms: number; cpuMs: number; rss: number }> => {
    const ms: number[] = [];
    const cpuMs: number[] = [];
    const rss: number[] = [];
    for (let i = 0; i < runs; i++) {
      ms.push(stewardIn(runEnv, ...args).ms);
      const usage = JSON.parse(await readFile(usageFile, "utf8")) as NodeJS.ResourceUsage & { peakKiB: number };
      cpuMs.push((usage.userCPUTime + usage.systemCPUTime) / 1000);
      rss.push(usage.peakKiB / 1024);
    }
    return { ms: median(ms), cpuMs: median(cpuMs), rss: median(rss) };
  };
  try {
    const help = await measure("--help");
    steward("bootstrap", "local");
    steward("apply", join(dist, "..", "examples", "local", "model.yaml"), "--yes", "-m", "demo", "--timeout", "5m");
    const status = await measure("status", "-m", "demo");
    const plainStatus =
      extraCerts === undefined ? undefined : await measureIn(envWithoutExtraCerts, "status", "-m", "demo");
    report(`CLI start-up (${cli === join(dist, "cli", "main.js") ? "this build" : cli}; median of ${runs} processes)`, {
      "steward --help, wall (ms)": help.ms,
      "steward --help, CPU (ms)": help.cpuMs,
      "steward --help, peak RSS (MiB)": help.rss,
      "steward status (demo model), wall (ms)": status.ms,
      "steward status (demo model), CPU (ms)": status.cpuMs,
      "steward status (demo model), peak RSS (MiB)": status.rss,
      ...(plainStatus && {
        "steward status, NODE_EXTRA_CA_CERTS unset, wall (ms)": plainStatus.ms,
        "steward status, NODE_EXTRA_CA_CERTS unset, CPU (ms)": plainStatus.cpuMs,
      }),
    });
  } finally {
    spawnSync(process.execPath, [cli, "destroy-controller", "local", "--yes", "--timeout", "20"], {
      env,
      encoding: "utf8",
    });
    await rm(home, { recursive: true, force: true });
  }
}
