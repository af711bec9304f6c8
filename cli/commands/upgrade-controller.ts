import { Command, Option, UsageError } from "clipanion";
import type * as Substrates from "../../substrates";
import { ControllerClient, STEWARD_VERSION, STORE_FORMAT, StewardError, storeFormatLine } from "../../api/core";
import { ControllerCommand } from "../base-command";
import type { ControllerEntry } from "../client-config";
import { readKubeconfig } from "../kubeconfig-file";
import { readPrivateKey } from "../ssh-options";
import { DURATION_HELP, isDuration } from "../validators";
import { planUpgrade, unsupportedReplicas } from "../upgrade/plan";
import type { UpgradePlan } from "../upgrade/plan";
import { runUpgrade } from "../upgrade/run-upgrade";
import { waitForStoreMigration } from "../upgrade/store-migration";
import { upgradeViaMigration } from "../upgrade/via-migration";

export default class UpgradeControllerCommand extends ControllerCommand {
  static override paths = [["upgrade-controller"]];
  static override usage = Command.Usage({
    category: "Controllers",
    description: "upgrade the controller in place to this client's version (a patch, or the next minor)",
    details: `
      Brings the controller to the version of this \`steward\`, which carries the new controller
      release: one replica at a time, followers first and the leader last (so leadership moves
      once). Each replica gets the new release beside the one it runs, is switched to it and
      restarted, and must come back as a healthy voter at the new version, caught up, before the
      next one is touched; quorum holds throughout. A replica that fails this is rolled back to the
      release it ran, and the upgrade stops there.

      A patch version (0.1.0 to 0.1.3) and the next minor version (0.1.3 to 0.2.0) are applied in
      place. Across a minor version the new release may store documents in a newer format: once
      every replica runs it, the leader migrates the store (the command waits for that; the
      previous release then refuses to start on it rather than misread it). A major version, or
      more than one minor at once, goes by migration: bootstrap a new controller and move the models to it
      (\`--via-migration TARGET\`: every model moved there, one at a time, stopping at the first
      that does not move; run it again to move the rest). Refused too: an older client, a replica that is
      down or still joining, and an upgrade to another version left unfinished.

      The progress is recorded in the controller (\`steward show-controller\` shows it); running the
      same upgrade again resumes where it stopped. \`--dry-run\` prints the plan and changes nothing.

      Local controllers keep their releases in their data directory (\`releases/\`, \`current\`).
      Replicas installed over SSH get the release from this client over SSH (give the key as at
      bootstrap, and each host's key as \`--host-key HOST=SHA256:…\`); the previous release stays on
      the host for a rollback.

      Replicas on Kubernetes are upgraded by their StatefulSet's image (\`<registry/repository>:<version>\`,
      the repository it runs now; \`--image\` names another), with your kubeconfig (\`--kubeconfig\`,
      \`--kube-context\`; default the context it was bootstrapped with): build and push the image
      first (npm run images). The pods are replaced from the highest ordinal down, one at a time, the
      StatefulSet's rolling update held by its partition until each replica has passed the gate; one
      that fails it is made again with the image it ran, and the partition holds the rest. Replicas on
      cloud instances are not supported yet.
    `,
    examples: [
      ["Show what would be done", "$0 upgrade-controller --dry-run"],
      ["Upgrade a local controller", "$0 upgrade-controller -c local"],
      [
        "Upgrade three replicas installed over SSH",
        "$0 upgrade-controller -c prod --key-file ~/.ssh/id_ed25519 --host-key 10.0.0.5=SHA256:A… --host-key 10.0.0.6=SHA256:B… --host-key 10.0.0.7=SHA256:C…",
      ],
      ["Upgrade a controller on Kubernetes", "$0 upgrade-controller -c k8s --kubeconfig ~/.kube/config"],
    ],
  });

  dryRun = Option.Boolean("--dry-run", false, {
    description: "Print the plan (replica order, versions) and change nothing",
  });
  timeout = Option.String("--timeout", "10m", {
    description:
      "How long each replica may take to come back healthy (and the store to be migrated, across a minor version): " +
      DURATION_HELP,
    validator: isDuration(),
  });
  viaMigration = Option.String("--via-migration", {
    description:
      "Upgrade to a new major version (or more than one minor on): move every model to the controller TARGET (this client's name for it), one at a time",
  });
  keyFile = Option.String("--key-file", { description: "SSH replicas: private key file for their hosts" });
  keyEnv = Option.String("--key-env", {
    description: "SSH replicas: name of an environment variable holding the private key",
  });
  sshUser = Option.String("--ssh-user", "root", { description: "SSH replicas: the user to log in as" });
  hostKey = Option.Array("--host-key", [], {
    description: "SSH replicas: a host's pinned key, HOST=SHA256:…, one per host",
  });
  tofu = Option.Boolean("--trust-on-first-use", false, {
    description: "SSH replicas: accept the host keys offered now",
  });
  kubeconfig = Option.String("--kubeconfig", {
    description: "Kubernetes replicas: the kubeconfig (default $KUBECONFIG, else ~/.kube/config)",
  });
  kubeContext = Option.String("--kube-context", {
    description:
      "Kubernetes replicas: its context (default the one the controller was bootstrapped with, else its current one)",
  });
  image = Option.String("--image", {
    description:
      "Kubernetes replicas: the new controller image (default the repository the StatefulSet runs, tagged with the new version)",
  });

  async run(): Promise<number> {
    const { name, entry, cfg } = await this.resolveController();
    if (this.viaMigration !== undefined) {
      const target = cfg.controllers[this.viaMigration];
      if (!target)
        throw new UsageError(
          `controller "${this.viaMigration}" is not known here (known: ${Object.keys(cfg.controllers).join(", ")}): bootstrap the new version's controller, or log in to it, first`,
        );
      if (this.viaMigration === name)
        throw new UsageError(`${name} is the controller being upgraded: name the new one`);
      const t0 = Date.now();
      const moved = await upgradeViaMigration({
        source: await this.connect(),
        sourceName: name,
        targetName: this.viaMigration,
        target,
        dryRun: this.dryRun,
        out: (l) => this.out(l),
      });
      if (this.dryRun) this.out("Dry run: nothing was changed.");
      else
        this.out(
          `Every model of "${name}" now lives on "${this.viaMigration}" (${moved.length} moved in ${((Date.now() - t0) / 1000).toFixed(1)} s). Clients and agents that still come to "${name}" are sent there; remove it once nothing does (steward destroy-controller ${name}).`,
        );
      return 0;
    }
    const subs = require("../../substrates") as typeof Substrates;
    const to = await subs.controllerBundleVersion();
    if (to !== STEWARD_VERSION)
      throw new StewardError(
        "internal",
        `this steward is ${STEWARD_VERSION} but carries a controller release of ${to}: its build is inconsistent; rebuild it (npm run build)`,
      );
    // The kind the controller runs on (as bootstrap recorded it) upgrades its replicas; the run here names no kind.
    const hosting = subs.hostingOf(entry.hosting);
    const recorded = entry.hosting ?? subs.UNRECORDED_HOSTING;
    const used = { kubeconfig: false, image: false };
    const upgrade = await hosting.replicaUpgrade?.(recorded.settings, {
      to,
      caCert: entry.caCert,
      timeoutMs: this.timeout,
      sshAccess: (hosts) => this.sshAccess(hosts),
      kubeconfig: (context) => {
        used.kubeconfig = true;
        return readKubeconfig(this.context.env, this.kubeconfig, this.kubeContext ?? context);
      },
      image: () => {
        used.image = true;
        return this.image;
      },
    });
    try {
      if (
        (!used.kubeconfig && (this.kubeconfig !== undefined || this.kubeContext !== undefined)) ||
        (!used.image && this.image !== undefined)
      )
        throw new UsageError("--kubeconfig, --kube-context and --image are for a controller on Kubernetes");
      return await this.upgrade(name, entry, to, hosting, upgrade);
    } finally {
      upgrade?.close?.();
    }
  }

  private async upgrade(
    name: string,
    entry: ControllerEntry,
    to: string,
    hosting: Substrates.ControllerHosting<unknown>,
    upgrade: Substrates.ReplicaUpgrade | undefined,
  ): Promise<number> {
    // Replicas that announce addresses this client cannot reach (pods' cluster DNS names): it follows where they are now instead.
    const reachable = upgrade?.reachable;
    const client = reachable ? clientReaching(entry, reachable) : await this.connect();
    try {
      const plan = planUpgrade(await client.controllerInfo(), to);
      if (plan.steps.length === 0) {
        if (plan.resumes && !this.dryRun)
          await client.recordUpgrade({
            ...plan.resumes,
            state: "done",
            message: `every replica runs ${to}`,
            updatedAt: new Date().toISOString(),
            finishedAt: new Date().toISOString(),
          });
        await upgrade?.upToDate?.((l) => this.progress(l), this.dryRun);
        if (plan.storeFrom !== undefined && !this.dryRun) await this.storeMigrated(client);
        this.out(`Controller "${name}" is already at ${to}: nothing to do.`);
        return 0;
      }
      // A kind that offers no in-place upgrade says why (there are replicas to upgrade here, so there is a message).
      if (!upgrade) throw new StewardError("invalid-request", unsupportedReplicas(hosting, plan.steps, to)!);
      const upgrader = await upgrade.upgrader(plan.steps);
      if (upgrader.order) plan.steps = upgrader.order(plan.steps);
      this.printPlan(name, plan, upgrade, !!upgrader.order);
      if (this.dryRun) {
        this.out("Dry run: nothing was changed.");
        return 0;
      }
      const t0 = Date.now();
      // An entry that holds the addresses this client reached the replicas at (bootstrapped without --api-address: the pods' IPs) follows them.
      const before = await reachable?.();
      const follow = !!before && entry.addresses.every((a) => before.includes(a));
      try {
        await runUpgrade({
          client,
          caCert: entry.caCert,
          plan,
          upgrader,
          timeoutMs: this.timeout,
          progress: (l) => this.progress(l),
        });
      } finally {
        if (follow) await this.keepAddresses(name, reachable!);
      }
      await upgrade.finish?.((l) => this.progress(l));
      if (plan.storeFrom !== undefined) await this.storeMigrated(client);
      this.out(`Controller "${name}" upgraded to ${to} in ${((Date.now() - t0) / 1000).toFixed(1)} s.`);
      return 0;
    } finally {
      if (reachable) client.close();
    }
  }

  private printPlan(name: string, plan: UpgradePlan, upgrade: Substrates.ReplicaUpgrade, ordered: boolean): void {
    this.out(
      `Upgrade plan for controller "${name}": ${plan.from} -> ${plan.to}, ${upgrade.order ?? "one replica at a time"}${plan.resumes ? ` (resuming the upgrade started ${plan.resumes.startedAt})` : ""}`,
    );
    for (const line of upgrade.planLines ?? []) this.out(`  ${line}`);
    for (const [i, s] of plan.steps.entries())
      this.out(
        `  ${i + 1}. ${s.name}${s.host ? ` on ${s.host}` : ""}: ${s.version} -> ${plan.to}${s.leader ? ` (the leader${ordered ? "" : ", last"})` : ""}`,
      );
    for (const s of plan.done) this.out(`  -  ${s.name}${s.host ? ` on ${s.host}` : ""}: already at ${plan.to}`);
    if (plan.storeFrom !== undefined)
      this.out(
        `  then the store: format ${plan.storeFrom} -> ${STORE_FORMAT}, migrated by the leader once every replica runs ${plan.to} (the previous release then refuses to start on it)`,
      );
  }

  /** Waits for the leader's migration of the store (it starts once the last replica runs the new release). */
  private async storeMigrated(client: ControllerClient): Promise<void> {
    const store = await waitForStoreMigration(client, this.timeout, (l) => this.progress(l));
    this.progress(storeFormatLine(store));
  }

  /** Points the entry at where the replicas are now (read again: the file may have changed since this run began). */
  private async keepAddresses(name: string, reachable: () => Promise<string[]>): Promise<void> {
    const addresses = await reachable().catch(() => []);
    const cfg = await this.clientConfig();
    const entry = cfg.controllers[name];
    if (!entry || addresses.length === 0 || addresses.join() === entry.addresses.join()) return;
    entry.addresses = addresses;
    await this.saveConfig(cfg);
    this.progress(`The client's entry for "${name}" now holds the pods' new addresses: ${addresses.join(", ")}`);
  }

  /** SSH access to the replicas' hosts, from the flags, checked before anything changes. */
  private async sshAccess(hosts: string[]): Promise<Substrates.SshAccess> {
    const hostKeys: Record<string, string> = {};
    for (const h of this.hostKey) {
      const m = /^([^=\s]+)=(SHA256:\S+)$/.exec(h);
      if (!m)
        throw new UsageError(
          `--host-key ${h}: give HOST=SHA256:… (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub on the host)`,
        );
      hostKeys[m[1]!] = m[2]!;
    }
    const access = { user: this.sshUser, hostKeys, trustOnFirstUse: this.tofu };
    if (this.dryRun) return { ...access, privateKey: "" };
    const unpinned = hosts.filter((h) => !hostKeys[h]);
    if (unpinned.length > 0 && !this.tofu)
      throw new UsageError(
        `the host keys of ${unpinned.join(", ")} are not pinned: pass --host-key HOST=SHA256:… for each, or --trust-on-first-use`,
      );
    return { ...access, privateKey: await readPrivateKey(this.context, this.keyFile, this.keyEnv) };
  }
}

/** A client that, when no known address answers, tries where the replicas are now (a pod's current IP). */
function clientReaching(entry: ControllerEntry, reachable: () => Promise<string[]>): ControllerClient {
  return new ControllerClient({
    addresses: entry.addresses,
    caCert: entry.caCert,
    user: entry.user,
    ...(entry.password ? { password: entry.password } : {}),
    ...(entry.token ? { token: entry.token } : {}),
    reachable,
  });
}
