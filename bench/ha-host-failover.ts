/**
 * HA on real sshd test hosts: a 3-replica controller bootstrapped with `steward bootstrap` onto
 * three hosts (each replica a controller plus its etcd member), then
 *
 * - killing the leader's whole host while a writer creates models at about 20/s through a client
 *   that started out on that replica (what a CLI or `pulumi up` sees): the longest time with no
 *   acknowledged write, the time to a new controller leader (which starts the singleton work as it
 *   is elected), and writes the client reported failed although they had worked (must be 0);
 * - a follower, then the leader, cut off for 20 s and healed, with the same writer: the write gap the
 *   cut causes, the longest gap after the heal (target: none), and whether the heal caused an etcd
 *   election (raft term) or moved the controller leader (target: never);
 * - 1,000 simulated agents on one replica whose host is killed: time until all are connected to the
 *   others again (they redial with jitter, as agents do, through the login rate limit);
 * - a follower lost for good: time from `replaceAfter` expiring (the keeper's removal) to three
 *   healthy voters again, the replacement installed on the spare host over SSH (target ≤ 60 s).
 *
 * Each is measured in 10 trials.
 *
 * Needs root (network namespaces). BENCH_HA_TRIALS changes the trial count, BENCH_HA_CUT_S how long
 * a partition lasts, BENCH_HA_PARTS which parts run.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import type { ClusterInfo } from "../api";
import { CONTROLLER_TLS_NAME, ControllerClient } from "../api";
import { loadClientConfig } from "../cli";
import { cliRunner } from "../test/harness/cli";
import { replicaBackSince } from "../test/harness/controller";
import type { TestHost } from "../test/harness/hosts";
import { TestLab } from "../test/harness/hosts";
import type { BenchOptions } from "./util";
import { median, report, sleep } from "./util";

const DEFAULT_TRIALS = Number(process.env.BENCH_HA_TRIALS ?? 10);
/** BENCH_HA_PARTS (comma-separated: kill, partition, agents, replace) runs only those parts. */
const part = (name: string): boolean =>
  (process.env.BENCH_HA_PARTS ?? "kill,partition,agents,replace").split(",").includes(name);

export interface HaBenchOptions extends BenchOptions {
  /**
   * Simulated agents on the replica whose host is killed.
   * @default 1000
   */
  agents?: number;
  /**
   * How long each partition lasts, in seconds.
   * @default 20, or BENCH_HA_CUT_S
   */
  cutSeconds?: number;
}

/** `size`: trials of each measurement (default 10, or BENCH_HA_TRIALS). */
export async function benchHaHostFailover(o: HaBenchOptions = {}): Promise<void> {
  const TRIALS = o.size ?? DEFAULT_TRIALS;
  if (process.getuid?.() !== 0) {
    console.log("ha-host-failover: skipped (needs root for network namespaces)");
    return;
  }
  const lab = await TestLab.create(4);
  const home = await mkdtemp(join(tmpdir(), "steward-bench-ha-"));
  process.env.BENCH_SSH_KEY = lab.clientKey;
  const clients: ControllerClient[] = [];
  try {
    const replicas = lab.hosts.slice(0, 3);
    const steward = cliRunner(home, home);
    const t0 = performance.now();
    const boot = await steward(
      "bootstrap",
      replicas.map((h) => `ssh:root@${h.ip}`).join(","),
      "bench",
      "--key-env",
      "BENCH_SSH_KEY",
      ...replicas.flatMap((h) => ["--host-key", h.hostKeyFingerprint]),
      "--replace-after",
      "10s",
    );
    if (boot.code !== 0) throw new Error(`bootstrap failed: ${boot.stderr}`);
    const bootstrapS = (performance.now() - t0) / 1000;
    const entry = (await loadClientConfig(home)).controllers.bench!;
    const mk = (addresses: string[]): ControllerClient => {
      const c = new ControllerClient({
        addresses,
        caCert: entry.caCert,
        user: "admin",
        password: entry.password!,
        timeoutMs: 1000,
      });
      clients.push(c);
      return c;
    };
    const all = mk(entry.addresses);
    const cluster = async (c = all): Promise<ClusterInfo | undefined> =>
      (await c.controllerInfo().catch(() => undefined))?.cluster;
    const healthy = async (): Promise<ClusterInfo> => {
      for (;;) {
        const c = await cluster();
        const voters = c?.members.filter((m) => m.hasVote) ?? [];
        if (
          c?.quorum &&
          voters.length === 3 &&
          voters.every((m) => m.present) &&
          voters.some((m) => m.leader) &&
          !c.members.some((m) => m.learner)
        )
          return c;
        await sleep(200);
      }
    };
    // A restarted host's replica is back once its presence is newer than the restart (the killed
    // incarnation's lease makes it look present for a while).
    const restart = async (h: TestHost): Promise<void> => {
      const t0 = Date.now();
      await h.start();
      while (!(await replicaBackSince(all, h.ip, t0))) await sleep(200);
    };
    const hostOf = (c: ClusterInfo, pick: (m: ClusterInfo["members"][number]) => boolean): TestHost =>
      replicas.find((h) => h.ip === c.members.find(pick)!.host)!;

    if (part("kill")) await benchLeaderKill(TRIALS, mk, entry.addresses, cluster, healthy, hostOf, restart, bootstrapS);
    if (part("partition")) {
      const cutS = o.cutSeconds ?? Number(process.env.BENCH_HA_CUT_S ?? 20);
      await benchPartitionHeal(TRIALS, cutS, mk, entry.addresses, cluster, healthy, hostOf, "follower");
      await benchPartitionHeal(TRIALS, cutS, mk, entry.addresses, cluster, healthy, hostOf, "leader");
    }
    if (!part("agents") && !part("replace")) return;

    if (part("agents"))
      await benchAgentReconnect(
        { trials: TRIALS, agents: o.agents ?? 1000 },
        all,
        entry.caCert,
        healthy,
        replicas,
        restart,
      );
    if (!part("replace")) return;

    // A follower lost for good, replaced on the spare host; the lost host then comes back, stands
    // down and becomes the next trial's spare (the installer wipes what it left).
    const raised = await steward("enable-ha", "-n", "3", "--max-replacements-per-hour", String(TRIALS * 2 + 2));
    if (raised.code !== 0) throw new Error(`enable-ha (raising the replacement rate limit) failed: ${raised.stderr}`);
    let spare = lab.hosts[3]!;
    const killToVotersMs: number[] = [];
    const removalToVotersMs: number[] = [];
    for (let trial = 0; trial < TRIALS; trial++) {
      const added = await steward(
        "add-spare",
        `ssh:root@${spare.ip}`,
        "--key-env",
        "BENCH_SSH_KEY",
        "--host-key",
        spare.hostKeyFingerprint,
      );
      if (added.code !== 0) throw new Error(`add-spare failed: ${added.stderr}`);
      const c0 = await healthy();
      const lost = hostOf(c0, (m) => m.hasVote && !m.leader);
      const killedAt = Date.now();
      await lost.kill();
      let done: ClusterInfo | undefined;
      while (!done) {
        const c = await cluster();
        const voters = c?.members.filter((m) => m.hasVote) ?? [];
        if (c && voters.length === 3 && voters.every((m) => m.present) && voters.some((m) => m.host === spare.ip))
          done = c;
        else await sleep(200);
      }
      const doneAt = Date.now();
      const removal = done.keeper.history
        .filter((e) => e.message.startsWith("removing ") && Date.parse(e.at) >= killedAt)
        .pop();
      if (!removal) throw new Error("replaced, but the keeper's history has no removal since the kill");
      killToVotersMs.push(doneAt - killedAt);
      removalToVotersMs.push(doneAt - Date.parse(removal.at));
      replicas[replicas.indexOf(lost)] = spare;
      await lost.start();
      spare = lost;
    }
    report(`HA: replica lost for good, replaced from the spare pool over SSH (replaceAfter 10 s, ${TRIALS} trials)`, {
      "replaceAfter expired (removal) to 3 healthy voters: median (s)": (median(removalToVotersMs) / 1000).toFixed(1),
      "removal to 3 healthy voters max (s)": (Math.max(...removalToVotersMs) / 1000).toFixed(1),
      "kill to 3 healthy voters: median (s)": (median(killToVotersMs) / 1000).toFixed(1),
      "kill to 3 healthy voters max (s)": (Math.max(...killToVotersMs) / 1000).toFixed(1),
    });
  } finally {
    for (const c of clients) c.close();
    await lab.close();
    await rm(home, { recursive: true, force: true });
  }
}

/**
 * Simulated agents (1,000 by default) on one replica; its host dies; they redial the others with jitter. The
 * same machines are used in every trial, each on the replica after the previous trial's.
 */
async function benchAgentReconnect(
  { trials: TRIALS, agents: AGENTS }: { trials: number; agents: number },
  client: ControllerClient,
  caCert: string,
  healthy: () => Promise<ClusterInfo>,
  replicas: TestHost[],
  restart: (h: TestHost) => Promise<void>,
): Promise<void> {
  const { uuid } = await client.createModel("reconnect");
  const machines = (await client.addMachines("reconnect", "manual", AGENTS)).machines;
  const connect = (address: string, m: { id: string; credential?: string }): Promise<WebSocket> =>
    new Promise((resolve, reject) => {
      const ws = new WebSocket(`wss://${address}/v1/agent`, {
        ca: caCert,
        servername: CONTROLLER_TLS_NAME,
        headers: { authorization: `Agent ${uuid}/${m.id}/${m.credential!}` },
      } as WebSocket.ClientOptions);
      ws.once("open", () => resolve(ws));
      ws.once("error", reject);
      ws.once("unexpected-response", () => {
        ws.terminate();
        reject(new Error("refused"));
      });
    });
  // Dials until a login is accepted (the controller turns a storm away with 503), with jittered backoff as agents do.
  const dialUntilIn = async (
    pick: () => string,
    m: { id: string; credential?: string },
    first: boolean,
  ): Promise<WebSocket> => {
    for (let attempt = 0; ; attempt++) {
      if (!first || attempt > 0) await sleep(Math.random() * Math.min(5000, 500 * 2 ** attempt));
      const ws = await connect(pick(), m).catch(() => undefined);
      if (ws) return ws;
    }
  };
  const allBackMs: number[] = [];
  const statusMs: number[] = [];
  for (let trial = 0; trial < TRIALS; trial++) {
    const c = await healthy();
    const voters = c.members.filter((m) => m.hasVote);
    const target = voters[trial % voters.length]!;
    const victim = replicas.find((h) => h.ip === target.host)!;
    const others = voters.filter((m) => m !== target).flatMap((m) => m.addresses);
    const sockets: WebSocket[] = [];
    let killedAt = 0;
    const done = new Promise<void>((resolve) => {
      let pending = AGENTS;
      for (const m of machines) {
        void dialUntilIn(() => target.addresses[0]!, m, true).then((ws) => {
          sockets.push(ws);
          ws.on("error", () => undefined);
          ws.once("close", () => {
            void dialUntilIn(() => others[Math.floor(Math.random() * others.length)]!, m, false).then((again) => {
              sockets.push(again);
              if (--pending === 0) resolve();
            });
          });
        });
      }
    });
    while (sockets.length < AGENTS) await sleep(100);
    killedAt = performance.now();
    await victim.kill();
    await done;
    allBackMs.push(performance.now() - killedAt);
    // And the controller agrees: every machine is started again.
    for (;;) {
      const list = await client.listMachines("reconnect").catch(() => []);
      if (list.length === AGENTS && list.every((m) => m.status === "started")) break;
      await sleep(200);
    }
    statusMs.push(performance.now() - killedAt);
    for (const ws of sockets) ws.terminate();
    await restart(victim);
  }
  report(`HA: ${AGENTS} simulated agents on a replica whose host is killed (${TRIALS} trials)`, {
    "all reconnected to other replicas: median (s)": (median(allBackMs) / 1000).toFixed(1),
    "all reconnected max (s)": (Math.max(...allBackMs) / 1000).toFixed(1),
    "all shown started by the controller: median (s)": (median(statusMs) / 1000).toFixed(1),
    "shown started max (s)": (Math.max(...statusMs) / 1000).toFixed(1),
  });
}

type Cluster = (c?: ControllerClient) => Promise<ClusterInfo | undefined>;
type HostOf = (c: ClusterInfo, pick: (m: ClusterInfo["members"][number]) => boolean) => TestHost;

/** Creates models one after another (about 20/s) and records when each was acknowledged. */
function ledgerWriter(
  c: ControllerClient,
  tag: string,
): { acks: number[]; falseFailures: number; stop(): Promise<void> } {
  const w = { acks: [] as number[], falseFailures: 0, stopped: false, loop: Promise.resolve() };
  w.loop = (async () => {
    for (let i = 0; !w.stopped; i++) {
      try {
        await c.createModel(`${tag}-${i}`);
        w.acks.push(performance.now());
      } catch (err) {
        // Every name is tried once: "already exists" can only be our own retry of a write that worked.
        if ((err as { code?: string }).code === "already-exists") w.falseFailures++;
      }
      await sleep(50);
    }
  })();
  return {
    acks: w.acks,
    get falseFailures() {
      return w.falseFailures;
    },
    async stop() {
      w.stopped = true;
      await w.loop;
    },
  };
}

/** The longest time in [from, to] with no acknowledged write (counting from the last one before `from`). */
function longestGap(acks: number[], from: number, to: number): number {
  const before = acks.filter((a) => a < from).pop() ?? from;
  const inside = acks.filter((a) => a >= from && a <= to);
  let gap = 0;
  let last = before;
  for (const a of inside) {
    gap = Math.max(gap, a - last);
    last = a;
  }
  return Math.max(gap, to - last > 0 && inside.length === 0 ? to - last : 0);
}

async function benchLeaderKill(
  TRIALS: number,
  mk: (a: string[]) => ControllerClient,
  addresses: string[],
  cluster: Cluster,
  healthy: () => Promise<ClusterInfo>,
  hostOf: HostOf,
  restart: (h: TestHost) => Promise<void>,
  bootstrapS: number,
): Promise<void> {
  const gapMs: number[] = [];
  const leaderMs: number[] = [];
  let falseFailures = 0;
  for (let trial = 0; trial < TRIALS; trial++) {
    const before = await healthy();
    const victim = hostOf(before, (m) => m.leader);
    // The writer's client starts out on the replica that dies, as a CLI connected to it would.
    const onVictim = mk([
      ...addresses.filter((a) => a.startsWith(`${victim.ip}:`)),
      ...addresses.filter((a) => !a.startsWith(`${victim.ip}:`)),
    ]);
    const observer = mk(addresses.filter((a) => !a.startsWith(`${victim.ip}:`)));
    const writer = ledgerWriter(onVictim, `k${trial}`);
    await sleep(1000 + Math.random() * 1000); // anywhere in the lease renewal cycle
    const killedAt = performance.now();
    await victim.kill();
    let newLeaderAt = 0;
    while (!newLeaderAt) {
      const c = await cluster(observer);
      if (c?.members.some((m) => m.leader && m.host !== victim.ip)) newLeaderAt = performance.now();
      else await sleep(50);
    }
    // Keep writing until writes flow again, then a little more.
    while (!writer.acks.some((a) => a > killedAt)) await sleep(50);
    await sleep(2000);
    await writer.stop();
    gapMs.push(longestGap(writer.acks, killedAt, performance.now()));
    leaderMs.push(newLeaderAt - killedAt);
    falseFailures += writer.falseFailures;
    await restart(victim);
  }
  report(
    `HA: leader's host killed, writer on that replica at ~20/s (3 replicas with etcd on SSH test hosts, ${TRIALS} trials)`,
    {
      "bootstrap onto 3 hosts (s)": bootstrapS.toFixed(1),
      "longest time with no acknowledged write: median (s)": (median(gapMs) / 1000).toFixed(2),
      "no acknowledged write max (s)": (Math.max(...gapMs) / 1000).toFixed(2),
      "new controller leader (singleton work): median (s)": (median(leaderMs) / 1000).toFixed(2),
      "new leader max (s)": (Math.max(...leaderMs) / 1000).toFixed(2),
      "writes reported failed that had worked": falseFailures,
    },
  );
}

/** Cuts a follower's or the leader's host off for 20 s, heals it, and measures what the heal disturbs. */
async function benchPartitionHeal(
  TRIALS: number,
  cutS: number,
  mk: (a: string[]) => ControllerClient,
  addresses: string[],
  cluster: Cluster,
  healthy: () => Promise<ClusterInfo>,
  hostOf: HostOf,
  who: "follower" | "leader",
): Promise<void> {
  const cutGapMs: number[] = [];
  const healGapMs: number[] = [];
  let healElections = 0;
  let healLeaderMoves = 0;
  let falseFailures = 0;
  for (let trial = 0; trial < TRIALS; trial++) {
    const before = await healthy();
    const victim = hostOf(before, (m) => m.hasVote && (who === "leader" ? m.leader : !m.leader));
    const others = addresses.filter((a) => !a.startsWith(`${victim.ip}:`));
    const observer = mk(others);
    const writer = ledgerWriter(mk(addresses), `p${who[0]}${trial}`);
    await sleep(1000);
    const cutAt = performance.now();
    await victim.cut();
    await sleep(cutS * 1000);
    const atHeal = await cluster(observer);
    const healedAt = performance.now();
    await victim.restore();
    await sleep(6000);
    const after = await cluster(observer);
    await writer.stop();
    cutGapMs.push(longestGap(writer.acks, cutAt, healedAt));
    healGapMs.push(longestGap(writer.acks, healedAt, healedAt + 6000));
    if (atHeal?.raftTerm !== after?.raftTerm) healElections++;
    if (atHeal?.members.find((m) => m.leader)?.name !== after?.members.find((m) => m.leader)?.name) healLeaderMoves++;
    falseFailures += writer.falseFailures;
  }
  report(`HA: ${who} cut off ${cutS} s then healed, writer at ~20/s (${TRIALS} trials)`, {
    "longest write gap from the cut: median (s)": (median(cutGapMs) / 1000).toFixed(2),
    "from the cut max (s)": (Math.max(...cutGapMs) / 1000).toFixed(2),
    "longest write gap in 6 s after the heal: median (s)": (median(healGapMs) / 1000).toFixed(2),
    "after the heal max (s)": (Math.max(...healGapMs) / 1000).toFixed(2),
    "heals that caused an etcd election": `${healElections} of ${TRIALS}`,
    "heals that moved the controller leader": `${healLeaderMoves} of ${TRIALS}`,
    "writes reported failed that had worked": falseFailures,
  });
}
