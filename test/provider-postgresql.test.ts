/**
 * examples/postgresql through the SDK's dynamic-provider process (test/harness/pulumi-engine.ts) on
 * real sshd test hosts: one controller replica, three postgresql units with pgdata storage and a 10 s
 * leadership lease, and the postgresql-client operator integrated with them. `up` returns with every
 * unit active; the client's libpq service file reaches the primary (a write there is read back from a
 * standby, so replication runs); a second `up` changes nothing; destroy (the example's
 * destroyDataOnDelete) leaves no PostgreSQL running and no volume behind.
 */
import test from "ava";
import * as pulumi from "@pulumi/pulumi";
import { existsSync } from "node:fs";
import { ControllerClient } from "../api";
import { postgresqlStack } from "../examples/postgresql/stack";
import type { ControllerConnection, SshHost } from "../provider";
import { operatorsDir } from "./harness/controller";
import type { TestHost } from "./harness/hosts";
import { TestLab } from "./harness/hosts";
import { providerTestBed } from "./harness/provider-bed";

const root = process.getuid?.() === 0;
const havePostgres = root && existsSync("/usr/lib/postgresql/15/bin/postgres");
const ssh = havePostgres ? test.serial : test.skip; // namespaces and sshd need root; the units need PostgreSQL 15

let lab: TestLab;
const { engine } = providerTestBed(test, {
  when: havePostgres,
  setUp: async () => {
    // Host 1: the controller; 2-4: postgresql; 5: the client.
    lab = await TestLab.create(5);
  },
  tearDown: async () => {
    await lab?.close();
  },
});

const sshHost = (h: TestHost): SshHost => ({ host: h.ip, hostKey: h.hostKeyFingerprint });
const stack = () => () => {
  postgresqlStack({
    controllers: [sshHost(lab.hosts[0]!)],
    databaseHosts: lab.hosts.slice(1, 4).map(sshHost),
    clientHost: sshHost(lab.hosts[4]!),
    privateKey: pulumi.secret(lab.clientKey),
    operatorsDir,
    pgdataMiB: 256,
    destroyDataOnDelete: true,
  });
};

function client(): ControllerClient {
  const c = engine.get("db-controller")!.outputs.connection as ControllerConnection;
  return new ControllerClient({ addresses: c.addresses, caCert: c.caCert, user: c.user, password: c.password });
}

/** Runs psql on the client host with the service file its unit wrote. */
async function psqlOnClient(service: string, sql: string): Promise<{ code: number; stdout: string }> {
  const host = lab.hosts[4]!;
  const file = (await host.exec("ls /var/lib/steward/agents/*/units/app-0/data/pg_service.conf")).stdout.trim();
  return host.exec(
    `PGSERVICEFILE=${file} timeout 60 psql -X -w -A -t -v ON_ERROR_STOP=1 service=${service} -c "${sql}"`,
  );
}

ssh(
  "the postgresql example on test hosts: three units and a client come up active; the client's service file reaches the primary and its writes reach a standby; destroy stops PostgreSQL everywhere",
  async (t) => {
    t.timeout(600_000);
    const first = await engine.up(stack());
    t.deepEqual(first.errors, []);
    t.deepEqual(first.created.sort(), [
      "app",
      "app-database",
      "client-0",
      "data",
      "db-0",
      "db-1",
      "db-2",
      "db-controller",
      "postgresql",
    ]);
    const c = client();
    try {
      const s = await c.status("data");
      const units = Object.entries(s.applications.postgresql!.units);
      t.deepEqual(
        units.map(([, u]) => `${u.workload.current}/${u.agent.current}`),
        ["active/idle", "active/idle", "active/idle"],
      );
      const messages = units.map(([, u]) => u.workload.message).sort();
      t.is(messages.filter((m) => /^primary/.test(m)).length, 1, `one primary: ${messages.join("; ")}`);
      t.is(messages.filter((m) => /^standby/.test(m)).length, 2, `two standbys: ${messages.join("; ")}`);
      t.is(s.applications.postgresql!.leadershipLeaseSeconds, 10, "the example's 10 s lease");
      t.regex(s.applications.app!.units["app/0"]!.workload.message, /^database app at /);
    } finally {
      c.close();
    }

    const written = await psqlOnClient("app", "CREATE TABLE notes (n int); INSERT INTO notes VALUES (42); SELECT 1");
    t.is(written.code, 0, written.stdout);
    let read = { code: 1, stdout: "" };
    for (let i = 0; i < 40 && read.stdout.trim() !== "42"; i++) {
      read = await psqlOnClient("app-ro", "SELECT n FROM notes");
      if (read.stdout.trim() !== "42") await new Promise((r) => setTimeout(r, 250));
    }
    t.is(read.stdout.trim(), "42", "the row written on the primary is read from a standby");
    const refused = await psqlOnClient("app-ro", "INSERT INTO notes VALUES (1)");
    t.not(refused.code, 0, "a standby refuses writes");
    t.false(engine.persistedState().includes("PRIVATE KEY"), "the SSH key is not in the state in plain text");

    const again = await engine.up(stack());
    t.deepEqual([again.created, again.updated, again.replaced], [[], [], []], "a second up changes nothing");

    await engine.destroy();
    t.is(engine.state.size, 0);
    for (const h of lab.hosts.slice(1, 4))
      t.is((await h.exec("pgrep -x postgres || true")).stdout.trim(), "", `${h.name}: no PostgreSQL left running`);
  },
);
