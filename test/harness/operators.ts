/** Variants of the recorder fixture operator with the endpoints a test needs, made at test time. */
import { chmod, cp, mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StewardError } from "../../api";
import { parseOperatorYaml } from "../../api";
import { fixturesDir } from "./controller";

export interface RecorderVariant {
  name?: string;
  version?: string;
  provides?: Record<string, string>;
  requires?: Record<string, string>;
  peers?: Record<string, string>;
}

/** A copy of the recorder operator with `variant`'s name, version and endpoints. */
export async function recorderVariant(v: RecorderVariant): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "steward-op-"));
  await cp(join(fixturesDir, "operators", "recorder"), dir, { recursive: true });
  let yaml = await readFile(join(dir, "operator.yaml"), "utf8");
  yaml = yaml
    .replace(/^name: recorder$/m, `name: ${v.name ?? "recorder"}`)
    .replace(/^version: "1"$/m, `version: "${v.version ?? "1"}"`);
  for (const section of ["provides", "requires", "peers"] as const) {
    const eps = v[section];
    if (eps)
      yaml += `${section}:\n${Object.entries(eps)
        .map(([ep, iface]) => `  ${ep}:\n    interface: ${iface}\n`)
        .join("")}`;
  }
  await writeFile(join(dir, "operator.yaml"), yaml);
  return dir;
}

/** Every hook each unit ran, in order, as "hook" or "hook(remote-unit)". */
export async function hooksByUnit(recordDir: string): Promise<Map<string, string[]>> {
  const text = await readFile(join(recordDir, "hooks.log"), "utf8").catch(() => "");
  const byUnit = new Map<string, string[]>();
  for (const line of text.split("\n").filter(Boolean)) {
    const [unit, hook, remote] = line.split(" ");
    byUnit.set(unit!, [...(byUnit.get(unit!) ?? []), remote ? `${hook}(${remote})` : hook!]);
  }
  return byUnit;
}

/** The same, without update-status (its timing is random by design). */
export async function sequences(recordDir: string): Promise<Map<string, string[]>> {
  const m = await hooksByUnit(recordDir);
  for (const [u, hooks] of m)
    m.set(
      u,
      hooks.filter((h) => h !== "update-status"),
    );
  return m;
}

/**
 * A directory a fixture operator records into. Writable by every user: where tests run as root, local
 * agents and their hooks run as an unprivileged user (docs/users.md, "Local machines are a superuser's").
 */
export async function recordDir(prefix = "steward-rec-"): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await chmod(dir, 0o777);
  return dir;
}

/** An operator.yaml holding one `section` (`actions:`, `storage:`, `containers:`) with `body` indented under it. */
export const operatorYamlWith =
  (section: string) =>
  (body: string): string =>
    `name: op\nversion: "1"\n${section}:\n${body}`;

/** What parseOperatorYaml says of `text`: "accepted", or its error's message. */
export function yamlProblem(text: string): string {
  try {
    parseOperatorYaml(text);
    return "accepted";
  } catch (err) {
    return (err as StewardError).message;
  }
}
