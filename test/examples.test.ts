/**
 * examples/bare-metal under Pulumi's mocks: the resources it declares, how they are wired, and that
 * each serialized provider loads and accepts the example's arguments in its own `check`.
 */
import test from "ava";
import * as pulumi from "@pulumi/pulumi";
import { join } from "node:path";
import { bareMetal } from "../examples/bare-metal/stack";
import { SECRET_SIG, unwrapSecrets as unwrap } from "./harness/pulumi-engine";

const repo = join(__dirname, "..", "..");
const KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nexample-not-a-real-key\n-----END OPENSSH PRIVATE KEY-----\n";
const host = (n: number): { host: string; hostKey: string } => ({
  host: `10.0.0.${n}`,
  hostKey: `SHA256:${"A".repeat(42)}${n % 10}`,
});

interface Registered {
  type: string;
  name: string;
  inputs: Record<string, unknown>;
}

test("the bare-metal example declares an HA controller, a model, machines, two applications and their integration", async (t) => {
  const registered: Registered[] = [];
  let nextMachine = 0;
  await pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        registered.push({ type: args.type, name: args.name, inputs: args.inputs });
        const outs: Record<string, unknown> = { ...args.inputs };
        if (args.type.endsWith(":Controller"))
          Object.assign(outs, {
            connection: {
              addresses: ["10.0.0.11:17070"],
              caCert: "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----",
              user: "admin",
              password: "generated-password",
            },
          });
        if (args.type.endsWith(":Machine")) outs.machineId = String(nextMachine++);
        if (args.type.endsWith(":Application")) Object.assign(outs, { uid: `uid-${args.name}`, unitNames: [] });
        return { id: `${args.name}-id`, state: outs };
      },
      call: () => ({}),
    },
    "steward-bare-metal",
    "test",
    false,
  );

  const out = bareMetal({
    controllers: [host(11), host(12), host(13)],
    spares: [host(14)],
    workers: [host(21), host(22)],
    privateKey: pulumi.secret(KEY),
    operatorsDir: join(repo, "operators"),
  });
  await new Promise<void>((resolve) => pulumi.all([out.addresses, out.webUnits]).apply(() => resolve()));
  await new Promise((r) => setTimeout(r, 200));

  const byName = new Map(registered.map((r) => [r.name, r]));
  t.deepEqual(registered.map((r) => r.type.replace("pulumi-nodejs:dynamic/steward:", "")).sort(), [
    "Application",
    "Application",
    "Controller",
    "Integration",
    "Machine",
    "Machine",
    "Model",
  ]);
  const ctl = byName.get("prod")!.inputs;
  t.is(ctl.replicas, 3);
  t.is((ctl.hosts as unknown[]).length, 3);
  t.true(SECRET_SIG in (ctl.privateKey as object), "the private key goes to the provider as a secret");
  t.deepEqual(unwrap(byName.get("web")!.inputs.machines), ["0", "1"]);
  t.deepEqual(unwrap(byName.get("web-checker")!.inputs.endpoints), ["web:website", "checker:upstream"]);
  t.deepEqual(unwrap(byName.get("web-checker")!.inputs.applicationUids), ["uid-web", "uid-checker"]);

  // Each serialized provider loads on its own (as in the provider process) and its check accepts the example.
  const requireFromString = require("require-from-string") as (code: string) => {
    handler: () => pulumi.dynamic.ResourceProvider;
  };
  for (const r of registered) {
    const { __provider: text, ...inputs } = unwrap(r.inputs) as Record<string, unknown>;
    t.false(String(text).includes("PRIVATE KEY"), `${r.name}: no key in the provider text`);
    const provider = requireFromString(String(text)).handler();
    const checked = await provider.check!({}, inputs);
    t.deepEqual(checked.failures ?? [], [], `${r.name} passes its provider's check`);
  }
});
