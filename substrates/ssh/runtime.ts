/** The Node.js runtime on a host, and content-addressed uploads shared by the installers. */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { StewardError } from "../../api/core";
import type { HostFacts } from "./facts";
import type { SshSession } from "./ssh-session";
import { shellQuote } from "./ssh-session";

export const NODE_DIR = "/opt/steward/node";

const hashCache = new Map<string, Promise<string>>();
/** SHA-256 of a local file (cached: the node binary is 100 MB and the same for every host). */
export function fileSha256(path: string): Promise<string> {
  let p = hashCache.get(path);
  if (!p) {
    p = new Promise((resolve, reject) => {
      const h = createHash("sha256");
      createReadStream(path)
        .on("data", (d) => h.update(d))
        .on("end", () => resolve(h.digest("hex")))
        .on("error", reject);
    });
    hashCache.set(path, p);
  }
  return p;
}

export async function remoteSha256(s: SshSession, path: string): Promise<string> {
  return (await s.run(`sha256sum ${shellQuote(path)} 2>/dev/null`, { sudo: true })).stdout.split(" ")[0] ?? "";
}

/** Uploads this host's file to path `remote` on the SSH host unless it already has that exact content; returns bytes sent. */
export async function ensureFile(s: SshSession, local: string, remote: string, mode: string): Promise<number> {
  const sha = await fileSha256(local);
  if ((await remoteSha256(s, remote)) === sha) return 0;
  return s.putFile(local, remote, mode, sha);
}

/**
 * The Node.js to run Steward with: the host's own if it is 20 or newer, else `nodeBinary` (this
 * process's) shipped to /opt/steward/node/<hash>/ (same architecture only). Returns its path.
 */
export async function ensureNode(
  s: SshSession,
  facts: HostFacts,
  nodeBinary: string,
  note: (step: string, changed: boolean, bytes: number) => void,
): Promise<string> {
  if (facts.nodeMajor !== undefined && facts.nodeMajor >= 20 && facts.nodePath) {
    note(`node: using the host's ${facts.nodePath} (v${facts.nodeMajor})`, false, 0);
    return facts.nodePath;
  }
  if (facts.arch !== (process.arch === "arm64" ? "arm64" : "x64")) {
    throw new StewardError(
      "invalid-request",
      `${s.target.host} has no Node.js 20 or newer and is ${facts.arch}, unlike this machine (${process.arch}): install Node.js 20+ on it (e.g. apt-get install nodejs) and run again`,
    );
  }
  const node = `${NODE_DIR}/${(await fileSha256(nodeBinary)).slice(0, 16)}/node`;
  const bytes = await ensureFile(s, nodeBinary, node, "0755");
  note(
    bytes > 0 ? `node: shipped ${process.version} to ${node}` : "node: shipped runtime already in place",
    bytes > 0,
    bytes,
  );
  return node;
}
