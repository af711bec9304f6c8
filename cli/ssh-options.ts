/** What commands that reach hosts over SSH share: `ssh:user@host` targets and reading the private key. */
import { UsageError } from "clipanion";
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import type { StewardContext } from "./context";

export interface SshSpec {
  user: string;
  host: string;
}

export function parseSshTarget(t: string): SshSpec {
  const m = /^ssh:([a-z_][a-z0-9_.-]*)@([A-Za-z0-9.:_-]+)$/.exec(t);
  if (!m) throw new UsageError(`"${t}" is not ssh:user@host`);
  return { user: m[1]!, host: m[2]! };
}

/** The key's content from `--key-file` or the variable named by `--key-env` (never from the command line itself). */
export async function readPrivateKey(
  ctx: StewardContext,
  keyFile: string | undefined,
  keyEnv: string | undefined,
): Promise<string> {
  if (keyFile && keyEnv) throw new UsageError("give --key-file or --key-env, not both");
  if (keyEnv) {
    const v = ctx.env[keyEnv];
    if (!v) throw new UsageError(`environment variable ${keyEnv} (from --key-env) is empty`);
    return v;
  }
  if (!keyFile) throw new UsageError("ssh: targets need a private key: --key-file PATH or --key-env VAR");
  const path = resolve(ctx.cwd, keyFile.replace(/^~(?=\/)/, ctx.env.HOME ?? "~"));
  return readFile(path, "utf8").catch(() => {
    throw new UsageError(`cannot read the key file ${path}`);
  });
}

/** Hosts given as `ssh:user@host` targets with the shared key and pinning options, as the API takes them. */
export async function sshHosts(
  ctx: StewardContext,
  targets: string[],
  o: { keyFile?: string | undefined; keyEnv?: string | undefined; hostKeys: string[]; tofu: boolean; port?: number },
): Promise<
  { host: string; port: number; user: string; privateKey: string; hostKey?: string; trustOnFirstUse?: boolean }[]
> {
  const specs = targets.map(parseSshTarget);
  if (o.hostKeys.length > 0 && o.hostKeys.length !== specs.length)
    throw new UsageError(
      `give one --host-key per ssh: target (${specs.length}, in the same order), or use --trust-on-first-use`,
    );
  if (o.hostKeys.length === 0 && !o.tofu)
    throw new UsageError(
      "the host keys are not pinned: pass --host-key SHA256:… for each host (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub on it), or --trust-on-first-use to record what the hosts offer now",
    );
  const privateKey = await readPrivateKey(ctx, o.keyFile, o.keyEnv);
  return specs.map((s, i) => ({
    host: s.host,
    port: o.port ?? 22,
    user: s.user,
    privateKey,
    ...(o.hostKeys[i] ? { hostKey: o.hostKeys[i] } : { trustOnFirstUse: true }),
  }));
}
