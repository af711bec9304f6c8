/**
 * High availability on real sshd test hosts: controllers with their own etcd members (TLS from the
 * controller CA), installed over SSH. One cluster is grown from a single replica on the embedded
 * store (enable-ha) and then put through faults; a writer records every acknowledged write, and
 * after each fault all of them must be there and the agent connected.
 */
import test from "ava";
import type { ExecutionContext } from "ava";
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { promisify } from "node:util";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ClusterInfo, MigrationInfo } from "../api";
import { ControllerClient, readOperatorDir } from "../api";
import { loadClientConfig } from "../cli";
import type { TestHost } from "./harness/hosts";
import { TestLab } from "./harness/hosts";
import { eventually } from "./harness/eventually";
import { cliRunner } from "./harness/cli";
import { replicaBackSince } from "./harness/controller";

const root = process.getuid?.() === 0;
const ha = root ? test.serial : test.skip; // namespaces and sshd need root

let lab: TestLab;
let home: string;
let steward: ReturnType<typeof cliRunner>;
let client: ControllerClient;
let caCert: string;
let password: string;
/** Every model name whose creation was acknowledged, across all tests. */
const acked: string[] = [];
/**
 * Writes refused as "already exists": each name is tried once, so only the client's own retry of
 * a write that had worked could cause one (a success turned into a failure).
 */
const falseFailures: string[] = [];

const REPLACE_AFTER_S = 12;
const run = (cmd: string): Promise<unknown> => promisify(execFile)("sh", ["-c", cmd]);
const hostKeyArgs = (hosts: TestHost[]): string[] => hosts.flatMap((h) => ["--host-key", h.hostKeyFingerprint]);
const replicaHosts = (): TestHost[] => lab.hosts.slice(0, 3);

test.before(async () => {
  if (!root) return;
  // Hosts 1-3: replicas; 4: the spare; 5 (and 7, for the migration): machines with an agent; 6: the controller a model migrates to.
  lab = await TestLab.create(7);
  home = await mkdtemp(join(tmpdir(), "steward-ha-"));
  steward = cliRunner(home, home);
  process.env.HA_TEST_SSH_KEY = lab.clientKey;
});
test.after.always(async () => {
  client?.close();
  await lab?.close();
  if (home) await rm(home, { recursive: true, force: true });
});

function newClient(addresses: string[]): ControllerClient {
  return new ControllerClient({ addresses, caCert, user: "admin", password, timeoutMs: 4000 });
}

async function cluster(c = client): Promise<ClusterInfo> {
  return (await c.controllerInfo()).cluster;
}

/** Three voters present, one controller leader, no learner, quorum. */
async function healthy(t: ExecutionContext, what: string, timeoutMs = 90_000): Promise<ClusterInfo> {
  return eventually(
    what,
    async () => {
      const c = await cluster().catch(() => undefined);
      if (!c) return undefined;
      const voters = c.members.filter((m) => m.hasVote);
      return c.quorum &&
        voters.length === 3 &&
        voters.every((m) => m.present) &&
        voters.filter((m) => m.leader).length === 1
        ? c
        : undefined;
    },
    timeoutMs,
    300,
  ).catch(async (err: unknown) => {
    t.log(JSON.stringify(await cluster().catch(() => undefined), null, 1));
    throw err;
  });
}

/** Creates models until stopped; a creation counts once the controller acknowledged it. */
function startWriter(c: ControllerClient, tag: string): { stop(): Promise<number> } {
  let stopped = false;
  let n = 0;
  const loop = (async () => {
    for (let i = 0; !stopped; i++) {
      const name = `${tag}-${i}`;
      try {
        await c.createModel(name);
        acked.push(name);
        n++;
      } catch (err) {
        if ((err as { code?: string }).code === "already-exists") falseFailures.push(name);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  })();
  const writer = {
    async stop() {
      stopped = true;
      await loop;
      return n;
    },
  };
  writers.push(writer);
  return writer;
}
const writers: { stop(): Promise<number> }[] = [];
// A failed test must not leave its writer running (the worker would never exit).
test.afterEach.always(async () => {
  await Promise.all(writers.splice(0).map((w) => w.stop()));
});

async function assertNothingLost(t: ExecutionContext): Promise<void> {
  const present = new Set((await client.listModels()).map((m) => m.name));
  if (acked.some((m) => !present.has(m))) {
    for (const a of client.addresses) {
      const c = newClient([a]);
      const h = await c.call<{ revision: number }>("GET", "/v1/health").catch((e: Error) => e.message);
      const n = await c.listModels().then(
        (l) => l.length,
        (e: Error) => e.message,
      );
      t.log(a, JSON.stringify(h), n, acked.length);
      c.close();
    }
  }
  t.deepEqual(
    acked.filter((m) => !present.has(m)),
    [],
    "every acknowledged write is present",
  );
  t.deepEqual(falseFailures, [], "no write that worked was reported as failed");
}

async function agentConnected(t?: ExecutionContext): Promise<void> {
  await eventually(
    "the agent on host 5 connected",
    async () => (await client.listMachines("app")).every((m) => m.status === "started"),
    60_000,
    300,
  ).catch(async (err: unknown) => {
    const h5 = lab.hosts[4]!;
    t?.log(
      (
        await h5.exec(
          "grep -h controllerAddresses -A4 /var/lib/steward/agents/*/agent.json; tail -n 25 /var/lib/steward/agents/*/*.log",
        )
      ).stdout,
    );
    t?.log(JSON.stringify(await client.listMachines("app")));
    throw err;
  });
}

/** Boots `h` and waits until its replica is back (present since the boot, not just still leased). */
async function boot(t: ExecutionContext, h: TestHost): Promise<void> {
  const t0 = Date.now();
  await h.start();
  await eventually(`the replica on ${h.ip} back`, () => replicaBackSince(client, h.ip, t0), 90_000, 300).catch(
    async (err: unknown) => {
      t.log(
        (
          await h.exec(
            'grep -v \'"level":"info"\' /var/lib/steward/controller/etcd.log | tail -n 10; tail -n 15 /var/lib/steward/controller/controller.log',
          )
        ).stdout,
      );
      throw err;
    },
  );
}

/** The host of the controller leader: any lab host, since the spare (host 4) becomes a replica when one is lost for good. */
const leaderHost = (c: ClusterInfo): TestHost => lab.hosts.find((h) => h.ip === c.members.find((m) => m.leader)!.host)!;

ha("enable-ha grows a single embedded-store replica to three over SSH; nothing written before is lost", async (t) => {
  const [h1, h2, h3] = replicaHosts() as [TestHost, TestHost, TestHost];
  const boot = await steward(
    "bootstrap",
    `ssh:root@${h1.ip}`,
    "ha",
    "--key-env",
    "HA_TEST_SSH_KEY",
    ...hostKeyArgs([h1]),
  );
  if (boot.code !== 0) t.log(boot.stderr, boot.stdout);
  t.is(boot.code, 0);
  const entry = (await loadClientConfig(home)).controllers.ha!;
  caCert = entry.caCert;
  password = entry.password!;
  client = newClient(entry.addresses);
  for (let i = 0; i < 5; i++) {
    await client.createModel(`before-${i}`);
    acked.push(`before-${i}`);
  }
  t.is((await cluster()).store, "embedded");

  const grow = await steward(
    "enable-ha",
    "-n",
    "3",
    "--to",
    `ssh:root@${h2.ip},ssh:root@${h3.ip}`,
    "--key-env",
    "HA_TEST_SSH_KEY",
    ...hostKeyArgs([h2, h3]),
    "--replace-after",
    `${REPLACE_AFTER_S}s`,
  );
  if (grow.code !== 0) t.log(grow.stderr, grow.stdout);
  t.is(grow.code, 0);
  t.regex(grow.stderr, /moving the controller's state into etcd/);
  t.regex(grow.stdout, /highly available: 3 voters/);
  client.close();
  const addresses = (await loadClientConfig(home)).controllers.ha!.addresses;
  t.is(addresses.length, 3, "the client now knows every replica");
  client = newClient(addresses);
  const c = await healthy(t, "three healthy voters");
  t.is(c.store, "etcd");
  t.deepEqual(
    c.members
      .filter((m) => m.hasVote)
      .map((m) => m.host)
      .sort(),
    [h1.ip, h2.ip, h3.ip].sort(),
  );
  await assertNothingLost(t);

  // etcd accepts only clients with a certificate from the controller CA.
  const plain = await h2.exec(`curl -sk --max-time 3 https://${h1.ip}:2379/version`);
  t.not(plain.code, 0, "etcd refuses a client without a CA-issued certificate");

  const show = await steward("show-controller");
  t.is(show.code, 0, show.stderr);
  t.regex(show.stdout, /store etcd, 3 of 3 wanted voters up/);
  t.regex(show.stdout, /controller/);

  // The spare pool: the faults below must not use it, except when a replica is lost for good.
  const spare = lab.hosts[3]!;
  const added = await steward(
    "add-spare",
    `ssh:root@${spare.ip}`,
    "--key-env",
    "HA_TEST_SSH_KEY",
    ...hostKeyArgs([spare]),
  );
  if (added.code !== 0) t.log(added.stderr);
  t.is(added.code, 0);
  t.is((await cluster()).spares.length, 1);
  // The spare's key is kept sealed: no replica's disk (etcd's files, logs) holds it in plain text.
  const keyLine = lab.clientKey.split("\n")[2]!;
  for (const h of [h1, h2, h3])
    t.is(
      (await h.exec(`grep -rlF '${keyLine}' /var/lib/steward /etc/steward`)).stdout,
      "",
      `${h.name} holds the spare's private key in plain text`,
    );
  // A host a replica runs on is never a spare (the keeper would wipe it to install there).
  const own = await steward("add-spare", `ssh:root@${h1.ip}`, "--key-env", "HA_TEST_SSH_KEY", ...hostKeyArgs([h1]));
  t.not(own.code, 0);
  t.regex(own.stderr, new RegExp(`${h1.ip.replace(/\./g, "\\.")} already runs a replica of this controller`));

  // One request may add many machines (one transaction, well over etcd's default 128 operations).
  await client.createModel("bulk");
  t.is((await client.addMachines("bulk", "manual", 300)).machines.length, 300);
  await client.destroyModel("bulk", true);

  // A machine with an agent, for the fault tests to check it stays connected.
  await client.createModel("app");
  const h5 = lab.hosts[4]!;
  const add = await steward(
    "add-machine",
    "-m",
    "app",
    `ssh:root@${h5.ip}`,
    "--key-env",
    "HA_TEST_SSH_KEY",
    ...hostKeyArgs([h5]),
  );
  t.is(add.code, 0, add.stderr);
  await agentConnected(t);
});

ha("killing the leader's host: another replica leads, writes go on, the host rejoins when it returns", async (t) => {
  const before = await healthy(t, "a healthy cluster");
  const victim = leaderHost(before);
  const writer = startWriter(newClient(client.addresses.filter((a) => !a.startsWith(`${victim.ip}:`))), "kl");
  await new Promise((r) => setTimeout(r, 1000));
  await victim.kill();
  await eventually(
    "a new controller leader",
    async () => {
      const c = await cluster().catch(() => undefined);
      const l = c?.members.find((m) => m.leader);
      return l && l.host !== victim.ip ? l : undefined;
    },
    30_000,
    200,
  );
  const n = await writer.stop();
  t.true(n > 0);
  await boot(t, victim);
  await healthy(t, "the killed host rejoined");
  await assertNothingLost(t);
  await agentConnected(t);
});

/** Creates a model through the replica on `h`, from inside that host; returns the HTTP status. */
async function writeFromInside(h: TestHost, model: string): Promise<string> {
  const api = "https://127.0.0.1:17070/v1";
  const curl = `curl -sk --max-time 10 -H 'content-type: application/json'`;
  const login = await h.exec(`${curl} -X POST ${api}/login -d '${JSON.stringify({ user: "admin", password })}'`);
  const token = (JSON.parse(login.stdout || "{}") as { token?: string }).token;
  if (!token) return `login: ${login.code} ${login.stdout}`;
  return (
    await h.exec(
      `${curl} -o /dev/null -w '%{http_code}' -H 'authorization: Bearer ${token}' -X POST ${api}/models -d '{"name":"${model}"}'`,
    )
  ).stdout;
}

const follower = (c: ClusterInfo): TestHost =>
  replicaHosts().find((h) => h.ip !== leaderHost(c).ip && c.members.some((m) => m.hasVote && m.host === h.ip))!;

ha("killing a follower's host: writes go on; it rejoins when it returns", async (t) => {
  const victim = follower(await healthy(t, "a healthy cluster"));
  const writer = startWriter(newClient(client.addresses), "kf");
  await new Promise((r) => setTimeout(r, 500));
  await victim.kill();
  await new Promise((r) => setTimeout(r, 3000));
  await boot(t, victim);
  t.true((await writer.stop()) > 0);
  await healthy(t, "the follower rejoined");
  await assertNothingLost(t);
  await agentConnected(t);
});

ha("a partitioned minority stops taking writes; the majority carries on; healing rejoins it", async (t) => {
  const victim = follower(await healthy(t, "a healthy cluster"));
  const isolated = newClient([`${victim.ip}:17070`]);
  const majority = newClient(client.addresses.filter((a) => !a.startsWith(`${victim.ip}:`)));
  const writer = startWriter(majority, "pm");
  let termAtHeal: number | undefined;
  let leaderAtHeal: string | undefined;
  try {
    await victim.cut();
    // The cut-off replica's etcd member has no leader: a write through it is refused, not
    // acknowledged. It is reached from inside its own namespace, the only place that still can.
    // Until it notices, a write may still hang (curl's 000) or, early on, go through.
    const seen: string[] = [];
    const status = await eventually(
      "the isolated replica refuses a write",
      async () => {
        const code = await writeFromInside(victim, `iso-${Date.now()}`);
        seen.push(code);
        return /^[45]\d\d$/.test(code) ? code : undefined;
      },
      30_000,
      500,
    ).catch(async (err: unknown) => {
      t.log(
        [...new Set(seen)],
        (await victim.exec("ss -ltnp; ip -o addr; ps -ef; tail -n 30 /var/lib/steward/controller/controller.log"))
          .stdout,
      );
      throw err;
    });
    t.is(status, "503", `answers seen: ${seen.join(", ")}`);
    await new Promise((r) => setTimeout(r, 3000));
    t.true((await writer.stop()) > 0, "the majority kept acknowledging writes");
    const view = await eventually(
      "the majority sees the minority gone",
      async () => {
        const c = await cluster(majority);
        return c.members.some((m) => m.host === victim.ip && !m.present) ? c : undefined;
      },
      30_000,
      300,
    );
    t.true(view.quorum);
    termAtHeal = (await cluster(majority)).raftTerm;
    leaderAtHeal = view.members.find((m) => m.leader)?.name;
  } finally {
    await victim.restore();
    isolated.close();
  }
  await healthy(t, "the healed replica rejoined");
  // The returning member must not depose the healthy etcd leader (etcd's pre-vote): no election,
  // so no second outage, and the controller leader stays where it was.
  await new Promise((r) => setTimeout(r, 3000));
  const after = await cluster(majority);
  majority.close();
  t.is(typeof termAtHeal, "number");
  t.is(after.raftTerm, termAtHeal, "healing caused no etcd election");
  t.is(after.members.find((m) => m.leader)?.name, leaderAtHeal, "the controller leader did not change");
  await assertNothingLost(t);
  await agentConnected(t);
});

ha(
  "a rolling restart that gives every replica a new address, agents restarted too, strands neither agents nor clients",
  async (t) => {
    t.timeout(240_000);
    await healthy(t, "a healthy cluster");
    const before = replicaHosts().map((h) => h.ip);
    const agentHost = lab.hosts[4]!;
    const writer = startWriter(client, "rr");
    for (const [i, h] of replicaHosts().entries()) {
      const old = h.ip;
      await h.readdress(`${lab.subnet}.${110 + h.index}`);
      // The agents' host reboots while the replicas move: it starts from the addresses it persisted.
      if (i === 1) await agentHost.restart();
      // Until its presence lease runs out the old incarnation still looks present, and the member's
      // host moves before the new incarnation serves: wait until it announces its new address itself.
      await eventually(
        `the replica from ${old} back at ${h.ip}`,
        async () => {
          const c = await cluster().catch(() => undefined);
          return c?.members.some(
            (m) => m.hasVote && m.present && m.host === h.ip && m.addresses.some((a) => a.startsWith(`${h.ip}:`)),
          )
            ? c
            : undefined;
        },
        90_000,
        300,
      ).catch(async (err: unknown) => {
        t.log(
          (
            await h.exec(
              'grep -v \'"level":"info"\' /var/lib/steward/controller/etcd.log | tail -n 15; tail -n 20 /var/lib/steward/controller/controller.log',
            )
          ).stdout,
        );
        throw err;
      });
      await healthy(t, "three healthy voters");
      await agentConnected(t);
      // The CLI, used between steps, stores the addresses it is given (one it knows must still work).
      const show = await steward("show-controller");
      t.is(show.code, 0, show.stderr);
    }
    t.true((await writer.stop()) > 0, "writes went on during the rolling restart");
    const after = await cluster();
    t.deepEqual(
      after.members
        .filter((m) => m.hasVote)
        .map((m) => m.host)
        .sort(),
      replicaHosts()
        .map((h) => h.ip)
        .sort(),
    );
    t.false(
      replicaHosts().some((h) => before.includes(h.ip)),
      "every replica has a new address",
    );
    // The client followed the replicas through the answers' address header; the agent through its view.
    t.false(
      client.addresses.some((a) => before.some((ip) => a.startsWith(`${ip}:`))),
      `client addresses: ${client.addresses.join(", ")}`,
    );
    // (Once the old incarnations' presence leases have run out, the agent is sent the list without them.)
    let persisted = "";
    const clean = await eventually(
      "the agent persisted only the new addresses",
      async () => {
        persisted = (await agentHost.exec("cat /var/lib/steward/agents/*/agent.json")).stdout;
        return !before.some((ip) => persisted.includes(`"${ip}:`));
      },
      30_000,
      500,
    ).catch(() => false);
    if (!clean)
      t.log(
        (await agentHost.exec("tail -n 30 /var/lib/steward/agents/*/*.log")).stdout,
        JSON.stringify(await cluster(), null, 1),
      );
    t.true(clean, `the agent persisted only the new addresses: ${persisted}`);
    const stored = (await loadClientConfig(home)).controllers.ha!.addresses;
    t.false(
      stored.some((a) => before.some((ip) => a.startsWith(`${ip}:`))),
      `stored addresses: ${stored.join(", ")}`,
    );
    await assertNothingLost(t);
  },
);

ha("a flapping host (down and up faster than replaceAfter) is not replaced", async (t) => {
  const victim = follower(await healthy(t, "a healthy cluster"));
  for (let i = 0; i < 2; i++) {
    await victim.kill();
    await new Promise((r) => setTimeout(r, 2000));
    await boot(t, victim);
    await healthy(t, "the flapping host back");
  }
  const c = await cluster();
  t.false(
    c.keeper.history.some((e) => /removing/.test(e.message)),
    "no replica was removed",
  );
  t.is(c.spares.length, 1, "the spare host is still unused");
});

ha(
  "losing two of three: no replacement without quorum, the API says why, and the cluster recovers when one returns",
  async (t) => {
    const c0 = await healthy(t, "a healthy cluster");
    const [a, b] = replicaHosts().filter((h) => h.ip !== leaderHost(c0).ip) as [TestHost, TestHost];
    const survivor = leaderHost(c0);
    const only = newClient([`${survivor.ip}:17070`]);
    try {
      await Promise.all([a.kill(), b.kill()]);
      const degraded = await eventually(
        "the survivor reports no quorum",
        async () => {
          const c = await cluster(only).catch(() => undefined);
          return c && !c.quorum ? c : undefined;
        },
        30_000,
        500,
      );
      t.regex(degraded.degraded ?? "", /no quorum: 1 of 3 voting members answer, 2 are needed/);
      // Well past replaceAfter: nothing may have been replaced.
      await new Promise((r) => setTimeout(r, (REPLACE_AFTER_S + 3) * 1000));
      const still = await cluster(only).catch(async (err: unknown) => {
        t.log(
          (await survivor.exec("grep -i 'unexpected error' /var/lib/steward/controller/controller.log | tail -n 3"))
            .stdout,
        );
        throw err;
      });
      t.false(still.quorum);
      t.is(still.members.filter((m) => m.hasVote).length, 3, "no member was removed");
      t.is(still.spares.length, 1, "the spare host was not used");
      await a.start();
    } finally {
      only.close();
    }
    await eventually(
      "quorum back with two",
      async () => (await cluster().catch(() => undefined))?.quorum === true,
      60_000,
      500,
    );
    await boot(t, b);
    await healthy(t, "all three back");
    await assertNothingLost(t);
    await agentConnected(t);
  },
);

ha("a replica lost for good is replaced from the spare pool; when the lost host returns it stands down", async (t) => {
  t.timeout(240_000);
  const spare = lab.hosts[3]!;
  const c0 = await healthy(t, "a healthy cluster");
  const lost = follower(c0);
  const lostName = c0.members.find((m) => m.host === lost.ip)!.name;
  const writer = startWriter(newClient(client.addresses), "lg");
  await lost.kill();
  const replaced = await eventually(
    "three healthy voters again, one on the spare host",
    async () => {
      const c = await cluster().catch(() => undefined);
      const voters = c?.members.filter((m) => m.hasVote) ?? [];
      return c && voters.length === 3 && voters.every((m) => m.present) && voters.some((m) => m.host === spare.ip)
        ? c
        : undefined;
    },
    180_000,
    500,
  ).catch(async (err: unknown) => {
    t.log(JSON.stringify(await cluster().catch(() => undefined), null, 1));
    t.log(
      (
        await spare.exec(
          'tail -40 /var/lib/steward/controller/controller.log; ls /var/lib/steward/controller; grep -v \'"level":"info"\' /var/lib/steward/controller/etcd.log | tail -30',
        )
      ).stdout,
    );
    for (const h of replicaHosts())
      t.log(
        h.ip,
        (await h.exec("grep -i 'keeper\\|leader' /var/lib/steward/controller/controller.log | tail -15")).stdout,
      );
    throw err;
  });
  t.true((await writer.stop()) > 0);
  t.deepEqual(replaced.members.find((m) => m.name === lostName)?.state, "removed");
  t.true(
    replaced.keeper.history.some((e) => e.message.includes(`removing ${lostName}`)),
    "the removal is in the keeper's history",
  );
  t.is(replaced.spares.length, 0, "the spare was used");

  // The lost host comes back: it finds it was replaced and stands down without harm.
  await lost.start();
  await eventually(
    "the returned replica stood down",
    async () => (await lost.exec("cat /var/lib/steward/controller/stood-down")).code === 0,
    60_000,
    500,
  );
  const after = await healthy(t, "still three healthy voters");
  t.false(after.members.some((m) => m.host === lost.ip && m.hasVote));
  // Clients are still given only live replicas' addresses.
  t.false((await client.controllerInfo()).addresses.some((a) => a.startsWith(`${lost.ip}:`)));
  await assertNothingLost(t);
  await agentConnected(t);
});

ha(
  "a model migrates off the HA controller while its leader replica dies during VALIDATION: the next leader resumes, and the model lands whole",
  async (t) => {
    t.timeout(300_000);
    const [h5, h6, h7] = [lab.hosts[4]!, lab.hosts[5]!, lab.hosts[6]!];
    const boot6 = await steward(
      "bootstrap",
      `ssh:root@${h6.ip}`,
      "tgt",
      "--key-env",
      "HA_TEST_SSH_KEY",
      ...hostKeyArgs([h6]),
    );
    t.is(boot6.code, 0, boot6.stderr);
    const target = (await loadClientConfig(home)).controllers.tgt!;
    const tgt = new ControllerClient({
      addresses: target.addresses,
      caCert: target.caCert,
      user: "admin",
      password: target.password!,
      timeoutMs: 4000,
    });
    // A second machine, on host 7: while it cannot reach the target it holds QUIESCE, which gives
    // time to cut host 5's agent from the target too, after that one has answered QUIESCE; healing
    // host 7 then lets the migration on to VALIDATION, where it waits for host 5, for sure.
    const add = await steward(
      "add-machine",
      "-c",
      "ha",
      "-m",
      "app",
      `ssh:root@${h7.ip}`,
      "--key-env",
      "HA_TEST_SSH_KEY",
      ...hostKeyArgs([h7]),
    );
    t.is(add.code, 0, add.stderr);
    await agentConnected(t);
    // A unit on host 5's machine, so there is a hook history to keep.
    const motd = await readOperatorDir(join(__dirname, "..", "..", "operators", "motd"));
    await client.uploadOperator(motd.bundle);
    await client.deploy("app", { name: "motd", operator: motd.hash, to: ["0"], config: { message: "before" } });
    await eventually(
      "motd/0 active",
      async () =>
        (await client.status("app")).applications.motd?.units["motd/0"]?.workload.current === "active" || undefined,
      90_000,
      300,
    );
    await healthy(t, "a healthy cluster");

    const cut = (h: TestHost, op: "A" | "D"): Promise<unknown> =>
      run(`ip netns exec ${h.netns} iptables -w -${op} OUTPUT -d ${h6.ip} -j DROP`);
    const migration = (): Promise<MigrationInfo> => client.call<MigrationInfo>("GET", "/v1/models/app/migration");
    await cut(h7, "A");
    const started = await steward("migrate", "app", "tgt", "-c", "ha", "--no-wait");
    t.is(started.code, 0, started.stdout + started.stderr);
    const quiesce = await eventually(
      "host 5's agent answered QUIESCE, host 7's cannot",
      async () => {
        const m = await migration();
        return m.phase === "QUIESCE" && m.agents?.reported === 1 ? m : undefined;
      },
      60_000,
      200,
    );
    t.deepEqual(quiesce.agents?.waitingFor, ["1"]);
    await cut(h5, "A");
    await cut(h7, "D");
    const validating = await eventually(
      "VALIDATION waiting for host 5's agent",
      async () => {
        const m = await migration();
        return m.phase === "VALIDATION" && m.agents?.reported === 1 ? m : undefined;
      },
      60_000,
      200,
    );
    t.deepEqual(validating.agents?.waitingFor, ["0"]);

    const c0 = await cluster();
    const victim = leaderHost(c0);
    await victim.kill();
    await eventually(
      "another replica leads",
      async () => {
        const c = await cluster().catch(() => undefined);
        return c?.members.some((m) => m.leader && m.host !== victim.ip) || undefined;
      },
      60_000,
      300,
    );
    await cut(h5, "D");
    const done = await eventually(
      "the migration done",
      async () => {
        const m = await client.call<MigrationInfo>("GET", "/v1/models/app/migration").catch(() => undefined);
        return m && (m.phase === "DONE" || m.phase === "ABORTDONE") ? m : undefined;
      },
      120_000,
      500,
    );
    t.is(done.phase, "DONE", done.failure);
    t.deepEqual(
      done.history.map((h) => h.phase),
      ["QUIESCE", "IMPORT", "VALIDATION", "SUCCESS", "LOGTRANSFER", "REAP", "DONE"],
      "resumed, not started over",
    );

    // On the target: the machine's agent is there, its unit active, and a change reaches it.
    await eventually(
      "the agents on hosts 5 and 7 connected to the target",
      async () => {
        const ms = await tgt.listMachines("app");
        return (ms.length === 2 && ms.every((m) => m.status === "started")) || undefined;
      },
      60_000,
      300,
    );
    await tgt.updateApplication("app", "motd", { config: { message: "after" } });
    await eventually(
      "the target's change applied",
      async () =>
        (await tgt.status("app")).applications.motd?.units["motd/0"]?.workload.message.includes("after") || undefined,
      60_000,
      300,
    );
    t.regex(
      (await h5.exec("cat /var/lib/steward/agents/*/agent.json")).stdout,
      new RegExp(h6.ip.replace(/\./g, "\\.")),
    );
    await victim.start();
    tgt.close();
  },
);
