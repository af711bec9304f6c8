/**
 * Who local agents run as. A controller running as root starts them as an unprivileged system user
 * (`steward-agent`, made if missing), so an operator's hooks cannot read the controller's data
 * directory (CA key, store, consoles); a controller run by a normal user is that user's own
 * development substrate and starts them as itself.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { StewardError } from "../../api/core";

export interface AgentIdentity {
  user: string;
  uid: number;
  gid: number;
}

export const DEFAULT_AGENT_USER = "steward-agent";
const USER_NAME = /^[a-z_][a-z0-9_-]{0,31}$/;
const run = promisify(execFile);

/** The user local agents run as, made if missing; undefined when this process is not root (agents run as it). */
export async function localAgentIdentity(user = DEFAULT_AGENT_USER): Promise<AgentIdentity | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  if (!USER_NAME.test(user))
    throw new StewardError(
      "invalid-request",
      `localMachines.agentUser "${user}" is not a user name (a-z, 0-9, "_", "-", starting with a letter or "_")`,
    );
  let ids = await lookUp(user);
  // Two controllers on one host may both make it: the loser finds the winner's.
  for (let attempt = 0; !ids && attempt < 5; attempt++) {
    await run("useradd", [
      "--system",
      "--user-group",
      "--no-create-home",
      "--home-dir",
      "/nonexistent",
      "--shell",
      "/usr/sbin/nologin",
      user,
    ]).catch(() => new Promise((r) => setTimeout(r, 200)));
    ids = await lookUp(user);
  }
  if (!ids)
    throw new StewardError(
      "internal",
      `could not create the user "${user}" that local agents run as (useradd failed): create it (useradd --system ${user}) or name another in localMachines.agentUser`,
    );
  if (ids.uid === 0)
    throw new StewardError(
      "invalid-request",
      `localMachines.agentUser "${user}" is root: local agents must run as an unprivileged user`,
    );
  return { user, ...ids };
}

async function lookUp(user: string): Promise<{ uid: number; gid: number } | undefined> {
  try {
    const [uid, gid] = await Promise.all([run("id", ["-u", user]), run("id", ["-g", user])]);
    return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  } catch {
    return undefined;
  }
}
