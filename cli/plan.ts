/** The changes that take a model from what the controller has to what a model file says. */
import type { AppliedChange, ControllerClient, ModelStatus } from "../api/core";
import { StewardError, changeOf, integrationJoins, shortHash } from "../api/core";
import type { DesiredApplication, ModelDefinition } from "./model-file";

export type Change =
  | { kind: "create-model"; name: string }
  | { kind: "deploy"; app: DesiredApplication }
  | { kind: "upgrade"; app: DesiredApplication; fromVersion: string; fromHash: string }
  | {
      kind: "config";
      app: string;
      patch: Record<string, string | number | boolean | null>;
      before: Record<string, unknown>;
    }
  | { kind: "add-units"; app: string; count: number; from: number }
  | { kind: "remove-units"; app: string; units: string[]; from: number }
  | { kind: "integrate"; a: string; b: string }
  | { kind: "remove-integration"; a: string; b: string }
  | { kind: "remove-application"; app: string };

export async function actualStatus(client: ControllerClient, model: string): Promise<ModelStatus | undefined> {
  return client.status(model).catch((e: unknown) => {
    if (StewardError.isInstance(e) && e.code === "not-found") return undefined;
    throw e;
  });
}

export function planChanges(def: ModelDefinition, model: string, actual: ModelStatus | undefined): Change[] {
  const changes: Change[] = [];
  if (!actual) changes.push({ kind: "create-model", name: model });
  const apps = actual?.applications ?? {};
  for (const want of def.applications) {
    const have = apps[want.name];
    if (!have || have.life === "dying") {
      changes.push({ kind: "deploy", app: want });
      continue;
    }
    if (have.operator.hash !== want.hash)
      changes.push({ kind: "upgrade", app: want, fromVersion: have.operator.version, fromHash: have.operator.hash });
    const wantEffective: Record<string, string | number | boolean> = {};
    for (const [k, opt] of Object.entries(want.meta.config))
      if (opt.default !== undefined) wantEffective[k] = opt.default;
    Object.assign(wantEffective, want.config);
    const patch: Record<string, string | number | boolean | null> = {};
    for (const k of new Set([...Object.keys(wantEffective), ...Object.keys(have.config)])) {
      if (!(k in want.meta.config)) continue; // an option the new operator drops goes with the upgrade
      if (wantEffective[k] !== have.config[k]) patch[k] = k in want.config ? want.config[k]! : null;
    }
    if (Object.keys(patch).length > 0) changes.push({ kind: "config", app: want.name, patch, before: have.config });
    const alive = Object.values(have.units)
      .filter((u) => u.life === "alive")
      .map((u) => u.name)
      .sort((a, b) => unitNo(a) - unitNo(b));
    if (alive.length < want.units)
      changes.push({ kind: "add-units", app: want.name, count: want.units - alive.length, from: alive.length });
    if (alive.length > want.units)
      changes.push({ kind: "remove-units", app: want.name, units: alive.slice(want.units), from: alive.length });
  }
  const existing = (actual?.integrations ?? []).filter((i) => i.type === "regular" && i.life === "alive");
  for (const pair of def.integrations)
    if (!existing.some((i) => integrationJoins(pair, i))) changes.push({ kind: "integrate", a: pair[0], b: pair[1] });
  for (const i of existing)
    if (!def.integrations.some((pair) => integrationJoins(pair, i)))
      changes.push({ kind: "remove-integration", a: i.provider, b: i.requirer });
  const wanted = new Set(def.applications.map((a) => a.name));
  for (const [name, have] of Object.entries(apps))
    if (!wanted.has(name) && have.life === "alive") changes.push({ kind: "remove-application", app: name });
  return changes;
}

const unitNo = (u: string): number => Number(u.slice(u.indexOf("/") + 1));

export function describePlan(model: string, changes: Change[]): string {
  if (changes.length === 0) return `Model "${model}" is in sync with the file: nothing to change.\n`;
  const lines = [`Plan for model "${model}":`];
  let add = 0,
    change = 0,
    remove = 0;
  for (const c of changes) {
    switch (c.kind) {
      case "create-model":
        lines.push(`  + create model ${c.name}`);
        add++;
        break;
      case "deploy":
        lines.push(
          `  + deploy ${c.app.name} (${c.app.meta.name} ${c.app.meta.version}) with ${c.app.units} unit${c.app.units === 1 ? "" : "s"}${Object.keys(c.app.config).length ? `, config ${JSON.stringify(c.app.config)}` : ""}`,
        );
        add++;
        break;
      case "upgrade":
        lines.push(
          `  ~ ${c.app.name}: upgrade ${c.app.meta.name} ${c.fromVersion} (${shortHash(c.fromHash)}) -> ${c.app.meta.version} (${shortHash(c.app.hash)})`,
        );
        change++;
        break;
      case "config":
        for (const [k, v] of Object.entries(c.patch))
          lines.push(
            `  ~ ${c.app}: config ${k} ${JSON.stringify(c.before[k])} -> ${v === null ? "(default)" : JSON.stringify(v)}`,
          );
        change++;
        break;
      case "add-units":
        lines.push(`  ~ ${c.app}: add ${c.count} unit${c.count === 1 ? "" : "s"} (${c.from} -> ${c.from + c.count})`);
        change++;
        break;
      case "remove-units":
        lines.push(`  ~ ${c.app}: remove ${c.units.join(", ")} (${c.from} -> ${c.from - c.units.length})`);
        change++;
        break;
      case "integrate":
        lines.push(`  + integrate ${c.a} ${c.b}`);
        add++;
        break;
      case "remove-integration":
        lines.push(`  - remove integration ${c.a} ${c.b}`);
        remove++;
        break;
      case "remove-application":
        lines.push(`  - remove application ${c.app}`);
        remove++;
        break;
    }
  }
  lines.push(`${add} to add, ${change} to change, ${remove} to remove.`);
  return lines.join("\n") + "\n";
}

/**
 * Carries out a plan in a safe order; `progress` hears each step. Returns what each upgraded or
 * reconfigured application wants its units to apply, for the wait after it.
 */
export async function applyChanges(
  client: ControllerClient,
  model: string,
  def: ModelDefinition,
  changes: Change[],
  progress: (line: string) => void,
): Promise<Record<string, AppliedChange>> {
  const changed: Record<string, AppliedChange> = {};
  for (const c of changes) {
    if (c.kind === "create-model") {
      progress(`Creating model ${c.name}`);
      await client.createModel(
        c.name,
        def.updateStatusInterval ? { updateStatusInterval: def.updateStatusInterval } : undefined,
      );
    }
  }
  const uploaded = new Set<string>();
  for (const c of changes) {
    if ((c.kind === "deploy" || c.kind === "upgrade") && !uploaded.has(c.app.hash)) {
      uploaded.add(c.app.hash);
      if (!(await client.hasOperator(c.app.hash))) {
        progress(`Uploading operator ${c.app.meta.name} ${c.app.meta.version}`);
        await client.uploadOperator(c.app.bundle);
      }
    }
  }
  for (const c of changes) {
    switch (c.kind) {
      case "deploy":
        progress(`Deploying ${c.app.name} (${c.app.units} unit${c.app.units === 1 ? "" : "s"})`);
        await client.deploy(model, {
          name: c.app.name,
          operator: c.app.hash,
          units: c.app.units,
          ...(Object.keys(c.app.config).length ? { config: c.app.config } : {}),
          ...(c.app.to ? { to: c.app.to } : {}),
        });
        break;
      case "upgrade":
        progress(`Upgrading ${c.app.name} to ${c.app.meta.version}`);
        changed[c.app.name] = changeOf(await client.updateApplication(model, c.app.name, { operator: c.app.hash }));
        break;
      case "config":
        progress(`Configuring ${c.app}`);
        changed[c.app] = changeOf(await client.updateApplication(model, c.app, { config: c.patch }));
        break;
      case "add-units":
        progress(`Adding ${c.count} unit(s) to ${c.app}`);
        await client.addUnits(model, c.app, c.count);
        break;
      case "integrate":
        progress(`Integrating ${c.a} and ${c.b}`);
        await client.integrate(model, c.a, c.b);
        break;
      default:
        break;
    }
  }
  // Removals last, integrations before the applications they join.
  for (const c of changes) {
    switch (c.kind) {
      case "remove-integration":
        progress(`Removing the integration of ${c.a} and ${c.b}`);
        await client.removeIntegration(model, c.a, c.b);
        break;
      case "remove-units":
        for (const u of c.units) {
          progress(`Removing ${u}`);
          await client.removeUnit(model, u);
        }
        break;
      case "remove-application":
        progress(`Removing application ${c.app}`);
        await client.removeApplication(model, c.app);
        break;
      default:
        break;
    }
  }
  return changed;
}
