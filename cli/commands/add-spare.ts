import { Command, Option } from "clipanion";
import { ControllerCommand } from "../base-command";
import { sshHosts } from "../ssh-options";

export default class AddSpareCommand extends ControllerCommand {
  static override paths = [["add-spare"]];
  static override usage = Command.Usage({
    category: "Controllers",
    description: "give the controller spare hosts to replace lost replicas on",
    details: `
      Checks each host over SSH now (host key, credentials, OS, passwordless sudo) and adds it to the
      controller's spare pool. When a replica has been gone longer than the controller's
      replace-after setting, its leader installs a replacement on a spare host. The controller keeps
      the private key (in its store, which only replicas can read) to do so.
    `,
    examples: [
      [
        "Add a spare host, pinning its key",
        "$0 add-spare ssh:root@10.0.0.9 --key-file ~/.ssh/id_ed25519 --host-key SHA256:Ab…",
      ],
    ],
  });

  targets = Option.Rest({ required: 1, name: "ssh:user@host" });
  keyFile = Option.String("--key-file", { description: "Private key file" });
  keyEnv = Option.String("--key-env", { description: "Name of an environment variable holding the private key" });
  hostKey = Option.Array("--host-key", [], { description: "Pinned host key (SHA256:…), one per host in order" });
  tofu = Option.Boolean("--trust-on-first-use", false, { description: "Accept and record the host keys offered now" });

  async run(): Promise<number> {
    const hosts = await sshHosts(this.context, this.targets, {
      keyFile: this.keyFile,
      keyEnv: this.keyEnv,
      hostKeys: this.hostKey,
      tofu: this.tofu,
    });
    const res = await (await this.connect()).addSpares(hosts);
    for (const s of res.spares) this.out(`Spare host ${s.host} added (host key ${s.hostKey}).`);
    return 0;
  }
}
