/**
 * `pulumi up` of examples/bare-metal on sshd test hosts (3 controller replicas, 1 spare, 2 workers),
 * driven through the SDK's dynamic-provider process as in test/provider-ssh.test.ts: the total time,
 * each resource's step, and the share of the run spent waiting for units (the Application and
 * Integration steps, which return once every unit is active/idle). Then `destroy`.
 *
 * Needs root (network namespaces).
 */
import * as pulumi from "@pulumi/pulumi";
import { join } from "node:path";
import { bareMetal } from "../examples/bare-metal/stack";
import type { SshHost } from "../provider";
import type { TestHost } from "../test/harness/hosts";
import { TestLab } from "../test/harness/hosts";
import { MiniEngine } from "../test/harness/pulumi-engine";
import type { BenchOptions } from "./util";
import { report } from "./util";

const repo = join(__dirname, "..", "..");

/** Length of the union of [start, end) intervals. */
function covered(intervals: { startMs: number; endMs: number }[]): number {
  let total = 0;
  let reach = -Infinity;
  for (const i of [...intervals].sort((a, b) => a.startMs - b.startMs)) {
    if (i.endMs <= reach) continue;
    total += i.endMs - Math.max(i.startMs, reach);
    reach = i.endMs;
  }
  return total;
}

/** `size`: worker hosts (default 2; the controller takes 3 more and a spare). */
export async function benchProviderUp(o: BenchOptions = {}): Promise<void> {
  const workers = o.size ?? 2;
  if (process.getuid?.() !== 0) {
    console.log("provider-up: skipped (needs root for network namespaces)");
    return;
  }
  const lab = await TestLab.create(4 + workers);
  const engine = new MiniEngine(repo);
  try {
    await engine.start();
    const host = (h: TestHost): SshHost => ({ host: h.ip, hostKey: h.hostKeyFingerprint });
    const run = await engine.up(() => {
      bareMetal({
        controllers: lab.hosts.slice(0, 3).map(host),
        spares: [host(lab.hosts[3]!)],
        workers: lab.hosts.slice(4, 4 + workers).map(host),
        privateKey: pulumi.secret(lab.clientKey),
        operatorsDir: join(repo, "operators"),
      });
    });
    if (run.errors.length > 0)
      throw new Error(`up failed: ${run.errors.map((e) => `${e.name}: ${e.message}`).join("; ")}`);
    const total = Math.max(...run.steps.map((s) => s.endMs));
    const waiting = covered(run.steps.filter((s) => s.type === "Application" || s.type === "Integration"));
    const figures: Record<string, string | number> = { "up, total (s)": total / 1000 };
    for (const s of [...run.steps].sort((a, b) => a.startMs - b.startMs))
      figures[`  ${s.type} ${s.name} (s, from ${(s.startMs / 1000).toFixed(1)})`] = (s.endMs - s.startMs) / 1000;
    figures["waiting for units (s)"] = waiting / 1000;
    figures["waiting for units (% of up)"] = (100 * waiting) / total;
    const t0 = performance.now();
    await engine.destroy();
    figures["destroy (s)"] = (performance.now() - t0) / 1000;
    report(`provider-up: pulumi up of examples/bare-metal on ${4 + workers} sshd test hosts`, figures);
  } finally {
    await engine.destroy().catch(() => undefined);
    engine.stop();
    await lab.close();
  }
}
