/**
 * The Application resource: an operator deployed to units, configured, and (by default) waited on
 * until every unit is active/idle. Scale, config and operator changes are updates; a unit left in
 * error fails the step with a table of the units that are not ready, and the state still records
 * what exists, so the next `up` carries on from there.
 */
import { randomUUID } from "node:crypto";
import {
  StewardError,
  changeOf,
  checkConfigValue,
  formatConstraints,
  hookOutputs,
  notReadyError,
  parseConstraints,
  parseLeadershipLease,
  readOperatorDir,
  unitsOf,
  waitForModelReady,
} from "../../api/core";
import type { AppliedChange, ApplicationStatusView, ControllerClient, UnitStatusView } from "../../api/core";
import type { ControllerConnection } from "../connection";
import { Failures } from "./checks";
import type { StorageArgs, StorageDirective } from "./storage-args";
import { checkStorageArgs, observedStorage, sameStorage, storageChange, storageRequests } from "./storage-args";
import { changed, clientFor, isConflict, isNotFound, modelStatus, PartialFailure, until } from "./session";
import { isUnknown, plain, sameConfig, sameSet, sameValue } from "./values";

type ConfigValue = string | number | boolean;
export interface ApplicationInputs {
  connection: ControllerConnection;
  model: string;
  name: string;
  /** The operator directory (relative to the program) and its content hash, computed by the program. */
  operator: { path: string; hash: string };
  units: number;
  /** Placement: one unit on each of these machines (ids); `units` then equals their number. */
  machines?: string[];
  config: Record<string, ConfigValue>;
  /** For the machines made for its units (Juju's syntax), merged over the model's; a change applies to machines made after it. */
  constraints?: string;
  /** Per store the operator declares: pool, size and count for its units; a change applies to units added after it. */
  storage?: StorageArgs;
  /** Its units' leadership lease: seconds or a duration (`"10s"`); absent: the controller's. A change applies at the next renewal. */
  leadershipLease?: number | string;
  waitFor: "active" | "none";
  timeoutSeconds: number;
  deleteTimeoutSeconds: number;
  forceDelete: boolean;
  /** On delete, the units' storage is destroyed too (kept, detached, otherwise). Absent in state from before it. */
  destroyStorageOnDelete?: boolean;
  adopt: boolean;
}
export interface ApplicationOutputs extends ApplicationInputs {
  /** Stable for this application's life: a replaced application gets a new one (integrations key on it). */
  uid: string;
  unitNames: string[];
  operatorVersion: string;
  status: string;
  /** The operator's defaults, so a key set to its default and a key left out compare equal. */
  configDefaults: Record<string, ConfigValue>;
  /** What the controller gives each new unit of each store, as last seen (refresh compares with it). */
  storageDirectives?: Record<string, StorageDirective>;
}

export const applicationProvider = {
  async check(_olds: ApplicationInputs, news: ApplicationInputs) {
    const f = new Failures();
    f.connection(news.connection);
    f.name("model", news.model, "model name");
    f.name("name", news.name, "application name");
    f.wholeNumber("units", news.units, 0, 10000);
    f.oneOf("waitFor", news.waitFor, ["active", "none"]);
    f.wholeNumber("timeoutSeconds", news.timeoutSeconds, 1, 7 * 86400);
    f.wholeNumber("deleteTimeoutSeconds", news.deleteTimeoutSeconds, 0, 7 * 86400);
    if (Array.isArray(news.machines)) {
      news.machines.forEach((m, i) => {
        if (!isUnknown(m) && !/^[0-9]+$/.test(String(m)))
          f.add(`machines[${i}]`, `must be a machine id such as "0", not ${JSON.stringify(m)}`);
      });
      if (new Set(news.machines).size !== news.machines.length)
        f.add("machines", "lists a machine twice: one unit per machine");
      if (typeof news.units === "number" && news.units !== news.machines.length)
        f.add("units", `is ${news.units} but machines lists ${news.machines.length}: give one or the other`);
    }
    let operatorRead = false;
    if (!isUnknown(news.operator) && news.operator && !isUnknown(news.operator.path)) {
      try {
        const { meta } = await readOperatorDir(news.operator.path);
        operatorRead = true;
        checkStorageArgs(f, news.storage, meta);
        for (const [k, v] of Object.entries(news.config ?? {})) {
          if (isUnknown(v)) continue;
          const opt = meta.config[k];
          if (!opt)
            f.add(
              `config.${k}`,
              `operator ${meta.name} has no option "${k}"; its options: ${Object.keys(meta.config).join(", ") || "none"}`,
            );
          else {
            const problem = checkConfigValue(opt.type, v);
            if (problem) f.add(`config.${k}`, problem);
          }
        }
      } catch (e) {
        f.add("operator", (e as Error).message);
      }
    }
    if (!operatorRead) checkStorageArgs(f, news.storage, undefined);
    if (news.leadershipLease !== undefined && !isUnknown(news.leadershipLease)) {
      const lease = parseLeadershipLease(news.leadershipLease);
      if (!lease.ok) f.add("leadershipLease", lease.message);
    }
    if (typeof news.constraints === "string") {
      try {
        parseConstraints(news.constraints);
      } catch (e) {
        if (!StewardError.isInstance(e)) throw e;
        f.add("constraints", e.message.replace(/^constraints: /, ""));
      }
    }
    return { inputs: news, failures: f.list };
  },

  async diff(_id: string, olds: ApplicationOutputs, news: ApplicationInputs) {
    const replaces: string[] = [];
    if (olds.model !== news.model) replaces.push("model");
    if (olds.name !== news.name) replaces.push("name");
    const changes =
      replaces.length > 0 ||
      olds.operator.hash !== news.operator.hash ||
      olds.units !== news.units ||
      (news.machines !== undefined && !sameSet(olds.machines, news.machines)) ||
      normalConstraints(olds.constraints) !== normalConstraints(news.constraints) ||
      leaseSeconds(olds.leadershipLease) !== leaseSeconds(news.leadershipLease) ||
      // An update: storage directives apply to units added after the change (never a replace, which would destroy data).
      !sameStorage(olds.storage, news.storage) ||
      !sameConfig(effective(olds.config, olds.configDefaults), effective(news.config, olds.configDefaults)) ||
      !sameValue(olds.connection, news.connection) ||
      olds.waitFor !== news.waitFor ||
      olds.timeoutSeconds !== news.timeoutSeconds ||
      olds.deleteTimeoutSeconds !== news.deleteTimeoutSeconds ||
      olds.forceDelete !== news.forceDelete ||
      (olds.destroyStorageOnDelete ?? false) !== (news.destroyStorageOnDelete ?? false);
    return { changes, replaces, deleteBeforeReplace: true };
  },

  async create(inputs: ApplicationInputs) {
    const client = clientFor(inputs.connection);
    const hash = await uploadOperator(client, inputs.operator);
    const uid = randomUUID();
    const id = `${inputs.model}/${inputs.name}/${uid.slice(0, 8)}`;
    // Secrets its config names are granted before any unit reads config: deployed without units first.
    const secrets = await configSecrets(inputs, inputs.config);
    try {
      await client.deploy(inputs.model, {
        name: inputs.name,
        operator: hash,
        units: secrets.length > 0 ? 0 : inputs.units,
        config: inputs.config,
        ...(inputs.machines && secrets.length === 0 ? { to: inputs.machines } : {}),
        ...(inputs.constraints ? { constraints: inputs.constraints } : {}),
        ...(inputs.storage ? { storage: storageRequests(inputs.storage) } : {}),
        ...(leaseSeconds(inputs.leadershipLease) !== undefined
          ? { leadershipLease: leaseSeconds(inputs.leadershipLease)! }
          : {}),
      });
    } catch (e) {
      if (!isConflict(e)) throw e;
      if (!inputs.adopt)
        throw new Error(
          `application "${inputs.name}" already exists in model "${inputs.model}": set adopt: true to take it over, or choose another name`,
        );
      const have = await observe(inputs, undefined);
      if (!have) throw e;
      await grantSecrets(client, inputs, secrets);
      return { id, outs: await converge(client, id, { ...have, ...withoutDrift(inputs), uid }, inputs) };
    }
    if (secrets.length > 0) {
      await grantSecrets(client, inputs, secrets);
      await scale(client, inputs, inputs.machines !== undefined);
    }
    changed(inputs.connection, inputs.model);
    return { id, outs: await settle(client, id, inputs, uid) };
  },

  async read(id: string, props: ApplicationOutputs) {
    const outs = await observe(props, props.uid, true);
    if (!outs) return {};
    return { id, props: plain(outs), inputs: plain(inputsOf(outs)) };
  },

  async update(id: string, olds: ApplicationOutputs, news: ApplicationInputs) {
    return { outs: await converge(clientFor(news.connection), id, olds, news) };
  },

  async delete(_id: string, props: ApplicationOutputs) {
    const client = clientFor(props.connection);
    try {
      await client.removeApplication(props.model, props.name, false, props.destroyStorageOnDelete ?? false);
    } catch (e) {
      if (isNotFound(e)) return;
      throw e;
    }
    changed(props.connection, props.model);
    const gone = async (): Promise<boolean> =>
      !(await modelStatus(props.connection, props.model))?.applications[props.name];
    try {
      await until(
        `application "${props.name}" to be removed (each unit runs its stop and remove hooks)`,
        (props.deleteTimeoutSeconds ?? 600) * 1000,
        gone,
      );
    } catch (e) {
      if (!props.forceDelete) {
        const status = await modelStatus(props.connection, props.model);
        throw notReadyError(
          status,
          [props.name],
          `${(e as Error).message}; set forceDelete: true to remove it without its hooks`,
          undefined,
          undefined,
          status ? await hookOutputs(client, props.model, unitsOf(status, [props.name])) : "",
        );
      }
      await client.removeApplication(props.model, props.name, true, props.destroyStorageOnDelete ?? false);
      await until(`application "${props.name}" to be removed by force`, 60_000, gone);
    }
  },
};

/** Makes the application match `news` (operator, config, scale), then waits as asked. */
async function converge(
  client: ControllerClient,
  id: string,
  olds: ApplicationOutputs,
  news: ApplicationInputs,
): Promise<ApplicationOutputs> {
  const patch: Record<string, ConfigValue | null> = {};
  const want = news.config ?? {};
  for (const k of new Set([...Object.keys(olds.config ?? {}), ...Object.keys(want)])) {
    const a = k in want ? want[k] : olds.configDefaults?.[k];
    const b = k in (olds.config ?? {}) ? olds.config[k] : olds.configDefaults?.[k];
    if (!Object.is(a, b)) patch[k] = k in want ? want[k]! : null;
  }
  const upgrade = olds.operator.hash !== news.operator.hash ? await uploadOperator(client, news.operator) : undefined;
  // Before scaling: machines made for new units get the new constraints.
  const constraints =
    normalConstraints(olds.constraints) !== normalConstraints(news.constraints) ? (news.constraints ?? "") : undefined;
  // Before scaling too: units added by this update get the new storage directives; units that exist keep theirs.
  const storage = sameStorage(olds.storage, news.storage)
    ? undefined
    : storageChange(olds.storage, news.storage, (await readOperatorDir(news.operator.path)).meta);
  const lease = leaseSeconds(news.leadershipLease);
  const leaseChange = leaseSeconds(olds.leadershipLease) !== lease ? (lease ?? null) : undefined;
  // Before the config that names them: the units read a secret option's secret as soon as it is set.
  await grantSecrets(client, news, await configSecrets(news, patch));
  let applying: AppliedChange | undefined;
  if (upgrade || Object.keys(patch).length > 0 || constraints !== undefined || storage || leaseChange !== undefined) {
    applying = changeOf(
      await client.updateApplication(news.model, news.name, {
        ...(upgrade ? { operator: upgrade } : {}),
        ...(Object.keys(patch).length > 0 ? { config: patch } : {}),
        ...(constraints !== undefined ? { constraints } : {}),
        ...(storage ? { storage } : {}),
        ...(leaseChange !== undefined ? { leadershipLease: leaseChange } : {}),
      }),
    );
  }
  await scale(client, news, olds.machines !== undefined || news.machines !== undefined);
  changed(news.connection, news.model);
  return settle(client, id, news, olds.uid, applying);
}

/**
 * The secret uris `config` gives the operator's options of type `secret`. The application is granted
 * each (grantSecret is idempotent): a Secret resource cannot list an Application that depends on it
 * through its `uri`, so using a user secret in config is what lets the application read it.
 */
async function configSecrets(i: ApplicationInputs, config: Record<string, ConfigValue | null>): Promise<string[]> {
  const named = Object.entries(config).filter(([, v]) => typeof v === "string" && v.startsWith("secret:"));
  if (named.length === 0) return [];
  const { meta } = await readOperatorDir(i.operator.path);
  return [...new Set(named.filter(([k]) => meta.config[k]?.type === "secret").map(([, v]) => v as string))];
}

async function grantSecrets(client: ControllerClient, i: ApplicationInputs, uris: string[]): Promise<void> {
  for (const uri of uris) await client.grantSecret(i.model, uri, [i.name]);
}

/** Adds or removes units to reach `units` (or one per listed machine). */
async function scale(client: ControllerClient, want: ApplicationInputs, placed: boolean): Promise<void> {
  const app = (await modelStatus(want.connection, want.model))?.applications[want.name];
  const alive = Object.values(app?.units ?? {})
    .filter((u) => u.life === "alive")
    .sort((a, b) => unitNo(a.name) - unitNo(b.name));
  if (placed && want.machines) {
    for (const u of alive) if (!want.machines.includes(u.machine)) await client.removeUnit(want.model, u.name);
    const taken = new Set(alive.map((u) => u.machine));
    for (const m of want.machines) if (!taken.has(m)) await client.addUnits(want.model, want.name, 1, [m]);
    return;
  }
  if (alive.length < want.units) await client.addUnits(want.model, want.name, want.units - alive.length);
  for (const u of alive.slice(want.units)) await client.removeUnit(want.model, u.name);
}

/**
 * Waits (unless `waitFor: none`) and reads back; a wait that fails records what exists and why.
 * After an upgrade or config change (`applying`), until every unit has run the hooks for it.
 */
async function settle(
  client: ControllerClient,
  id: string,
  inputs: ApplicationInputs,
  uid: string,
  applying?: AppliedChange,
): Promise<ApplicationOutputs> {
  let failure: Error | undefined;
  if (inputs.waitFor !== "none") {
    const ready = (await awaitingIntegration(inputs)) ? settledBeforeIntegration : undefined;
    await waitForModelReady(client, inputs.model, {
      apps: [inputs.name],
      timeoutMs: inputs.timeoutSeconds * 1000,
      intervalMs: 500,
      ...(ready ? { ready } : {}),
      ...(applying ? { changed: { [inputs.name]: applying } } : {}),
    }).catch((e: Error) => {
      failure = e;
    });
  }
  changed(inputs.connection, inputs.model);
  const info = await client.getApplication(inputs.model, inputs.name);
  const outs = (await observe(inputs, uid)) ?? {
    ...inputs,
    uid,
    unitNames: [],
    operatorVersion: info.operator.version,
    status: "unknown",
    configDefaults: {},
  };
  // What the program asked for is what the state keeps as inputs; the observed scale goes out as outputs.
  const result = plain({ ...outs, ...withoutDrift(inputs), storage: inputs.storage, uid });
  if (failure) throw new PartialFailure(id, result, [`application "${inputs.name}": ${failure.message}`]);
  return result;
}

/**
 * An application whose operator requires an endpoint that is not integrated yet cannot be active
 * (it says so, blocked or waiting) until its Integration, which depends on it, exists: waiting for
 * active here would never end. Such units need only settle; the Integration then waits for active.
 */
async function awaitingIntegration(i: ApplicationInputs): Promise<boolean> {
  const { meta } = await readOperatorDir(i.operator.path);
  const required = Object.keys(meta.requires);
  if (required.length === 0) return false;
  const integrations = (await modelStatus(i.connection, i.model))?.integrations ?? [];
  const has = (ep: string): boolean =>
    integrations.some(
      (r) => r.life === "alive" && (r.provider === `${i.name}:${ep}` || r.requirer === `${i.name}:${ep}`),
    );
  return required.some((ep) => !has(ep));
}

const settledBeforeIntegration = (u: Pick<UnitStatusView, "workload" | "agent">): boolean =>
  u.agent.current === "idle" && ["active", "blocked", "waiting"].includes(u.workload.current);

/** What the controller has for this application now, in the resource's output shape. */
async function observe(
  base: ApplicationInputs,
  uid: string | undefined,
  shared = false,
): Promise<ApplicationOutputs | undefined> {
  const app: ApplicationStatusView | undefined = (await modelStatus(base.connection, base.model, shared))?.applications[
    base.name
  ];
  if (!app || app.life !== "alive") return undefined;
  // The operator's defaults: known already when the operator is the one last seen (a refresh of
  // many applications then costs one status request), else asked for.
  const known = (base as Partial<ApplicationOutputs>).configDefaults;
  const recorded = (base as Partial<ApplicationOutputs>).storageDirectives;
  let configDefaults: Record<string, ConfigValue> = {};
  let storageDirectives = recorded;
  const knownDefaults = known && base.operator.hash === app.operator.hash;
  // Storage directives are not in the status: asked for whenever the program or the state has some.
  if (!knownDefaults || base.storage !== undefined || recorded !== undefined) {
    const info = await clientFor(base.connection).getApplication(base.model, base.name);
    storageDirectives = info.storage ?? {};
    if (!knownDefaults)
      for (const [k, o] of Object.entries(info.configSchema))
        if (o.default !== undefined) configDefaults[k] = o.default as ConfigValue;
  }
  if (knownDefaults) configDefaults = known;
  // Report keys the program sets, and any other key that differs from its default (set by hand).
  const config: Record<string, ConfigValue> = {};
  for (const [k, v] of Object.entries(app.config))
    if (k in (base.config ?? {}) || !Object.is(configDefaults[k], v)) config[k] = v;
  const units = Object.values(app.units)
    .filter((u) => u.life === "alive")
    .sort((a, b) => unitNo(a.name) - unitNo(b.name));
  // The program's own words when they mean what the controller has ("1m" for 60), else what it has (drift).
  const { leadershipLease: _asked, ...rest } = base;
  const lease = app.leadershipLeaseSeconds;
  const leadershipLease =
    lease === undefined ? undefined : leaseSeconds(base.leadershipLease) === lease ? base.leadershipLease : lease;
  return {
    ...rest,
    ...(leadershipLease !== undefined ? { leadershipLease } : {}),
    operator: { path: base.operator.path, hash: app.operator.hash },
    units: units.length,
    ...(base.machines !== undefined ? { machines: units.map((u) => u.machine) } : {}),
    config,
    uid: uid ?? randomUUID(),
    unitNames: units.map((u) => u.name),
    operatorVersion: app.operator.version,
    status: app.status.current,
    configDefaults,
    storage: observedStorage(base.storage, recorded, storageDirectives ?? {}),
    storageDirectives: storageDirectives ?? {},
  };
}

/** Uploads the operator directory unless the controller has it; returns its hash. */
async function uploadOperator(client: ControllerClient, operator: { path: string; hash: string }): Promise<string> {
  const { bundle, hash } = await readOperatorDir(operator.path);
  if (operator.hash && hash !== operator.hash)
    throw new Error(
      `operator directory ${operator.path} changed while this update ran (hash ${hash.slice(0, 12)}…, the program read ${operator.hash.slice(0, 12)}…): run again`,
    );
  if (!(await client.hasOperator(hash))) await client.uploadOperator(bundle);
  return hash;
}

/** A leadership lease as seconds (`"1m"` is 60); undefined when absent (or not a lease: check said so). */
function leaseSeconds(lease: number | string | undefined): number | undefined {
  if (lease === undefined) return undefined;
  const parsed = parseLeadershipLease(lease);
  return parsed.ok ? parsed.seconds : undefined;
}

/** Constraints as what they mean (`mem=4096` is `mem=4G`). */
function normalConstraints(text: string | undefined): string {
  try {
    return formatConstraints(parseConstraints(text ?? ""));
  } catch {
    return text ?? "";
  }
}

function effective(
  config: Record<string, ConfigValue> | undefined,
  defaults: Record<string, ConfigValue> | undefined,
): Record<string, ConfigValue> {
  return { ...(defaults ?? {}), ...(config ?? {}) };
}

/** Inputs only (no observed outputs): a read's `inputs`. */
function inputsOf(o: ApplicationOutputs): ApplicationInputs {
  const {
    uid: _u,
    unitNames: _n,
    operatorVersion: _v,
    status: _s,
    configDefaults: _d,
    storageDirectives: _sd,
    ...inputs
  } = o;
  return inputs;
}

/** The settings a read cannot observe (they live only in the program): kept from the inputs. */
function withoutDrift(i: ApplicationInputs): Partial<ApplicationInputs> {
  return {
    connection: i.connection,
    waitFor: i.waitFor,
    timeoutSeconds: i.timeoutSeconds,
    deleteTimeoutSeconds: i.deleteTimeoutSeconds,
    forceDelete: i.forceDelete,
    ...(i.destroyStorageOnDelete !== undefined ? { destroyStorageOnDelete: i.destroyStorageOnDelete } : {}),
    adopt: i.adopt,
    ...("__provider" in i ? { __provider: i.__provider } : {}),
  } as Partial<ApplicationInputs>;
}

const unitNo = (u: string): number => Number(u.slice(u.indexOf("/") + 1));
