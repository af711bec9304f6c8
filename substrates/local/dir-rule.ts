/**
 * Where an imported local machine's agent may run. A model export can name the directory of a
 * local machine (`localDir`: a migrated agent stays where its first controller started it), and the
 * local substrate starts an agent there: left unchecked, a file makes this controller create a
 * directory anywhere on the host and run code in it, beyond the reach of destroy-controller.
 *
 * A `localDir` must be `<machines>/<model-uuid>/<machine-id>` exactly (absolute and normalised)
 * where `<machines>` is this controller's machines directory, or the machines directory of another
 * local controller on this host whose agent for that very machine already lives there (its
 * agent.json present): the one case a migration brings. Nothing else is adopted.
 */
import { stat } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, normalize } from "node:path";
import { AGENT_CONFIG_FILE } from "../../api/core";
import { dataFiles } from "../controller-files";

/** The problem with `dir` as the directory of machine `machine` of model `model`, or undefined when it may be used. */
export type LocalDirCheck = (dir: string, model: string, machine: string) => Promise<string | undefined>;

/** The rule for a controller whose local machines live under `machinesDir`. */
export function localDirRule(machinesDir: string): LocalDirCheck {
  return async (dir, model, machine) => {
    const expected = `<machines directory>/${model}/${machine}`;
    if (!isAbsolute(dir) || normalize(dir) !== dir || dir.endsWith("/"))
      return `"${dir.slice(0, 200)}" is not an absolute, normalised path (expected ${expected})`;
    const root = dirname(dirname(dir));
    if (basename(dir) !== machine || basename(dirname(dir)) !== model || basename(root) !== dataFiles.machines) {
      return `"${dir.slice(0, 200)}" is not a local machine's directory (expected ${expected})`;
    }
    if (root === machinesDir) return undefined;
    // Another local controller's agent, which a migration leaves where it runs: it must be there already.
    const config = await stat(join(dir, AGENT_CONFIG_FILE)).catch(() => undefined);
    if (!config?.isFile())
      return `"${dir.slice(0, 200)}" is outside this controller's directory (${machinesDir}) and holds no agent of this machine on this host`;
    return undefined;
  };
}
