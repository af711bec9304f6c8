/**
 * The bare-metal stack: a 3-replica controller on SSH hosts with spares for the quorum keeper, a
 * model with two machines, a web application on them, a checker integrated with it.
 */
import type * as pulumi from "@pulumi/pulumi";
import { join } from "node:path";
import { Application, Controller, Integration, Machine, Model } from "steward";
import type { SshHost } from "steward";

export interface BareMetalSettings {
  /** Controller hosts (3 for HA), host keys pinned. */
  controllers: SshHost[];
  /** Hosts kept free for replacement replicas. */
  spares: SshHost[];
  /** Hosts for the applications' units. */
  workers: SshHost[];
  privateKey: pulumi.Input<string>;
  /** Where the example operators are (the repository's operators/). */
  operatorsDir: string;
}

export function bareMetal(s: BareMetalSettings) {
  const controller = new Controller("prod", {
    substrate: "ssh",
    hosts: s.controllers,
    replicas: s.controllers.length as 1 | 3 | 5 | 7,
    spares: s.spares,
    privateKey: s.privateKey,
    replaceAfterSeconds: 300,
  });
  const model = new Model("shop", { connection: controller.connection });
  const machines = s.workers.map(
    (host, i) => new Machine(`worker-${i}`, { model, ssh: host, privateKey: s.privateKey }),
  );
  const web = new Application("web", {
    model,
    operator: join(s.operatorsDir, "hello-http"),
    machines: machines.map((m) => m.machineId),
    config: { greeting: "Hello from bare metal" },
  });
  const checker = new Application("checker", {
    model,
    operator: join(s.operatorsDir, "http-checker"),
    machines: [machines[0]!.machineId],
  });
  new Integration("web-checker", {
    endpoints: [
      { application: web, endpoint: "website" },
      { application: checker, endpoint: "upstream" },
    ],
  });
  return {
    addresses: controller.addresses,
    leader: controller.leader,
    members: controller.members,
    webUnits: web.unitNames,
  };
}
