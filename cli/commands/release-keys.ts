import { Command, Option } from "clipanion";
import { ControllerCommand } from "../base-command";

export default class ReleaseKeysCommand extends ControllerCommand {
  static override paths = [["release-keys"]];
  static override usage = Command.Usage({
    category: "Controllers",
    description: "show or change the keys the controller trusts to sign releases",
    details: `
      A controller uses a release from its release source only when its manifest is signed by a key
      it trusts: at first those of its controller.json (\`releases.keys\`), then those set here,
      kept in its store for every replica. To rotate a key, trust the new one, publish releases
      signed with it, then distrust the old one. Releases held that a key no longer trusted signed
      stop being offered (show-controller lists them as refused, saying so) until it is trusted
      again. The last key cannot be distrusted. Controller superusers only.
    `,
    examples: [
      ["Show the keys trusted", "$0 release-keys"],
      ["Rotate: trust the new key", "$0 release-keys --trust ed25519:NEW…"],
      ["…and, once releases are signed with it, drop the old one", "$0 release-keys --distrust ed25519:OLD…"],
    ],
  });

  trust = Option.Array("--trust", {
    description: "A public key to trust (ed25519:…, as release-tool.js keygen prints it)",
  });
  distrust = Option.Array("--distrust", { description: "A public key to trust no longer" });
  format = Option.String("--format", "tabular", { description: "tabular or json" });

  async run(): Promise<number> {
    const client = await this.connect();
    const changing = (this.trust?.length ?? 0) + (this.distrust?.length ?? 0) > 0;
    const keys = changing
      ? await client.changeReleaseKeys({
          ...(this.trust?.length ? { trust: this.trust } : {}),
          ...(this.distrust?.length ? { distrust: this.distrust } : {}),
        })
      : await client.releaseKeys();
    if (this.format === "json") {
      this.out(JSON.stringify(keys, null, 2));
      return 0;
    }
    this.out(
      keys.changed
        ? `Release keys trusted (changed by ${keys.changed.by} at ${keys.changed.at}):`
        : "Release keys trusted (as in controller.json):",
    );
    for (const k of keys.keys) this.out(`  ${k}`);
    if (keys.keys.length === 0) this.out("  none: no release from a release source is used");
    return 0;
  }
}
