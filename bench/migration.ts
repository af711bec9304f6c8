/**
 * Migration of a model of N units (simulated agents, one per machine) between two controllers,
 * each in its own process: the whole move (POST migrate → DONE), how long agents could not commit
 * a hook (from the first view that paused them to the first view the target gave them), and how
 * many units would run a hook again on the target (their view there differs from the source's in
 * anything that decides hooks: config, leadership, relations; must be 0).
 *
 * The simulated agents do what real ones do in each phase (agent/migration-minion.ts): check the
 * target over TLS pinned to its CA, validate their machine against the staged copy with their own
 * credential (waiting out 429s), report, and on SUCCESS log in to the target.
 */
import { Agent as HttpsAgent, request } from "node:https";
import type { AgentView, MigrationInfo } from "../api";
import { CONTROLLER_TLS_NAME, splitAddress } from "../api";
import type { BenchController } from "./bench-controller";
import { benchController, deploySimulated } from "./bench-controller";
import { SimAgent } from "./sim-agent";
import type { BenchOptions } from "./util";
import { report, sleep } from "./util";

const DEFAULT_UNITS = Number(process.env.BENCH_UNITS ?? 1000);

interface Moved {
  pausedAt?: number;
  resumedAt?: number;
  sourceUnits?: string;
  targetUnits?: string;
}

export async function benchMigration(o: BenchOptions = {}): Promise<void> {
  const UNITS = o.size ?? DEFAULT_UNITS;
  const [src, dst] = await Promise.all([benchController("mig"), benchController("other")]);
  const agents: SimAgent[] = [];
  const https = new HttpsAgent({ keepAlive: true, maxSockets: 64, ca: dst.caCert });
  try {
    const machines = await deploySimulated(src, "mig", UNITS, agents);
    await Promise.all(agents.map((a) => a.viewWhere((v) => v.units.length === 1)));
    const moved: Moved[] = machines.map(() => ({}));
    const done: Promise<void>[] = agents.map((a, i) => minion(a, machines[i]!, moved[i]!, src, dst, https, agents));

    const t0 = performance.now();
    await src.client.call("POST", "/v1/models/mig/migrate", {
      target: { name: "other", addresses: dst.addresses, caCert: dst.caCert, user: "admin", password: dst.password },
      agentWaitSeconds: 600,
    });
    let info: MigrationInfo;
    for (;;) {
      info = await src.client.call<MigrationInfo>("GET", "/v1/models/mig/migration");
      if (info.phase === "DONE" || info.phase === "ABORTDONE") break;
      await sleep(100);
    }
    const totalMs = performance.now() - t0;
    if (info.phase !== "DONE") throw new Error(`the migration was aborted: ${info.failure}`);
    await Promise.all(done);

    const stalls = moved.map((m) => m.resumedAt! - m.pausedAt!).sort((x, y) => x - y);
    const rerun = moved.filter((m) => m.sourceUnits !== m.targetUnits).length;
    const at = (p: string): number => Date.parse(info.history.find((h) => h.phase === p)!.at);
    report(`migration of a ${UNITS}-unit model between two controllers (simulated agents)`, {
      "whole migration, migrate to DONE (ms)": totalMs,
      "  QUIESCE: every agent paused and checked (ms)": at("IMPORT") - at("QUIESCE"),
      "  IMPORT: export, stage on the target (ms)": at("VALIDATION") - at("IMPORT"),
      "  VALIDATION: every agent validated, activate (ms)": at("SUCCESS") - at("VALIDATION"),
      "  SUCCESS: every agent switched (ms)": at("LOGTRANSFER") - at("SUCCESS"),
      "  LOGTRANSFER and REAP (ms)": at("DONE") - at("LOGTRANSFER"),
      "agents unable to commit a hook, median (ms)": stalls[Math.floor(stalls.length / 2)]!,
      "agents unable to commit a hook, worst (ms)": stalls.at(-1)!,
      "units that would run a hook again (must be 0)": rerun,
    });
    if (rerun > 0) throw new Error(`${rerun} units see another state on the target than on the source`);
  } finally {
    for (const a of agents) a.close();
    https.destroy();
    await Promise.all([src.stop().catch(() => undefined), dst.stop().catch(() => undefined)]);
  }
}

/** What decides an agent's hooks, as text: the units' config, leadership and relations. */
const hookInputs = (v: AgentView): string =>
  JSON.stringify(
    v.units.map((u) => ({
      name: u.name,
      config: u.config,
      leader: u.leader,
      leaderSettingsVersion: u.leaderSettingsVersion,
      relations: u.relations,
    })),
  );

/** One simulated agent's part in the migration; resolves once it is on the target. */
async function minion(
  agent: SimAgent,
  machine: { id: string; credential?: string },
  m: Moved,
  src: BenchController,
  dst: BenchController,
  https: HttpsAgent,
  agents: SimAgent[],
): Promise<void> {
  const answered = new Set<string>();
  const auth = `Agent ${src.uuid}/${machine.id}/${machine.credential}`;
  await new Promise<void>((resolve, reject) => {
    agent.listen((v, at) => {
      const mig = v.migration;
      if (!mig) return;
      if (mig.paused && m.pausedAt === undefined) {
        m.pausedAt = at;
        m.sourceUnits = hookInputs(v);
      }
      const key = `${mig.id}/${mig.phase}`;
      if (answered.has(key)) return;
      answered.add(key);
      const report = (): Promise<unknown> => agent.call("migration.report", { id: mig.id, phase: mig.phase, ok: true });
      const step =
        mig.phase === "QUIESCE"
          ? call(https, dst, "GET", "/v1/migrations/hello").then(report)
          : mig.phase === "VALIDATION"
            ? call(
                https,
                dst,
                "POST",
                `/v1/migrations/${mig.id}/validate`,
                { units: v.units.map((u) => u.name) },
                auth,
              ).then(report)
            : mig.phase === "SUCCESS"
              ? report().then(async () => {
                  const onTarget = await SimAgent.connect(
                    dst.addresses[0]!,
                    dst.caCert,
                    src.uuid,
                    machine.id,
                    machine.credential!,
                  );
                  agents.push(onTarget);
                  const view = await onTarget.viewWhere((tv) => tv.migration === undefined && tv.units.length === 1);
                  m.resumedAt = performance.now();
                  m.targetUnits = hookInputs(view);
                  agent.close();
                  resolve();
                })
              : Promise.resolve();
      step.catch(reject);
    });
  });
}

/** One request to the target, retried while it says 429 (after its Retry-After, spread). */
async function call(
  https: HttpsAgent,
  dst: BenchController,
  method: string,
  path: string,
  body?: unknown,
  authorization?: string,
): Promise<void> {
  for (;;) {
    const status = await new Promise<{ code: number; retryAfter: number; text: string }>((resolve, reject) => {
      const [host, port] = splitAddress(dst.addresses[0]!);
      const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
      const req = request(
        {
          host,
          port,
          method,
          path,
          agent: https,
          servername: CONTROLLER_TLS_NAME,
          headers: {
            ...(authorization ? { authorization } : {}),
            ...(payload ? { "content-type": "application/json", "content-length": String(payload.length) } : {}),
          },
        },
        (res) => {
          let text = "";
          res.on("data", (c: Buffer) => {
            text += c.toString();
          });
          res.on("end", () =>
            resolve({ code: res.statusCode ?? 0, retryAfter: Number(res.headers["retry-after"] ?? 1), text }),
          );
        },
      );
      req.on("error", reject);
      req.end(payload);
    });
    if (status.code < 300) return;
    if (status.code !== 429) throw new Error(`${method} ${path}: HTTP ${status.code} ${status.text}`);
    await sleep(status.retryAfter * 1000 * (1 + Math.random()));
  }
}
