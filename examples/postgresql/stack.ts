/**
 * The PostgreSQL stack: a controller on SSH hosts, a model with a machine per database host and one
 * for the client, `operators/postgresql` on three units (a primary and two synchronous standbys,
 * their data on `pgdata` storage, a 10 s leadership lease so a lost primary is replaced in about
 * that), and `operators/postgresql-client` integrated with it over `database`.
 */
import type * as pulumi from "@pulumi/pulumi";
import { join } from "node:path";
import { Application, Controller, Integration, Machine, Model } from "steward";
import type { SshHost } from "steward";

export interface PostgresqlSettings {
  /** Controller hosts: 1, or 3 for a highly available controller. */
  controllers: SshHost[];
  /** One unit of PostgreSQL per host: 3 gives a primary and two standbys. */
  databaseHosts: SshHost[];
  /** Where the client application runs. */
  clientHost: SshHost;
  privateKey: pulumi.Input<string>;
  /** Where the operators are (the repository's operators/). */
  operatorsDir: string;
  /** The database the client asks for. @default "app" */
  database?: string;
  /** Size of each unit's pgdata volume, MiB. @default 1024 */
  pgdataMiB?: number;
  /**
   * Whether `pulumi destroy` destroys the database's volumes too. Kept by default: the data outlives
   * the stack, and its machines stay until it is dealt with (steward storage). @default false
   */
  destroyDataOnDelete?: boolean;
}

export function postgresqlStack(s: PostgresqlSettings) {
  const controller = new Controller("db-controller", {
    substrate: "ssh",
    hosts: s.controllers,
    replicas: s.controllers.length as 1 | 3 | 5 | 7,
    privateKey: s.privateKey,
  });
  // Substrate ssh: the units' pgdata volumes come from their own hosts (the local substrate's pools cannot reach them).
  const model = new Model("data", { connection: controller.connection, substrate: "ssh" });
  const dbMachines = s.databaseHosts.map(
    (host, i) => new Machine(`db-${i}`, { model, ssh: host, privateKey: s.privateKey }),
  );
  const clientMachine = new Machine("client-0", { model, ssh: s.clientHost, privateKey: s.privateKey });
  const postgresql = new Application("postgresql", {
    model,
    operator: join(s.operatorsDir, "postgresql"),
    machines: dbMachines.map((m) => m.machineId),
    storage: { pgdata: { size: s.pgdataMiB ?? 1024 } },
    // A primary whose agent is gone is replaced about one lease later (the default, 60 s, is Juju's).
    leadershipLease: "10s",
    config: { "synchronous-standbys": 1 },
    destroyStorageOnDelete: s.destroyDataOnDelete ?? false,
  });
  const app = new Application("app", {
    model,
    operator: join(s.operatorsDir, "postgresql-client"),
    machines: [clientMachine.machineId],
    config: { database: s.database ?? "app" },
  });
  new Integration("app-database", {
    endpoints: [
      { application: postgresql, endpoint: "database" },
      { application: app, endpoint: "database" },
    ],
  });
  return { addresses: controller.addresses, postgresqlUnits: postgresql.unitNames, appUnits: app.unitNames };
}
