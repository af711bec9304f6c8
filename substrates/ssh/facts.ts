/** What an installer learns about a host before changing anything, in one round trip. */
import { StewardError } from "../../api/core";
import type { SshTarget } from "./ssh-session";
import { SshSession } from "./ssh-session";

export interface HostFacts {
  os: string;
  arch: "x64" | "arm64";
  distro: string;
  hostname: string;
  systemd: boolean;
  /** Major version of a usable Node.js on the host's PATH, if any. */
  nodeMajor?: number;
  nodePath?: string;
}

const SCRIPT = [
  "echo os=$(uname -s)",
  "echo arch=$(uname -m)",
  'echo distro=$( (. /etc/os-release 2>/dev/null && echo "$ID $VERSION_ID") || echo unknown)',
  "echo hostname=$(hostname)",
  "echo uid=$(id -u)",
  "if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then echo systemd=yes; else echo systemd=no; fi",
  "echo node=$(node --version 2>/dev/null || echo none)",
  "echo nodepath=$(command -v node 2>/dev/null || echo none)",
  'if [ "$(id -u)" = 0 ] || sudo -n true 2>/dev/null; then echo sudo=yes; else echo sudo=no; fi',
].join("; ");

/**
 * Connects, checks the host is one Steward can install on (OS, architecture, passwordless sudo),
 * and returns its verified host key; nothing is changed on it.
 */
export async function checkHost(target: SshTarget, attempts: number): Promise<string> {
  const session = await SshSession.connect(target, { attempts });
  try {
    await gatherFacts(session);
    return session.hostKey;
  } finally {
    session.close();
  }
}

export async function gatherFacts(s: SshSession): Promise<HostFacts> {
  const out = await s.must("gathering facts", SCRIPT);
  const f = Object.fromEntries(
    out.split("\n").map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1).trim()]),
  );
  const host = s.target.host;
  if (f.os !== "Linux")
    throw new StewardError(
      "invalid-request",
      `${host} runs ${f.os || "an unknown OS"}; Steward agents run on Linux only`,
    );
  const arch = f.arch === "x86_64" ? "x64" : f.arch === "aarch64" ? "arm64" : undefined;
  if (!arch)
    throw new StewardError("invalid-request", `${host} is ${f.arch}; Steward agents run on x86_64 and aarch64`);
  if (f.sudo !== "yes") {
    throw new StewardError(
      "forbidden",
      `${s.target.user}@${host} needs passwordless sudo (sudo -n true asked for a password): add "${s.target.user} ALL=(ALL) NOPASSWD: ALL" to /etc/sudoers.d/steward on the host, or connect as root`,
    );
  }
  const m = /^v(\d+)\./.exec(f.node ?? "");
  return {
    os: f.os!,
    arch,
    distro: f.distro ?? "unknown",
    hostname: f.hostname ?? host,
    systemd: f.systemd === "yes",
    ...(m ? { nodeMajor: Number(m[1]), nodePath: f.nodepath } : {}),
  };
}
