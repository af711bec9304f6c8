/** Reading the user's kubeconfig for `add-k8s` and `bootstrap kubernetes:`, as kubectl finds it. */
import { UsageError } from "clipanion";
import { homedir } from "node:os";
import { join } from "node:path";
import type * as Substrates from "../substrates";

/** `file`, else the first of $KUBECONFIG, else ~/.kube/config; `context`, else its current one. A bad file is a usage error saying what is wrong. */
export function readKubeconfig(
  env: NodeJS.ProcessEnv,
  file: string | undefined,
  context: string | undefined,
): Substrates.kubernetes.KubeConnection {
  const { kubernetes } = require("../substrates") as typeof Substrates;
  const path = file ?? env.KUBECONFIG?.split(":").find(Boolean) ?? join(env.HOME ?? homedir(), ".kube", "config");
  try {
    return kubernetes.loadKubeconfig(path, context ? { context } : {});
  } catch (err) {
    throw new UsageError(`${(err as Error).message}${file ? "" : " (give the file with --kubeconfig)"}`);
  }
}
