/**
 * What one resource's `read` costs the Pulumi provider process, as `pulumi refresh` starts it: a
 * fresh `@pulumi/pulumi/cmd/dynamic-provider` process is given the provider text the SDK serializes
 * for a Model (then an Application) and asked for one Read against a local controller. Prints the
 * time to the provider's port (the SDK alone), the first Read (loading our implementation, logging
 * in, one request), a second Read (the same, warm), and the process's RSS before and after, each the
 * median of `size` fresh processes.
 */
import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import * as grpc from "@grpc/grpc-js";
import * as pulumi from "@pulumi/pulumi";
import { Struct } from "google-protobuf/google/protobuf/struct_pb";
import { readOperatorDir } from "../api";
import { shims } from "../provider";
import type { ApplicationOutputs } from "../provider";
import { benchController } from "./bench-controller";
import { median, report } from "./util";
import type { BenchOptions } from "./util";

const providerPb = require("@pulumi/pulumi/proto/provider_pb");
const providerGrpc = require("@pulumi/pulumi/proto/provider_grpc_pb");

interface Sample {
  portMs: number;
  firstReadMs: number;
  secondReadMs: number;
  rssBefore: number;
  rssAfter: number;
  peak: number;
}

async function memory(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kib = (field: string): number => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? "0");
  return { rss: kib("VmRSS") / 1024, peak: kib("VmHWM") / 1024 };
}

/** One fresh provider process: Configure, then two Reads of `id` with `props` (which carry `__provider`). */
async function sample(id: string, props: Record<string, unknown>, cwd: string): Promise<Sample> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [require.resolve("@pulumi/pulumi/cmd/dynamic-provider"), "unused"], {
    cwd,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  try {
    const port = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout }).once("line", (l) => resolve(l.trim()));
      child.once("exit", (code) => reject(new Error(`dynamic-provider exited with ${code}: ${stderr}`)));
    });
    const portMs = performance.now() - t0;
    const client = new providerGrpc.ResourceProviderClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    const call = (method: string, req: unknown): Promise<any> =>
      new Promise((resolve, reject) => {
        client[method](req, (err: grpc.ServiceError | null, res: unknown) =>
          err ? reject(new Error(err.details || err.message)) : resolve(res),
        );
      });
    await call(
      "configure",
      new providerPb.ConfigureRequest().setArgs(Struct.fromJavaScript({})).setAcceptsecrets(true),
    );
    const before = await memory(child.pid!);
    const read = async (): Promise<number> => {
      const t = performance.now();
      const res = await call(
        "read",
        new providerPb.ReadRequest()
          .setId(id)
          .setUrn(`urn:pulumi:bench::bench::x::${id}`)
          .setProperties(Struct.fromJavaScript(props as never)),
      );
      if (res.getId() !== id) throw new Error(`read of ${id} answered id "${res.getId()}"`);
      return performance.now() - t;
    };
    const firstReadMs = await read();
    const secondReadMs = await read();
    const after = await memory(child.pid!);
    client.close();
    return { portMs, firstReadMs, secondReadMs, rssBefore: before.rss, rssAfter: after.rss, peak: after.peak };
  } finally {
    child.kill();
  }
}

/** The `__provider` text the SDK stores for a resource of this kind (as pulumi.dynamic.Resource makes it). */
async function providerText(kind: keyof typeof shims): Promise<string> {
  const provider = shims[kind];
  return (await pulumi.runtime.serializeFunction(() => provider, { allowSecrets: true })).text;
}

/** `size`: fresh provider processes per resource kind (default 5). */
export async function benchProviderLoad(o: BenchOptions = {}): Promise<void> {
  const runs = o.size ?? 5;
  const ctl = await benchController("load");
  try {
    const connection = { addresses: ctl.addresses, caCert: ctl.caCert, user: "admin", password: ctl.password };
    const operator = join(__dirname, "..", "..", "operators", "motd");
    const { bundle, hash } = await readOperatorDir(operator);
    await ctl.client.uploadOperator(bundle);
    await ctl.client.deploy("load", { name: "app", operator: hash, units: 0 });
    const app: ApplicationOutputs = {
      connection,
      model: "load",
      name: "app",
      operator: { path: operator, hash },
      units: 0,
      config: {},
      waitFor: "none",
      timeoutSeconds: 60,
      deleteTimeoutSeconds: 60,
      forceDelete: false,
      adopt: false,
      uid: "u0",
      unitNames: [],
      operatorVersion: "1.0.0",
      status: "unknown",
      configDefaults: {},
    };
    const cases = [
      {
        kind: "model" as const,
        id: ctl.uuid,
        props: {
          connection,
          name: "load",
          uuid: ctl.uuid,
          config: {},
          substrate: "local",
          adopt: false,
          forceDelete: false,
          deleteTimeoutSeconds: 60,
        },
      },
      { kind: "application" as const, id: "load/app/u0", props: app as unknown as Record<string, unknown> },
    ];
    const figures: Record<string, number | string> = {};
    for (const c of cases) {
      const text = await providerText(c.kind);
      const samples: Sample[] = [];
      for (let i = 0; i < runs; i++)
        samples.push(await sample(c.id, { ...c.props, __provider: text }, join(__dirname, "..", "..")));
      const m = (f: (s: Sample) => number): number => median(samples.map(f));
      figures[`${c.kind}: provider text (characters)`] = String(text.length);
      figures[`${c.kind}: spawn to port, SDK only (ms)`] = m((s) => s.portMs);
      figures[`${c.kind}: first read, loading Steward (ms)`] = m((s) => s.firstReadMs);
      figures[`${c.kind}: second read (ms)`] = m((s) => s.secondReadMs);
      figures[`${c.kind}: RSS before the read (MiB)`] = m((s) => s.rssBefore);
      figures[`${c.kind}: RSS after the reads (MiB)`] = m((s) => s.rssAfter);
      figures[`${c.kind}: RSS added by the reads (MiB)`] = m((s) => s.rssAfter - s.rssBefore);
      figures[`${c.kind}: peak RSS (MiB)`] = m((s) => s.peak);
    }
    report(`Provider process: load and one read (median of ${runs} fresh processes)`, figures);
  } finally {
    await ctl.stop();
  }
}
