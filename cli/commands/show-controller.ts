import { Command, Option } from "clipanion";
import { ControllerCommand } from "../base-command";
import { showsCluster, storeFormatLine, table } from "../../api/core";

export default class ShowControllerCommand extends ControllerCommand {
  static override paths = [["show-controller"]];
  static override usage = Command.Usage({
    category: "Controllers",
    description: "show the controller's replicas, votes, leader and quorum keeper",
    details: `
      Lists each replica (its etcd member): host, the Steward version it runs, vote, whether it is
      up now, which one leads the controller and which leads etcd, and its API addresses; then the
      spare hosts, what the quorum keeper is doing, with its recent steps, and the last in-place
      upgrade (steward upgrade-controller), replica by replica. Without a majority the answer comes from the
      replica reached alone and says so. Users who are not controller superusers see the controller's
      name, version, addresses and CA fingerprint only. Last, the releases newer than the controller
      that it verified and holds ("0.2.0 available": nothing is applied on its own), the agent
      releases it holds for steward upgrade-model, those of its release source it refused, with why,
      and why the source could not be read if it could not.
    `,
    examples: [
      ["Show the current controller", "$0 show-controller"],
      ["As JSON", "$0 show-controller --format json"],
    ],
  });

  format = Option.String("--format", "tabular", { description: "tabular or json" });

  async run(): Promise<number> {
    const client = await this.connect();
    const info = await client.controllerOverview();
    if (this.format === "json") {
      this.out(JSON.stringify(info, null, 2));
      return 0;
    }
    if (!showsCluster(info)) {
      this.out(`Controller ${info.name} (${info.version})`);
      this.out(`Addresses: ${info.addresses.join(", ")}`);
      this.out(`CA fingerprint (SHA-256): ${info.caFingerprint}`);
      this.out("The replicas, the store's members and the quorum keeper are shown to controller superusers.");
      await this.releases(client, info.available);
      return 0;
    }
    const c = info.cluster;
    const voters = c.members.filter((m) => m.hasVote);
    this.out(
      `Controller ${info.name} (${info.version}), store ${c.store}, ${voters.filter((m) => m.present).length} of ${c.wantsVote} wanted voters up${c.quorum ? "" : ", NO QUORUM"}`,
    );
    if (c.degraded) this.out(`WARNING ${c.degraded}`);
    this.out();
    this.context.stdout.write(
      table(
        ["Replica", "Host", "Version", "State", "Vote", "Up", "Leader", "Addresses", "Instance"],
        c.members.map((m) => [
          m.name,
          m.host,
          m.version ?? "-",
          m.state + (m.reason ? ` (${m.reason})` : ""),
          m.hasVote ? "yes" : "no",
          m.present ? "yes" : "no",
          [m.leader ? "controller" : "", m.etcdLeader ? "etcd" : ""].filter(Boolean).join(",") || "-",
          m.addresses.join(",") || "-",
          m.instance ? `${m.instance.id}${m.instance.zone ? ` (${m.instance.zone})` : ""}` : "-",
        ]),
      ),
    );
    this.out();
    if (c.replicaCloud)
      this.out(
        `Replica cloud: ${c.replicaCloud.substrate} ${c.replicaCloud.summary}, ${c.replicaCloud.credential ? `credential ${c.replicaCloud.credential}` : "as its pods' ServiceAccount"} (used when no spare host is left)`,
      );
    this.out(
      c.spares.length === 0
        ? `Spare hosts: none (add with steward add-spare${c.replicaCloud ? "" : ", or set a cloud with steward set-replica-cloud"})`
        : `Spare hosts: ${c.spares.map((s) => `${s.user}@${s.host}${s.failed ? ` (skipped: ${s.failed})` : ""}`).join(", ")}`,
    );
    this.out(
      `Quorum keeper: ${c.keeper.state}: ${c.keeper.message || "-"} (replace after ${c.replaceAfterSeconds} s, at most ${c.maxReplacementsPerHour} an hour)`,
    );
    for (const e of c.keeper.history.slice(-8)) this.out(`  ${e.at}  ${e.message}`);
    const u = c.upgrade;
    if (u) {
      this.out(
        `Upgrade ${u.from} -> ${u.to}: ${u.state}, started ${u.startedAt}${u.finishedAt ? `, finished ${u.finishedAt}` : `, last progress ${u.updatedAt}`}: ${u.message}`,
      );
      for (const r of u.replicas)
        this.out(
          `  ${r.name}${r.host ? ` (${r.host})` : ""}: ${r.state} at ${r.version}${r.message ? `: ${r.message}` : ""}`,
        );
    }
    if (info.store) this.out(storeFormatLine(info.store));
    await this.releases(client, info.available);
    return 0;
  }

  /** Releases available, those held and refused (a controller that predates them shows none). */
  private async releases(
    client: Awaited<ReturnType<ControllerCommand["connect"]>>,
    available: string[] | undefined,
  ): Promise<void> {
    if (available?.length)
      this.out(
        `${available.join(", ")} available: steward upgrade-model --to ${available[available.length - 1]} moves a model's agents to it`,
      );
    const r = await client.listAgentReleases().catch(() => undefined);
    if (!r) return;
    this.out(
      `Agent releases (steward upgrade-model): ${r.releases.map((x) => `${x.version}${x.own ? " (its own)" : ""}`).join(", ")}`,
    );
    for (const x of r.refused) this.out(`  refused ${x.version}: ${x.reason}`);
    if (r.problem) this.out(`  release source: ${r.problem}`);
  }
}
