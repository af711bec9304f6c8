/**
 * The publisher's tool for signed releases (not a `steward` command: whoever publishes releases
 * runs it where the private key is, never on a controller):
 *
 *   node dist/controller/releases/release-tool.js keygen KEY.pem        # prints the public key
 *   node dist/controller/releases/release-tool.js sign DIR VERSION --key KEY.pem
 *
 * `keygen` writes a new ed25519 private key (0600; refuses to overwrite) and prints the public key
 * controllers are told to trust; `sign` writes DIR's manifest.json and manifest.sig.
 */
import { readFile, writeFile } from "node:fs/promises";
import { generateReleaseKey } from "./release-keys";
import { signRelease } from "./release-manifest";

const USAGE = `usage:
  release-tool keygen KEY.pem                   write a new ed25519 key (0600) and print its public key
  release-tool sign DIR VERSION --key KEY.pem   write DIR's manifest.json and manifest.sig, signed with KEY.pem`;

export async function releaseTool(args: string[], out: (line: string) => void): Promise<number> {
  const [command, ...rest] = args;
  if (command === "keygen" && rest.length === 1) {
    const pair = generateReleaseKey();
    await writeFile(rest[0]!, pair.privateKeyPem, { mode: 0o600, flag: "wx" }).catch((err: NodeJS.ErrnoException) => {
      throw new Error(err.code === "EEXIST" ? `${rest[0]} exists: a key is never overwritten` : err.message);
    });
    out(pair.publicKey);
    return 0;
  }
  if (command === "sign" && rest.length === 4 && rest[2] === "--key") {
    const [dir, version, , keyFile] = rest as [string, string, string, string];
    const manifest = await signRelease(dir, version, await readFile(keyFile, "utf8"));
    out(`signed release ${version}: ${manifest.files.length} files`);
    return 0;
  }
  out(USAGE);
  return command === "--help" || command === "help" ? 0 : 2;
}

if (require.main === module)
  releaseTool(process.argv.slice(2), (line) => process.stdout.write(`${line}\n`)).then(
    (code) => process.exit(code),
    (err: Error) => {
      process.stderr.write(`release-tool: ${err.message}\n`);
      process.exit(1);
    },
  );
