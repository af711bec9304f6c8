/**
 * The provider over SSH: examples/bare-metal's stack, through the SDK's dynamic-provider process
 * (test/harness/pulumi-engine.ts), on real sshd test hosts. The controller starts as one replica and
 * grows to three by changing its hosts and `replicas` (an update that runs enable-ha, moving its
 * state into etcd); destroy leaves every host as it was.
 */
import test from "ava";
import * as pulumi from "@pulumi/pulumi";
import { ControllerClient } from "../api";
import { bareMetal } from "../examples/bare-metal/stack";
import type { ControllerConnection, SshHost } from "../provider";
import { operatorsDir } from "./harness/controller";
import type { TestHost } from "./harness/hosts";
import { TestLab } from "./harness/hosts";
import { eventually } from "./harness/eventually";
import { providerTestBed } from "./harness/provider-bed";

const root = process.getuid?.() === 0;
const ssh = root ? test.serial : test.skip; // namespaces and sshd need root

let lab: TestLab;
const { engine } = providerTestBed(test, {
  when: root,
  setUp: async () => {
    // Hosts 1-3: controller replicas; 4: a spare; 5 and 6: workers.
    lab = await TestLab.create(6);
  },
  tearDown: async () => {
    await lab?.close();
  },
});

const sshHost = (h: TestHost): SshHost => ({ host: h.ip, hostKey: h.hostKeyFingerprint });
const stack = (controllers: number, spares: number) => () => {
  bareMetal({
    controllers: lab.hosts.slice(0, controllers).map(sshHost),
    spares: lab.hosts.slice(3, 3 + spares).map(sshHost),
    workers: lab.hosts.slice(4, 6).map(sshHost),
    privateKey: pulumi.secret(lab.clientKey),
    operatorsDir,
  });
};

function client(): ControllerClient {
  const c = engine.get("prod")!.outputs.connection as ControllerConnection;
  return new ControllerClient({ addresses: c.addresses, caCert: c.caCert, user: c.user, password: c.password });
}

async function unitsActive(c: ControllerClient): Promise<string[]> {
  const s = await c.status("shop");
  return Object.values(s.applications)
    .flatMap((a) => Object.entries(a.units).map(([n, u]) => `${n} ${u.workload.current}/${u.agent.current}`))
    .sort();
}

ssh(
  "bare-metal on test hosts: one replica, then replicas 1 → 3 as an update (enable-ha); units stay active; destroy leaves the hosts clean",
  async (t) => {
    t.timeout(420_000);
    const first = await engine.up(stack(1, 0));
    t.deepEqual(first.errors, []);
    t.deepEqual(first.created.sort(), ["checker", "prod", "shop", "web", "web-checker", "worker-0", "worker-1"]);
    let c = client();
    try {
      t.is((await c.controllerInfo()).cluster.store, "embedded");
      // The checker (on worker-0) is active only if web/1 on worker-1 answers at its published address.
      t.deepEqual(await unitsActive(c), ["checker/0 active/idle", "web/0 active/idle", "web/1 active/idle"]);
      const web1 = (await c.status("shop")).applications.web!.units["web/1"]!;
      t.regex(web1.workload.message, new RegExp(`serving on http://${lab.hosts[5]!.ip.replace(/\./g, "\\.")}:\\d+/`));
    } finally {
      c.close();
    }

    const grown = await engine.up(stack(3, 1));
    t.deepEqual(grown.errors, []);
    t.true(grown.updated.includes("prod"), "growing the controller is an update");
    // The others take the new connection (every replica's address) as an in-place update.
    t.deepEqual(
      [grown.created, grown.replaced, grown.deleted],
      [[], [], []],
      "nothing is created, replaced or deleted",
    );
    const outs = engine.get("prod")!.outputs as {
      replicas: number;
      members: { host: string; hasVote: boolean }[];
      connection: ControllerConnection;
    };
    t.is(outs.replicas, 3);
    t.deepEqual(
      outs.members
        .filter((m) => m.hasVote)
        .map((m) => m.host)
        .sort(),
      lab.hosts
        .slice(0, 3)
        .map((h) => h.ip)
        .sort(),
    );
    t.is(outs.connection.addresses.length, 3, "the connection output names every replica");
    c = client();
    try {
      const info = (await c.controllerInfo()).cluster;
      t.is(info.store, "etcd");
      t.deepEqual(
        info.spares.map((s) => s.host),
        [lab.hosts[3]!.ip],
        "the spare went to the quorum keeper",
      );
      t.deepEqual(
        await unitsActive(c),
        ["checker/0 active/idle", "web/0 active/idle", "web/1 active/idle"],
        "the move into etcd kept the units",
      );
    } finally {
      c.close();
    }
    t.false(engine.persistedState().includes("PRIVATE KEY"), "the SSH key is not in the state in plain text");
    t.false(engine.persistedState().includes(outs.connection.password), "nor the admin password");

    const again = await engine.up(stack(3, 1));
    t.deepEqual([again.created, again.updated, again.replaced], [[], [], []], "a second up changes nothing");

    await engine.destroy();
    t.is(engine.state.size, 0);
    // An agent uninstalls itself once the controller has let its machine go: allow it a few seconds.
    for (const h of lab.hosts) {
      let left = "";
      const clean = await eventually(
        `${h.name} clean`,
        async () => {
          left = (
            await h.exec(
              "ls /var/lib/steward/controller /var/lib/steward/agents/* 2>/dev/null; pgrep -la -x 'node|etcd' || true",
            )
          ).stdout.trim();
          return left === "";
        },
        30_000,
        500,
      ).catch(() => false);
      t.true(clean, `${h.name} holds nothing of Steward: ${left}`);
    }
  },
);
