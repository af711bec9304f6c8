/**
 * `steward bootstrap`: the flags of one target (this host, `ssh:`, `aws:`, `vsphere:`, `kubernetes:`)
 * become one plan for that kind's controller hosting; the bootstrap itself (start, wait, store the
 * credential, set the replica cloud, record, grow) is the substrates' flow, which the provider's
 * Controller resource runs too. What stays here is what users see: the flags, their refusals and the
 * messages. A kind's own flags and target word are its contract's (../kind-flags.ts); the target is
 * built by what the kind's contract says it is (this host, SSH hosts, a cloud's instances, its own
 * pods), not by its name.
 */
import { Command, Option, UsageError } from "clipanion";
import { join } from "node:path";
import type * as Substrates from "../../substrates";
import type { SUBSTRATE_CONTRACTS, SubstrateContract } from "../../api/core";
import { NAME_PATTERN, contractOf } from "../../api/core";
import { parseSshTarget, readPrivateKey, sshHosts } from "../ssh-options";
import { checkReplicaCount, replaceAfterSetting } from "../ha";
import { DURATION_HELP, isDuration, isPort } from "../validators";
import { BaseCommand } from "../base-command";
import { withHeartbeat } from "../heartbeat";
import { kindFlags } from "../kind-flags";
import { readCredentialAttributes } from "../credential-file";
import type { ClientConfig } from "../client-config";
import { readKubeconfig } from "../kubeconfig-file";
import {
  OWN_PODS_REFUSED,
  cloudCredentialEnv,
  cloudKinds,
  flagsGiven,
  refusal,
  refusedFlags,
  targetArgumentName,
  targetKind,
} from "../bootstrap-targets";

type Contracts = typeof SUBSTRATE_CONTRACTS;
/** The hosting kinds whose contract says `P`: the four ways a bootstrap goes. */
type HostingWhere<P> = {
  [K in Substrates.HostingKind]: Contracts[K] extends P ? K : never;
}[Substrates.HostingKind];
type ThisHostKind = HostingWhere<{ onControllerHost: true }>;
type SshHostsKind = HostingWhere<{ addMachines: "address" }>;
type InstanceCloudKind = HostingWhere<{ replicaHosts: "instances" }>;
type OwnPodsKind = HostingWhere<{ replicaHosts: "own-pods" }>;

export default class BootstrapCommand extends BaseCommand {
  static override paths = [["bootstrap"]];
  static override usage = Command.Usage({
    category: "Controllers",
    description: "create a controller: on this host, on hosts over SSH, on EC2, on vSphere or on Kubernetes",
    details: `
      Creates a single-replica controller on this machine, using the embedded store (no database to
      install): generates its certificate authority and admin credentials, starts it in the
      background and makes it the current controller. Machines added to its models with the local
      substrate run as agent processes on this host.

      With several hosts (\`ssh:user@h1,ssh:user@h2,ssh:user@h3\`: 3, 5 or 7 of them), the controller
      is highly available: it starts on the first host and grows onto the others as
      \`steward enable-ha\` does, each replica a controller plus an etcd member with TLS from the
      controller's CA. Give one \`--host-key\` per host, in order.

      With \`ssh:user@host\`, the controller is installed on that host instead (Node.js is shipped if
      it has none; a systemd service, or a supervised process where systemd does not run), the CA
      and admin password come back over the SSH connection, and it listens on port 17070 of the
      host (\`--port\`). The host key must be pinned (\`--host-key\`) or explicitly trusted on first use.

      With \`aws:REGION\`, the controller is installed on an EC2 instance this command launches
      (\`--image\`, an AMI with cloud-init; \`--instance-type\`, \`--subnet\`, \`--security-group\`).
      The instance gets a host key made for it through its user data, so the SSH connection that
      installs the controller verifies it; nothing is trusted on first use. The AWS credential comes
      from \`--credential-file\` (e.g. ~/.aws/credentials with \`--profile\`) or \`--from-env\`, never
      from the command line; it is stored in the controller (as \`--credential\`, default: aws)
      and EC2 becomes the controller's replica cloud: with \`--replicas 3\` the controller launches
      the other replicas itself, and later replaces lost ones the same way. The security group must
      let this machine reach port 22 and the API port, and the instances reach each other on the
      API port and 2379-2380. A failed bootstrap terminates the instance it launched.

      With \`vsphere:VCENTER\` (a host name, or vCenter's \`https://…/sdk\` URL), the same on a VM this
      command clones from \`--template\` (a Linux with cloud-init, whose VMware datasource reads
      \`guestinfo.*\`, and curl) in \`--datacenter\` (\`--folder\`, \`--resource-pool\`;
      \`--vcenter-ca-file\` when vCenter's certificate is not signed by a CA this system trusts). The
      keys reach cloud-init through the VM's \`guestinfo.userdata\`, the address is the one VMware
      Tools reports, and the VM and those the controller clones later are marked with it
      (\`guestinfo.steward.controller\`). The vSphere account (user, password) comes from
      \`--credential-file\` or \`--from-env\` (VSPHERE_USER, VSPHERE_PASSWORD) and is stored as
      \`--credential\` (default: vsphere); with \`--replicas 3\` the controller clones the other
      replicas itself. A failed bootstrap destroys the VM it cloned.

      With \`kubernetes:CONTEXT\` (a context of \`--kubeconfig\`; empty: its current one), the controller
      runs as a StatefulSet in \`--namespace\` (default steward): each pod a controller and its etcd
      member on its own volume, addressed by stable DNS names from a headless Service, behind a client
      Service, with a disruption budget keeping a majority and pods spread over nodes. This command
      makes the CA and admin password, gives pod 0 its first data through a Secret it deletes once
      the controller answers, and with \`--replicas 3\` lets the controller grow itself: it scales its
      StatefulSet one pod at a time and takes each pod into etcd; a pod that comes back with an empty
      volume is replaced the same way, at once. The controller does this as its pods' ServiceAccount,
      whose Role allows only that, in its namespace; your kubeconfig's credential is not stored
      (register the cluster for kubernetes models with steward add-k8s). \`--controller-image\` names the image
      (built from images/); \`--api-address\` how clients outside the cluster reach it (a load
      balancer or node port; by default the pods' IPs, which only flat networks route).

      The admin password is stored, with the controller's CA, in \`$STEWARD_HOME/controllers.json\`
      (mode 0600). The controller listens on 127.0.0.1:17070, or on a free port if that is taken.
    `,
    examples: [
      ["Bootstrap a controller called local", "$0 bootstrap"],
      ["Bootstrap a second controller on a chosen port", "$0 bootstrap dev --port 17171"],
      [
        "Bootstrap a controller on a server over SSH",
        "$0 bootstrap ssh:root@10.0.0.5 prod --key-file ~/.ssh/id_ed25519 --host-key SHA256:Vn1...Q",
      ],
      [
        "Bootstrap a 3-replica controller",
        "$0 bootstrap ssh:root@10.0.0.5,ssh:root@10.0.0.6,ssh:root@10.0.0.7 prod --key-file k --host-key SHA256:A… --host-key SHA256:B… --host-key SHA256:C…",
      ],
      [
        "Bootstrap a 3-replica controller on EC2",
        "$0 bootstrap aws:eu-west-1 prod --replicas 3 --image ami-0abcdef1234567890 --subnet subnet-0aaa1111 --subnet subnet-0bbb2222 --subnet subnet-0ccc3333 --security-group sg-0123abcd --credential-file ~/.aws/credentials --profile prod",
      ],
      [
        "Bootstrap a 3-replica controller on Kubernetes",
        "$0 bootstrap kubernetes:prod-admin prod --replicas 3 --kubeconfig ~/.kube/config --controller-image registry.example.com/steward/controller:0.1.0 --api-address 203.0.113.10:17070",
      ],
      [
        "Bootstrap a 3-replica controller on vSphere",
        "$0 bootstrap vsphere:vcenter.example.com prod --replicas 3 --datacenter dc1 --template debian-12-cloud --resource-pool cluster1/Resources --credential-file vsphere.yaml",
      ],
    ],
  });

  /** Each kind's settings flags (`--region`, `--vcenter`, …), from the kinds' contracts; read through this. */
  readonly kindFlags = kindFlags(this, "settings");
  first = Option.String({ required: false, name: targetArgumentName() });
  second = Option.String({ required: false, name: "name" });
  port = Option.String("--port", {
    description: "API port (default 17070, or a free port if that is taken)",
    validator: isPort(),
  });
  host = Option.String("--host", "127.0.0.1", { description: "Address to listen on (local controllers)" });
  keyFile = Option.String("--key-file", { description: "Private key file (ssh: targets)" });
  keyEnv = Option.String("--key-env", { description: "Name of an environment variable holding the private key" });
  hostKey = Option.Array("--host-key", [], {
    description: "Pinned host key fingerprint, SHA256:…, one per host in order",
  });
  replaceAfter = Option.String("--replace-after", {
    description: "HA: replace a replica gone this long (default 5m): " + DURATION_HELP,
    validator: isDuration(),
  });
  timeout = Option.String("--timeout", "15m", {
    description: "HA: how long to wait for every replica: " + DURATION_HELP,
    validator: isDuration(),
  });
  tofu = Option.Boolean("--trust-on-first-use", false, {
    description: "Accept and record the host key the host offers now",
  });
  replicas = Option.String("--replicas,-n", {
    description: `${cloudKinds()}: how many replicas (1, 3, 5 or 7; default 1)`,
  });
  credentialFile = Option.String("--credential-file", {
    description: `${cloudKinds()}: the cloud's credential, a file (INI such as ~/.aws/credentials, JSON or YAML)`,
  });
  profile = Option.String("--profile", "default", {
    description: `${cloudKinds()}: the profile in --credential-file's INI`,
  });
  fromEnv = Option.Boolean("--from-env", false, {
    description: `${cloudKinds()}: read the credential from ${cloudCredentialEnv()}`,
  });
  credentialName = Option.String("--credential", {
    description: `${cloudKinds()}: the name the credential is stored under in the controller (default: ${cloudKinds()})`,
  });
  /** The flags only a bootstrap on a kind takes (`--kubeconfig`, …: its controller's hosting); read through kindFlags too. */
  readonly hostingFlags = kindFlags(this, "hosting");

  async run(): Promise<number> {
    const kind: SubstrateContract<any> = contractOf(targetKind(this.first));
    const refused = refusedFlags(kind, this, this.kindFlags);
    if (refused) throw new UsageError(refused);
    const cfg = await this.clientConfig();
    const target = kind.onControllerHost
      ? await this.localTarget(kind.name as ThisHostKind, cfg)
      : kind.replicaHosts === "instances"
        ? await this.cloudTarget(kind.name as InstanceCloudKind, cfg)
        : kind.replicaHosts === "own-pods"
          ? await this.ownPodsTarget(kind.name as OwnPodsKind, cfg)
          : await this.sshTarget(kind.name as SshHostsKind, cfg);
    return this.bootstrap(target, cfg);
  }

  /** The flow, recording the controller as soon as its first replica answers and again once it has grown. */
  private async bootstrap<K extends Substrates.HostingKind>(target: Target<K>, cfg: ClientConfig): Promise<number> {
    // Loaded only here: the substrates bring node-ssh and the clouds' clients, which most commands never need.
    const { bootstrapController, recordHosting } = loadSubstrates();
    const name = target.plan.name;
    // A refused or filtered SSH port, a slow cloud: said, and said again while it lasts.
    const controller = await withHeartbeat(this.progress.bind(this), target.first, (progress) =>
      bootstrapController(target.kind, target.plan, {
        progress,
        ...(target.existing ? { existing: target.existing } : {}),
        recorded: async (c) => {
          cfg.controllers[name] = {
            addresses: c.addresses,
            caCert: c.caCert,
            user: "admin",
            password: c.adminPassword,
            generatedPassword: true,
            token: c.token,
            // Where it runs, as its kind records it (to upgrade or destroy it later).
            hosting: recordHosting(
              target.kind,
              target.plan,
              c as Substrates.HostedController<Substrates.HostingSettings[K]>,
            ),
          };
          cfg.current = name;
          await this.saveConfig(cfg);
        },
      }),
    );
    this.out(
      `Bootstrapped controller "${name}"${target.where ? ` on ${target.where}` : ""} at ${controller.addresses.join(", ")}.`,
    );
    for (const line of target.after) this.out(line);
    return 0;
  }

  private checkName(name: string, cfg: ClientConfig, hint = ""): void {
    if (!isControllerName(name))
      throw new UsageError(`controller name "${name}" must be lower-case letters, digits and hyphens${hint}`);
    if (cfg.controllers[name]) throw new UsageError(`controller "${name}" already exists here: choose another name`);
  }

  private replicaCount(): number {
    const replicas = this.replicas === undefined ? 1 : Number(this.replicas);
    checkReplicaCount(replicas, "--replicas", this.replicas);
    return replicas;
  }

  private adminCredentials(next: string): string {
    return `Admin credentials are in ${join(this.home, "controllers.json")}. Next: ${next}`;
  }

  private async localTarget(substrate: ThisHostKind, cfg: ClientConfig): Promise<Target<ThisHostKind>> {
    if (this.second !== undefined)
      throw new UsageError(`unexpected argument "${this.second}": give a name, or ssh:user@host and a name`);
    // Called after its kind by default.
    const name = this.first ?? substrate;
    if (!isControllerName(name))
      throw new UsageError(`controller name "${name}" must be lower-case letters, digits and hyphens`);
    if (cfg.controllers[name])
      throw new UsageError(
        `controller "${name}" already exists: use it (steward status -c ${name}) or remove it first (steward destroy-controller ${name} --yes)`,
      );
    const { freePort, portFree } = loadSubstrates();
    let port: number;
    if (this.port !== undefined) {
      port = this.port;
      if (!(await portFree(this.host, port)))
        throw new UsageError(`port ${port} on ${this.host} is in use; choose another with --port`);
    } else {
      port = (await portFree(this.host, 17070)) ? 17070 : await freePort(this.host);
    }
    const dataDir = join(this.home, "controllers", name);
    return {
      kind: substrate,
      plan: { name, settings: { dataDir, host: this.host }, replicas: 1, port, timeoutMs: this.timeout },
      existing: (dir) =>
        new UsageError(
          `${dir} already holds a controller that this client does not know; remove that directory or choose another name`,
        ),
      after: [this.adminCredentials("steward add-model <name>")],
    };
  }

  private async cloudTarget(substrate: InstanceCloudKind, cfg: ClientConfig): Promise<Target<InstanceCloudKind>> {
    // Every argument is checked before anything is launched.
    const kind: SubstrateContract<any> = contractOf(substrate);
    const fills = kind.cli!.target!.fills!;
    // `aws:eu-west-1` stands for --region eu-west-1; `vsphere:vc.example.com` for --vcenter https://vc.example.com/sdk.
    const value = this.kindFlags.fillFromTarget(kind, this.first!);
    const label = fills.label ? fills.label(value) : value;
    const where = `${fills.place} (${label})`;
    const defaultName = `${substrate}-${label
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-+|-+$/g, "")}`;
    const name = this.second ?? defaultName;
    if (!isControllerName(name))
      throw new UsageError(`controller name "${name}" must be lower-case letters, digits and hyphens`);
    const replicas = this.replicaCount();
    const credentialName = this.credentialName ?? substrate;
    if (!isControllerName(credentialName))
      throw new UsageError(`--credential "${credentialName}" must be lower-case letters, digits and hyphens`);
    const words = kind.words;
    if (this.credentialFile === undefined && !this.fromEnv)
      throw new UsageError(
        `give the ${words.cloud} credential: --credential-file FILE [--profile P] or --from-env (${words.env ?? ""}); never on the command line`,
      );
    if (flagsGiven(this, "sshKeys"))
      throw new UsageError(`${refusal("sshKeys")}; on ${substrate} the keys are made for the ${words.thing}`);
    if (cfg.controllers[name]) throw new UsageError(`controller "${name}" already exists here: choose another name`);
    // The bootstrap checks the values as the controller would (settings from flags may lack what defaults fill in).
    const settings = (await this.kindFlags.settings(
      kind,
      this.context.cwd,
    )) as unknown as Substrates.HostingSettings[InstanceCloudKind];
    const attributes = await readCredentialAttributes(this.context, substrate, {
      file: this.credentialFile,
      profile: this.profile,
      fromEnv: this.fromEnv,
    });
    // "--region eu-west-1 --image …": the flag the target stood for, then the others a model needs.
    const modelFlags = [
      `${fills.flag} ${value}`,
      ...this.kindFlags
        .flagsHere(kind)
        .filter((f) => f.required && f.name !== fills.flag)
        .map((f) => `${f.name} …`),
    ].join(" ");
    return {
      kind: substrate,
      where,
      first: `Bootstrapping controller "${name}" on ${where}`,
      plan: {
        name,
        settings,
        credential: { name: credentialName, attributes },
        replicas,
        port: this.port ?? 17070,
        ...replaceAfterSetting(this.replaceAfter),
        timeoutMs: this.timeout,
      },
      after: [
        replicas > 1
          ? `It replaces a lost replica with a new ${words.thing} itself (steward show-controller).`
          : `One replica: steward enable-ha -n 3 grows it onto new ${words.things}, which it then keeps replacing itself.`,
        this.adminCredentials(
          `steward add-model <name> --substrate ${substrate} --credential ${credentialName} ${modelFlags}`,
        ),
      ],
    };
  }

  private async ownPodsTarget(substrate: OwnPodsKind, cfg: ClientConfig): Promise<Target<OwnPodsKind>> {
    const kind: SubstrateContract<any> = contractOf(substrate);
    if (
      this.credentialFile !== undefined ||
      this.fromEnv ||
      this.credentialName !== undefined ||
      flagsGiven(this, "sshKeys") ||
      this.port !== undefined
    ) {
      throw new UsageError(
        `${substrate}: the cluster's credential comes from --kubeconfig; ${OWN_PODS_REFUSED} are for other targets`,
      );
    }
    // Its own flags fill its hosting: kubeconfig, namespace, image, agentImage, apiAddresses.
    const given = (await this.kindFlags.settings(kind, this.context.cwd)) as {
      kubeconfig?: string;
      namespace?: string;
      image?: string;
      agentImage?: string;
      apiAddresses?: string[];
    };
    const context = this.first!.slice(this.first!.indexOf(":") + 1) || undefined;
    const name = this.second ?? "steward";
    if (!isControllerName(name))
      throw new UsageError(`controller name "${name}" must be lower-case letters, digits and hyphens`);
    const replicas = this.replicaCount();
    const namespace = given.namespace ?? "steward";
    if (!isControllerName(namespace))
      throw new UsageError(
        `--namespace "${namespace}" must be a namespace name: lower-case letters, digits and hyphens`,
      );
    for (const a of given.apiAddresses ?? [])
      if (!/^[^\s:]+:\d{1,5}$/.test(a)) throw new UsageError(`--api-address ${a}: give HOST:PORT`);
    if (cfg.controllers[name]) throw new UsageError(`controller "${name}" already exists here: choose another name`);
    const { kubernetes } = loadSubstrates();
    const connection = readKubeconfig(this.context.env, given.kubeconfig, context);
    const settings = {
      connection,
      namespace,
      image: given.image ?? kubernetes.DEFAULT_CONTROLLER_IMAGE,
      ...(given.agentImage ? { agentImage: given.agentImage } : {}),
      ...(given.apiAddresses ? { apiAddresses: given.apiAddresses } : {}),
    };
    const where = `${kind.words.cloud} (${connection.server}, namespace ${namespace})`;
    return {
      kind: substrate,
      where,
      first: `Bootstrapping controller "${name}" on ${where}`,
      plan: { name, settings, replicas, ...replaceAfterSetting(this.replaceAfter), timeoutMs: this.timeout },
      after: [
        replicas > 1
          ? "A pod that comes back with an empty volume is taken back into the cluster by the controller itself (steward show-controller)."
          : "One replica: steward enable-ha -n 3 grows it: the controller scales its StatefulSet and takes each new pod into etcd.",
        this.adminCredentials(
          `steward add-k8s CLUSTER --kubeconfig … and steward add-model NAME --substrate ${kind.cli!.target!.word}:CLUSTER`,
        ),
      ],
    };
  }

  private async sshTarget(substrate: SshHostsKind, cfg: ClientConfig): Promise<Target<SshHostsKind>> {
    const targets = this.first!.split(",")
      .map((t) => t.trim())
      .filter(Boolean);
    checkReplicaCount(targets.length, "the number of hosts");
    if (this.hostKey.length > 0 && this.hostKey.length !== targets.length)
      throw new UsageError(`give one --host-key per host (${targets.length}, in order), or use --trust-on-first-use`);
    const others =
      targets.length > 1
        ? await sshHosts(this.context, targets.slice(1), {
            keyFile: this.keyFile,
            keyEnv: this.keyEnv,
            hostKeys: this.hostKey.slice(1),
            tofu: this.tofu,
          })
        : [];
    const target = parseSshTarget(targets[0]!);
    const name =
      this.second ??
      target.host
        .replace(/[^a-z0-9]+/gi, "-")
        .toLowerCase()
        .replace(/^-+|-+$/g, "");
    this.checkName(name, cfg, "; give one after the target");
    if (this.hostKey.length === 0 && !this.tofu)
      throw new UsageError(
        "the host key is not pinned: pass --host-key SHA256:… (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub on the host) or --trust-on-first-use",
      );
    const privateKey = await readPrivateKey(this.context, this.keyFile, this.keyEnv);
    const first = {
      host: target.host,
      user: target.user,
      privateKey,
      ...(this.hostKey[0] ? { hostKey: this.hostKey[0] } : { trustOnFirstUse: true }),
    };
    const where = targets.map((t) => parseSshTarget(t).host).join(", ");
    return {
      kind: substrate,
      where,
      first: `Connecting to ${where} over SSH`,
      plan: {
        name,
        settings: { hosts: [first, ...others] },
        replicas: targets.length,
        port: this.port ?? 17070,
        ...replaceAfterSetting(this.replaceAfter),
        timeoutMs: this.timeout,
      },
      existing: (host) =>
        new UsageError(
          `${host} already runs a controller that this client does not know; log in to it with the admin password you kept (steward login), or remove /var/lib/steward/controller there`,
        ),
      after: [this.adminCredentials("steward add-model <name>")],
    };
  }
}

/** Where one bootstrap goes, as one target's flags made it, and what the client remembers and says. */
interface Target<K extends Substrates.HostingKind> {
  kind: K;
  plan: Substrates.ControllerPlan<Substrates.HostingSettings[K]>;
  /** "EC2 (eu-west-1)"; none for this host. */
  where?: string;
  /** The progress line while the first replica comes up (a refused SSH port, a slow cloud); none for this host. */
  first?: string;
  /** The error for a place that holds a controller this client does not know. */
  existing?(where: string): Error;
  /** The lines after "Bootstrapped controller …". */
  after: string[];
}

function isControllerName(name: string): boolean {
  return name.length <= 63 && NAME_PATTERN.test(name);
}

/** The substrates package, loaded on first use: it brings node-ssh (megabytes most commands never need). */
function loadSubstrates(): typeof Substrates {
  return require("../../substrates") as typeof Substrates;
}
