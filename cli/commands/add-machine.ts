import { Command, Option, UsageError } from "clipanion";
import { STORAGE_DEVICE_PATTERN, StewardError, contractNamed, kindsWhere, substratesWhere } from "../../api/core";
import { ModelCommand } from "../base-command";
import { withConstraintsFlag } from "../cloud-options";
import { table } from "../../api/core";
import { DURATION_HELP, isDuration, isPort, isWholeNumber } from "../validators";
import type { SshSpec } from "../ssh-options";
import { parseSshTarget, readPrivateKey } from "../ssh-options";

export default class AddMachineCommand extends withConstraintsFlag(ModelCommand) {
  static override paths = [["add-machine"]];
  static override usage = Command.Usage({
    category: "Machines",
    description: "add machines to the model",
    details: `
      \`ssh:user@host\` installs an agent on a host you reach over SSH (bare metal, a VMware VM, any
      Linux VM): the controller connects with the private key you give (read from \`--key-file\` or
      the variable named by \`--key-env\`; it is used for this install only and never stored),
      verifies the host key against \`--host-key\` (or records it with \`--trust-on-first-use\`, then
      enforces it), ships Node.js if the host has none, installs a service and waits until the agent
      has logged in. Non-root users need passwordless sudo. Running it again on an installed host
      changes nothing; on a half-installed host it finishes the install. Several hosts install in
      parallel, each with its own progress.

      \`local\` starts an agent process on the controller's host with a directory of its own.
      \`manual\` only registers the machine and prints the agent credential once.
      \`aws\` (in an aws model) launches an EC2 instance per machine, \`vsphere\` (in a vsphere model)
      clones a VM from the model's template; their agents enrol themselves. \`--constraints\`
      (Juju's syntax) are merged over the model's: on aws they choose the instance type and root
      volume size, on vsphere the VM's CPUs and memory.
    `,
    examples: [
      [
        "Install an agent on a host, pinning its key",
        "$0 add-machine ssh:root@10.0.0.5 --key-file ~/.ssh/id_ed25519 --host-key SHA256:Vn1...Q",
      ],
      [
        "Three hosts as a sudo user, recording their keys",
        "$0 add-machine ssh:ops@db1 ssh:ops@db2 ssh:ops@db3 --key-file ops.key --trust-on-first-use",
      ],
      [
        "A host whose second disk is for units' storage (the device pool)",
        "$0 add-machine ssh:root@10.0.0.6 --key-file k --host-key SHA256:… --storage-device /dev/sdb",
      ],
      [
        "Through a bastion",
        "$0 add-machine ssh:root@10.1.0.7 --key-file k --host-key SHA256:… --jump ops@bastion --jump-host-key SHA256:…",
      ],
      ["Add a local machine", "$0 add-machine local"],
      ["Launch three EC2 instances in an aws model", "$0 add-machine aws -n 3"],
      [
        "An EC2 instance with 8 cores, 32 GiB and a 100 GiB root volume",
        '$0 add-machine aws --constraints "cores=8 mem=32G root-disk=100G"',
      ],
      ["A VM with 4 CPUs and 16 GiB in a vsphere model", '$0 add-machine vsphere --constraints "cores=4 mem=16G"'],
    ],
  });

  targets = Option.Rest({ required: 1, name: "local|manual|aws|vsphere|ssh:user@host" });
  count = Option.String("-n", "1", {
    description: "How many machines (local, manual, aws, vsphere)",
    validator: isWholeNumber(1),
  });
  port = Option.String("--port", "22", { description: "SSH port", validator: isPort() });
  keyFile = Option.String("--key-file", { description: "Private key file for ssh: targets" });
  keyEnv = Option.String("--key-env", { description: "Name of an environment variable holding the private key" });
  passphraseEnv = Option.String("--passphrase-env", {
    description: "Name of an environment variable holding the key's passphrase",
  });
  hostKey = Option.Array("--host-key", [], {
    description: "Pinned host key fingerprint (SHA256:…), one per ssh: target in order",
  });
  tofu = Option.Boolean("--trust-on-first-use", false, {
    description: "Accept and record the host key the host offers this time",
  });
  storageDevice = Option.Array("--storage-device", [], {
    description: "A block device of the ssh: host(s) for units' storage (the device pool), e.g. /dev/sdb; repeatable",
  });
  jump = Option.String("--jump", { description: "Reach the hosts through this bastion, user@host[:port] (same key)" });
  jumpHostKey = Option.String("--jump-host-key", { description: "The bastion's pinned host key, SHA256:…" });
  timeout = Option.String("--timeout", "10m", {
    description: "How long to wait for the installs: " + DURATION_HELP,
    validator: isDuration(),
  });

  async run(): Promise<number> {
    const first = this.targets[0]!;
    const kind = contractNamed(first);
    const sized = kindsWhere((k) => !!k.constraintsProblem);
    if (kind?.addMachines === "count") {
      if (this.targets.length > 1) throw new UsageError(`give "${first}" alone (use -n for several machines)`);
      const n = this.count;
      const constraints = this.constraintsText();
      if (this.storageDevice.length > 0)
        throw new UsageError(`--storage-device declares a device of an ssh: host; ${first} machines take none`);
      if (constraints && !kind.constraintsProblem)
        throw new UsageError(
          `--constraints are for ${sized} machines, which Steward provisions; ${first} machines are what they are`,
        );
      const client = await this.connect();
      const res = await client.addMachines(await this.model(), kind.name, n, constraints);
      for (const m of res.machines)
        this.out(
          m.credential
            ? `Created machine ${m.id}; its agent credential (shown once): ${m.credential}`
            : `Created machine ${m.id}.`,
        );
      return 0;
    }
    if (this.constraints !== undefined)
      throw new UsageError(
        `--constraints are for ${sized} machines, which Steward provisions; an ssh: host is what it is`,
      );
    const specs = this.targets.map((t) => {
      if (!t.startsWith("ssh:"))
        throw new UsageError(
          `"${t}" is not ${substratesWhere((k) => k.addMachines === "count").join(", ")} or ssh:user@host`,
        );
      return parseSshTarget(t);
    });
    if (this.hostKey.length > 0 && this.hostKey.length !== specs.length)
      throw new UsageError(`give one --host-key per ssh: target (${specs.length}), or use --trust-on-first-use`);
    if (this.hostKey.length === 0 && !this.tofu)
      throw new UsageError(
        "the host keys are not pinned: pass --host-key SHA256:… for each host (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub on it), or --trust-on-first-use to record what the hosts offer now",
      );
    for (const d of this.storageDevice)
      if (!STORAGE_DEVICE_PATTERN.test(d) || d.split("/").includes(".."))
        throw new UsageError(`--storage-device "${d}" is not a device path under /dev, such as /dev/sdb`);
    const privateKey = await this.readKey();
    const jump = this.parseJump();
    const passphrase = this.passphraseEnv ? this.context.env[this.passphraseEnv] : undefined;
    const port = this.port;
    const client = await this.connect();
    const model = await this.model();
    const added: { spec: SshSpec; id: string }[] = [];
    const failed: string[][] = [];
    await Promise.all(
      specs.map(async (spec, i) => {
        try {
          const res = await client.addSshMachine(
            model,
            {
              host: spec.host,
              port,
              user: spec.user,
              privateKey,
              ...(passphrase ? { passphrase } : {}),
              ...(jump ? { jump } : {}),
              ...(this.hostKey[i] ? { hostKey: this.hostKey[i] } : { trustOnFirstUse: true }),
            },
            { storageDevices: this.storageDevice },
          );
          const m = res.machines[0]!;
          this.progress(`${spec.host}: machine ${m.id}, host key ${m.hostKey}${this.tofu ? " (recorded)" : ""}`);
          added.push({ spec, id: m.id });
        } catch (err) {
          if (!StewardError.isInstance(err)) throw err;
          failed.push([spec.host, "-", err.message]);
        }
      }),
    );
    const deadline = Date.now() + this.timeout;
    const last = new Map<string, string>();
    const pending = new Set(added.map((a) => a.id));
    while (pending.size > 0 && Date.now() < deadline) {
      for (const m of await client.listMachines(model)) {
        if (!pending.has(m.id)) continue;
        const host = added.find((a) => a.id === m.id)!.spec.host;
        const line = m.status === "started" ? "agent running" : m.message;
        if (last.get(m.id) !== line) {
          last.set(m.id, line);
          this.progress(`${host}: ${line}`);
        }
        if (m.status === "started") pending.delete(m.id);
        if (m.status === "error") {
          pending.delete(m.id);
          failed.push([host, m.id, m.message]);
        }
      }
      if (pending.size > 0) await new Promise((r) => setTimeout(r, 300));
    }
    for (const id of pending)
      failed.push([added.find((a) => a.id === id)!.spec.host, id, "timed out waiting for the install"]);
    const ok = added.filter((a) => !failed.some((f) => f[1] === a.id));
    if (ok.length > 0) this.out(`Machines ready: ${ok.map((a) => `${a.id} (${a.spec.host})`).join(", ")}.`);
    if (failed.length > 0) {
      this.context.stderr.write(
        `ERROR ${failed.length} host${failed.length === 1 ? "" : "s"} failed:\n${table(["Host", "Machine", "Problem"], failed)}`,
      );
      return 1;
    }
    return 0;
  }

  private parseJump(): { host: string; port: number; user: string; hostKey: string } | undefined {
    if (!this.jump) return undefined;
    const m = /^([a-z_][a-z0-9_.-]*)@([A-Za-z0-9._-]+)(?::(\d+))?$/.exec(this.jump);
    if (!m) throw new UsageError(`--jump "${this.jump}" is not user@host[:port]`);
    if (!this.jumpHostKey)
      throw new UsageError("--jump needs --jump-host-key SHA256:… (the bastion's host key is verified too)");
    return { user: m[1]!, host: m[2]!, port: Number(m[3] ?? 22), hostKey: this.jumpHostKey };
  }

  private readKey(): Promise<string> {
    return readPrivateKey(this.context, this.keyFile, this.keyEnv);
  }
}
