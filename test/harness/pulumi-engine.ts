/**
 * A small stand-in for the Pulumi engine (whose CLI cannot be downloaded here), built from
 * Pulumi's own parts: programs run under `pulumi.runtime.setMocks`, so the SDK registers each
 * resource and serializes its provider exactly as in a real deployment; each registration is then
 * driven through the SDK's `cmd/dynamic-provider` gRPC process, as the engine does: Check, then
 * Diff against the stored state, then Create, Update or a delete-before-replace, with partial
 * failures recorded. State is kept between runs, so a test can go up → change → up → refresh → destroy.
 *
 * What it does not model: previews with unknown values, parallel step ordering, `ignoreChanges`.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import type * as pulumi from "@pulumi/pulumi";
import * as grpc from "@grpc/grpc-js";
import { Struct } from "google-protobuf/google/protobuf/struct_pb";
const providerPb = require("@pulumi/pulumi/proto/provider_pb");
const providerGrpc = require("@pulumi/pulumi/proto/provider_grpc_pb");
const statusPb = require("@pulumi/pulumi/proto/status_pb");

/** The key the SDK marks a secret value with (in mocks, and on the wire). */
export const SECRET_SIG = "4dabf18193072939515e22adb298388d";

// The mock monitor drops `additionalSecretOutputs`; the engine honours them, so note them per resource.
const secretOutputsByName = new Map<string, string[]>();
const noted = new WeakSet<object>();

/**
 * The Pulumi SDK a program's resources register with: this repository's, or (`sdkFrom`) the copy
 * installed in a user's project, whose mock monitor is then the one to watch.
 */
function sdkFor(sdkFrom: string | undefined): typeof pulumi {
  const resolve = (m: string): string => (sdkFrom ? require.resolve(m, { paths: [sdkFrom] }) : require.resolve(m));
  const mocksModule = require(resolve("@pulumi/pulumi/runtime/mocks"));
  const proto = mocksModule.MockMonitor.prototype;
  if (!noted.has(proto)) {
    noted.add(proto);
    const registerResource = proto.registerResource;
    proto.registerResource = function (req: any, cb: unknown) {
      secretOutputsByName.set(req.getName(), req.getAdditionalsecretoutputsList());
      return registerResource.call(this, req, cb);
    };
  }
  return require(resolve("@pulumi/pulumi"));
}
const PROJECT = "steward-test";

export interface StoredResource {
  type: string;
  name: string;
  id: string;
  inputs: Record<string, unknown>;
  outputs: Record<string, unknown>;
  /** Input properties that were secret in the program (the engine would encrypt them in state). */
  secretInputs: string[];
  /** Outputs the resource asked the engine to encrypt (`additionalSecretOutputs`). */
  secretOutputs: string[];
  /** Reasons of a partial failure: the next up updates the resource whatever the diff says. */
  initErrors?: string[];
}

export interface RunResult {
  created: string[];
  updated: string[];
  replaced: string[];
  deleted: string[];
  unchanged: string[];
  errors: { name: string; message: string }[];
  /** When each resource's step ran, in ms from the start of the run (benchmarks report them). */
  steps: { name: string; type: string; startMs: number; endMs: number }[];
}

export class MiniEngine {
  /** In registration order, so deletes go in reverse. */
  readonly state = new Map<string, StoredResource>();
  private child: ChildProcess | undefined;
  private client: any;
  /** What each provider call was sent last, by resource (tests inspect the serialized provider). */
  readonly serializedProviders = new Map<string, string>();

  /**
   * `cwd`: the program's directory, where the engine starts the provider process. `sdkFrom`: where
   * to take the SDK (program side and provider process) from, when not this repository's: a user's
   * project with Steward installed from its package.
   */
  constructor(
    private readonly cwd: string,
    private readonly env: NodeJS.ProcessEnv = {},
    private readonly sdkFrom?: string,
  ) {}

  async start(): Promise<void> {
    const entry = this.sdkFrom
      ? require.resolve("@pulumi/pulumi/cmd/dynamic-provider", { paths: [this.sdkFrom] })
      : require.resolve("@pulumi/pulumi/cmd/dynamic-provider");
    const child = spawn(process.execPath, [entry, "engine-address-unused"], {
      cwd: this.cwd,
      env: { ...process.env, ...this.env, PULUMI_NODEJS_PROJECT: PROJECT },
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.child = child;
    child.stderr!.on("data", (d: Buffer) => {
      if (process.env.STEWARD_TEST_VERBOSE) process.stderr.write(d);
    });
    const port = await new Promise<string>((resolve, reject) => {
      const lines = createInterface({ input: child.stdout! });
      lines.once("line", (l) => resolve(l.trim()));
      child.once("exit", (code) => reject(new Error(`dynamic-provider exited with ${code}`)));
    });
    this.client = new providerGrpc.ResourceProviderClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    await this.call(
      "configure",
      new providerPb.ConfigureRequest().setArgs(Struct.fromJavaScript({})).setAcceptsecrets(true),
    );
  }

  stop(): void {
    this.client?.close();
    this.child?.kill();
  }

  /** Runs `program` as `pulumi up` would; resolves with what was done (errors included, not thrown). */
  async up(program: () => void | Promise<void>): Promise<RunResult> {
    const result: RunResult = {
      created: [],
      updated: [],
      replaced: [],
      deleted: [],
      unchanged: [],
      errors: [],
      steps: [],
    };
    const t0 = performance.now();
    const registered = new Set<string>();
    const pending = new Set<Promise<unknown>>();
    await sdkFor(this.sdkFrom).runtime.setMocks(
      {
        newResource: (args) => {
          const startMs = performance.now() - t0;
          const step = this.step(args.type, args.name, args.inputs, result);
          void step.finally(() =>
            result.steps.push({
              name: args.name,
              type: args.type.split(":").pop()!,
              startMs,
              endMs: performance.now() - t0,
            }),
          );
          registered.add(key(args.type, args.name));
          pending.add(step);
          void step.finally(() => pending.delete(step));
          // As the engine does, stop at a failure: what depends on the resource is never registered.
          return step.then((r) => r ?? new Promise<never>(() => undefined));
        },
        call: () => ({}),
      },
      PROJECT,
      "dev",
      false,
    );
    await program();
    // Dependents register only once what they depend on is created: wait until all is quiet.
    for (let quiet = 0; quiet < 4;) {
      if (pending.size > 0) {
        quiet = 0;
        await Promise.allSettled([...pending]);
      }
      await new Promise((r) => setTimeout(r, 50));
      if (pending.size === 0) quiet++;
    }
    if (result.errors.length === 0) {
      for (const [k, r] of [...this.state].reverse()) {
        if (registered.has(k)) continue;
        await this.remove(r).then(
          () => {
            this.state.delete(k);
            result.deleted.push(r.name);
          },
          (e: Error) => result.errors.push({ name: r.name, message: e.message }),
        );
      }
    }
    return result;
  }

  /** `pulumi refresh`: reads every resource; returns those whose outputs changed or that are gone. */
  async refresh(): Promise<{ drifted: { name: string; properties: string[] }[]; gone: string[] }> {
    const drifted: { name: string; properties: string[] }[] = [];
    const gone: string[] = [];
    for (const [k, r] of this.state) {
      const req = new providerPb.ReadRequest()
        .setId(r.id)
        .setUrn(urn(r.type, r.name))
        .setProperties(Struct.fromJavaScript(r.outputs as never))
        .setInputs(Struct.fromJavaScript(r.inputs as never));
      const res = await this.call("read", req);
      if (!res.getId()) {
        this.state.delete(k);
        gone.push(r.name);
        continue;
      }
      const outputs = res.getProperties()?.toJavaScript() ?? r.outputs;
      const changed = Object.keys({ ...r.outputs, ...outputs }).filter(
        (p) => JSON.stringify(r.outputs[p]) !== JSON.stringify(outputs[p]),
      );
      if (changed.length > 0) drifted.push({ name: r.name, properties: changed });
      r.outputs = outputs;
      const inputs = res.getInputs()?.toJavaScript();
      if (inputs && Object.keys(inputs).length > 0) r.inputs = inputs;
    }
    return { drifted, gone };
  }

  /** `pulumi destroy`: deletes everything, last created first. */
  async destroy(): Promise<void> {
    for (const [k, r] of [...this.state].reverse()) {
      await this.remove(r);
      this.state.delete(k);
    }
  }

  /**
   * The state as the engine would write it: inputs that were secret, outputs listed in
   * `additionalSecretOutputs` and outputs named like a secret input are encrypted (here: replaced
   * by a marker), everything else is plain text.
   */
  persistedState(): string {
    const hide = (o: Record<string, unknown>, names: string[]): Record<string, unknown> =>
      Object.fromEntries(Object.entries(o).map(([k, v]) => [k, names.includes(k) ? "[encrypted]" : v]));
    return JSON.stringify(
      [...this.state.values()].map((r) => {
        const secretTop = r.secretInputs.map((p) => p.split(/[.[]/)[0]!);
        return {
          type: r.type,
          name: r.name,
          id: r.id,
          inputs: hide(r.inputs, secretTop),
          outputs: hide(r.outputs, [...secretTop, ...r.secretOutputs]),
        };
      }),
      null,
      1,
    );
  }

  get(name: string): StoredResource | undefined {
    return [...this.state.values()].find((r) => r.name === name);
  }

  private async step(
    type: string,
    name: string,
    rawInputs: Record<string, unknown>,
    result: RunResult,
  ): Promise<{ id: string; state: Record<string, unknown> } | undefined> {
    const k = key(type, name);
    const secretInputs: string[] = [];
    const news = unwrapSecrets(rawInputs, "", secretInputs) as Record<string, unknown>;
    this.serializedProviders.set(name, String(news.__provider ?? ""));
    const old = this.state.get(k);
    try {
      const checked = await this.call(
        "check",
        new providerPb.CheckRequest()
          .setUrn(urn(type, name))
          .setOlds(Struct.fromJavaScript((old?.inputs ?? {}) as never))
          .setNews(Struct.fromJavaScript(news as never)),
      );
      const failures = checked.getFailuresList().map((f: any) => `${f.getProperty()}: ${f.getReason()}`);
      if (failures.length > 0) throw new Error(`check failed:\n  ${failures.join("\n  ")}`);
      const inputs = checked.getInputs().toJavaScript() as Record<string, unknown>;
      if (!old) {
        await this.create(type, name, inputs, secretInputs);
        result.created.push(name);
      } else {
        const diff = await this.call(
          "diff",
          new providerPb.DiffRequest()
            .setId(old.id)
            .setUrn(urn(type, name))
            .setOlds(Struct.fromJavaScript(old.outputs as never))
            .setNews(Struct.fromJavaScript(inputs as never)),
        );
        const replaces: string[] = diff.getReplacesList();
        if (replaces.length > 0) {
          await this.remove(old);
          this.state.delete(k);
          await this.create(type, name, inputs, secretInputs);
          result.replaced.push(name);
        } else if (diff.getChanges() === providerPb.DiffResponse.DiffChanges.DIFF_SOME || old.initErrors) {
          try {
            const res = await this.call(
              "update",
              new providerPb.UpdateRequest()
                .setId(old.id)
                .setUrn(urn(type, name))
                .setOlds(Struct.fromJavaScript(old.outputs as never))
                .setNews(Struct.fromJavaScript(inputs as never)),
            );
            Object.assign(old, {
              inputs,
              outputs: res.getProperties().toJavaScript(),
              secretInputs,
              initErrors: undefined,
            });
          } catch (e) {
            const partial = initFailure(e);
            if (partial)
              Object.assign(old, { inputs, outputs: partial.properties, secretInputs, initErrors: partial.reasons });
            throw e;
          }
          result.updated.push(name);
        } else {
          result.unchanged.push(name);
        }
      }
      const r = this.state.get(k)!;
      return { id: r.id, state: withoutProvider(r.outputs) };
    } catch (e) {
      result.errors.push({ name, message: (e as Error).message });
      return undefined;
    }
  }

  private async create(
    type: string,
    name: string,
    inputs: Record<string, unknown>,
    secretInputs: string[],
  ): Promise<void> {
    try {
      const res = await this.call(
        "create",
        new providerPb.CreateRequest().setUrn(urn(type, name)).setProperties(Struct.fromJavaScript(inputs as never)),
      );
      this.state.set(key(type, name), {
        type,
        name,
        id: res.getId(),
        inputs,
        outputs: res.getProperties().toJavaScript(),
        secretInputs,
        secretOutputs: secretOutputsByName.get(name) ?? [],
      });
    } catch (e) {
      const partial = initFailure(e);
      if (partial)
        this.state.set(key(type, name), {
          type,
          name,
          id: partial.id,
          inputs,
          outputs: partial.properties,
          secretInputs,
          secretOutputs: secretOutputsByName.get(name) ?? [],
          initErrors: partial.reasons,
        });
      throw e;
    }
  }

  private async remove(r: StoredResource): Promise<void> {
    await this.call(
      "delete",
      new providerPb.DeleteRequest()
        .setId(r.id)
        .setUrn(urn(r.type, r.name))
        .setProperties(Struct.fromJavaScript(r.outputs as never))
        .setOldInputs(Struct.fromJavaScript(r.inputs as never)),
    );
  }

  private call(method: string, req: unknown): Promise<any> {
    return new Promise((resolve, reject) => {
      this.client[method](req, (err: grpc.ServiceError | null, res: unknown) =>
        err ? reject(Object.assign(new Error(err.details || err.message), { grpc: err })) : resolve(res),
      );
    });
  }
}

/** The engine's reading of ErrorResourceInitFailed: the resource exists (id, properties) but did not finish. */
function initFailure(e: unknown): { id: string; properties: Record<string, unknown>; reasons: string[] } | undefined {
  const bin = (e as { grpc?: grpc.ServiceError }).grpc?.metadata?.get("grpc-status-details-bin")[0];
  if (!bin) return undefined;
  const status = statusPb.Status.deserializeBinary(new Uint8Array(bin as Buffer));
  for (const any of status.getDetailsList()) {
    const detail = any.unpack(
      providerPb.ErrorResourceInitFailed.deserializeBinary,
      "pulumirpc.ErrorResourceInitFailed",
    );
    if (detail)
      return {
        id: detail.getId(),
        properties: detail.getProperties().toJavaScript(),
        reasons: detail.getReasonsList(),
      };
  }
  return undefined;
}

/** `v` with the SDK's secret wrappers replaced by their values; the secret paths are pushed to `secrets`. */
export function unwrapSecrets(v: unknown, path = "", secrets: string[] = []): unknown {
  if (Array.isArray(v)) return v.map((x, i) => unwrapSecrets(x, `${path}[${i}]`, secrets));
  if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    if (o[SECRET_SIG] === "1b47061264138c4ac30d75fd1eb44270") {
      secrets.push(path);
      return unwrapSecrets(o.value, path, []);
    }
    return Object.fromEntries(
      Object.entries(o).map(([k, x]) => [k, unwrapSecrets(x, path ? `${path}.${k}` : k, secrets)]),
    );
  }
  return v;
}

function withoutProvider(o: Record<string, unknown>): Record<string, unknown> {
  const { __provider: _p, ...rest } = o;
  return rest;
}

const key = (type: string, name: string): string => `${type}::${name}`;
const urn = (type: string, name: string): string => `urn:pulumi:dev::${PROJECT}::${type}::${name}`;
