import { Command, Option } from "clipanion";
import { waitForVoters } from "../../api/core";
import { ControllerCommand } from "../base-command";
import { checkReplicaCount, replaceAfterSetting } from "../ha";
import { sshHosts } from "../ssh-options";
import { DURATION_HELP, isDuration, isWholeNumber } from "../validators";

export default class EnableHaCommand extends ControllerCommand {
  static override paths = [["enable-ha"]];
  static override usage = Command.Usage({
    category: "Controllers",
    description: "make the controller highly available (3, 5 or 7 replicas)",
    details: `
      Grows the controller to \`-n\` replicas, each a controller plus an etcd member, on the hosts
      given with \`--to\` and then on spare hosts (\`steward add-spare\`). A single replica on the
      embedded store first moves its state into a new etcd cluster (its API is away for a few
      seconds; nothing is lost), then replicas join one at a time: each as a non-voting learner,
      given a vote once it has caught up.

      The hosts you give become the controller's spare pool, and stay there after use for nothing
      else: the controller keeps their SSH key to install replacements. When a replica is gone longer
      than \`--replace-after\` (default 5m), the leader replaces it from the pool, at most
      \`--max-replacements-per-hour\` times an hour (default 2), and only while a majority is up.

      Even counts are refused: 4 voters tolerate one failure, as 3 do, at a higher cost. More than 7
      is refused as etcd advises. Shrinking is not supported yet.
    `,
    examples: [
      [
        "Grow to three replicas on two more hosts",
        "$0 enable-ha -n 3 --to ssh:root@10.0.0.6,ssh:root@10.0.0.7 --key-file ~/.ssh/id_ed25519 --host-key SHA256:Ab… --host-key SHA256:Cd…",
      ],
      [
        "Five replicas, replacing a lost one after 2 minutes",
        "$0 enable-ha -n 5 --to ssh:ops@c4,ssh:ops@c5 --key-file ops.key --trust-on-first-use --replace-after 2m",
      ],
    ],
  });

  replicas = Option.String("-n", "3", { description: "Replicas wanted: 3, 5 or 7", validator: isWholeNumber(1) });
  to = Option.String("--to", { description: "Hosts for the new replicas, ssh:user@host separated by commas" });
  keyFile = Option.String("--key-file", { description: "Private key file for the hosts" });
  keyEnv = Option.String("--key-env", { description: "Name of an environment variable holding the private key" });
  hostKey = Option.Array("--host-key", [], { description: "Pinned host key (SHA256:…), one per --to host in order" });
  tofu = Option.Boolean("--trust-on-first-use", false, { description: "Accept and record the host keys offered now" });
  replaceAfter = Option.String("--replace-after", {
    description: "Replace a replica gone this long (default 5m): " + DURATION_HELP,
    validator: isDuration(),
  });
  maxPerHour = Option.String("--max-replacements-per-hour", {
    description: "At most this many replacements an hour (default 2)",
    validator: isWholeNumber(0),
  });
  wait = Option.Boolean("--wait", true, {
    description: "Wait until the replicas are voters (--no-wait to return at once)",
  });
  timeout = Option.String("--timeout", "15m", {
    description: "How long to wait: " + DURATION_HELP,
    validator: isDuration(),
  });

  async run(): Promise<number> {
    const n = this.replicas;
    checkReplicaCount(n, "-n");
    const targets = (this.to ?? "")
      .split(",")
      .map((t) => t.trim())
      .filter(Boolean);
    const hosts =
      targets.length > 0
        ? await sshHosts(this.context, targets, {
            keyFile: this.keyFile,
            keyEnv: this.keyEnv,
            hostKeys: this.hostKey,
            tofu: this.tofu,
          })
        : [];
    const client = await this.connect();
    const res = await client.enableHa({
      replicas: n,
      hosts,
      ...replaceAfterSetting(this.replaceAfter),
      ...(this.maxPerHour !== undefined ? { maxReplacementsPerHour: this.maxPerHour } : {}),
    });
    this.progress(res.message);
    if (!this.wait) return 0;
    const cluster = await waitForVoters(client, n, this.timeout, (l) => this.progress(l));
    await this.rememberAddresses();
    this.out(
      `Controller is highly available: ${cluster.members.filter((m) => m.hasVote && m.present).length} voters (${cluster.members
        .filter((m) => m.hasVote)
        .map((m) => m.host)
        .join(", ")}).`,
    );
    return 0;
  }

  /** Every replica's address goes into the client configuration, so the CLI fails over too. */
  private async rememberAddresses(): Promise<void> {
    const info = await (await this.connect()).controllerInfo();
    const { name, cfg } = await this.resolveController();
    cfg.controllers[name]!.addresses = info.addresses;
    await this.saveConfig(cfg);
  }
}
