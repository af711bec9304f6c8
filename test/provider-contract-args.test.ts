/**
 * The Controller resource's arguments map onto the substrate contracts (provider/substrate-args.ts)
 * instead of a table of clouds: for every kind whose replicas are instances, check asks for its
 * settings (the argument named as the kind, by the contract's hint and schema) and its credential
 * (`<kind>Credential`, the contract's attributes camelCased), refuses both on another substrate, and
 * diff replaces the controller only when a setting the contract's `locatedBy` names changes (a
 * changed credential or other setting is an update). No controller runs: check and diff are the
 * provider's own.
 */
import test from "ava";
import { SUBSTRATE_CONTRACTS, contractOf } from "../api";
import type { InstanceCloudSubstrate } from "../api";
import { implementations } from "../provider";

// The published naming rule: a cloud's credential is `<kind>Credential`, its fields the attributes camelCased.
const CLOUD_KINDS = (Object.keys(SUBSTRATE_CONTRACTS) as (keyof typeof SUBSTRATE_CONTRACTS)[]).filter(
  (k): k is InstanceCloudSubstrate => contractOf(k).replicaHosts === "instances",
);
const credentialArg = (kind: string): string => `${kind}Credential`;
const attributeField = (attribute: string): string => attribute.replace(/-(.)/g, (_, c: string) => c.toUpperCase());

/** Valid settings for each cloud kind, as a program gives them. */
const SETTINGS: Record<InstanceCloudSubstrate, Record<string, unknown>> = {
  aws: { region: "eu-west-1", imageId: "ami-0123456789abcdef0", endpoint: "https://ec2.example.com" },
  vsphere: { url: "https://vc.example.com/sdk", datacenter: "DC1", template: "linux" },
};
/** A credential argument for `kind` with each attribute it takes set to `x-<attribute>`. */
const credentialFor = (kind: InstanceCloudSubstrate, which: "required" | "all" = "all"): Record<string, string> => {
  const c = SUBSTRATE_CONTRACTS[kind].credential;
  const attributes = which === "all" ? [...c.required, ...c.optional] : c.required;
  return Object.fromEntries(attributes.map((a) => [attributeField(a), `x-${a}`]));
};
const base = { name: "ctl", replicas: 1, adopt: false, timeoutSeconds: 900 };

test("the kinds a Controller launches instances on are those whose contracts say so, each with its credential", (t) => {
  t.true(CLOUD_KINDS.length > 0);
  for (const kind of CLOUD_KINDS) t.truthy(contractOf(kind).credential, kind);
  t.is(attributeField("access-key-id"), "accessKeyId");
});

test("check asks a cloud controller for its settings and credential in the contract's words, and refuses them elsewhere", async (t) => {
  for (const kind of CLOUD_KINDS) {
    const contract = contractOf(kind);
    const missing = await implementations.controller.check({}, { ...base, substrate: kind } as never);
    const byField = new Map((missing.failures ?? []).map((f) => [f.property, f.reason]));
    t.is(byField.get(kind), `required with substrate "${kind}": ${contract.settings!.hint}`);
    const required = contract.credential!.required.map(attributeField);
    t.is(
      byField.get(credentialArg(kind)),
      `required with substrate "${kind}": ${contract.words.credential} (${required.join(", ")}; pass it as a secret)`,
    );

    const partial = await implementations.controller.check({}, {
      ...base,
      substrate: kind,
      [kind]: SETTINGS[kind],
      [credentialArg(kind)]: { [required[0]!]: "x" },
      hosts: [{ host: "192.0.2.1", hostKey: "SHA256:x" }],
    } as never);
    const reasons = new Map((partial.failures ?? []).map((f) => [f.property, f.reason]));
    t.false(reasons.has(kind), `${kind}'s settings pass its schema`);
    t.is(reasons.get(credentialArg(kind)), `needs ${required.join(" and ")}`);
    t.regex(reasons.get("hosts") ?? "", new RegExp(`on ${kind} the controller launches its ${contract.words.things}$`));

    const good = await implementations.controller.check({}, {
      ...base,
      substrate: kind,
      [kind]: SETTINGS[kind],
      [credentialArg(kind)]: credentialFor(kind),
    } as never);
    t.deepEqual(good.failures, [], kind);

    const elsewhere = await implementations.controller.check({}, {
      ...base,
      substrate: "local",
      [kind]: SETTINGS[kind],
      [credentialArg(kind)]: credentialFor(kind),
    } as never);
    t.deepEqual(
      (elsewhere.failures ?? []).map((f) => [f.property, f.reason]),
      [kind, credentialArg(kind)].map((field) => [field, `only for substrate "${kind}"`]),
    );
  }
});

test("diff replaces a cloud controller only when a setting its contract locates it by changes", async (t) => {
  for (const kind of CLOUD_KINDS) {
    const olds = {
      ...base,
      substrate: kind,
      [kind]: SETTINGS[kind],
      [credentialArg(kind)]: credentialFor(kind),
    } as never;
    const diff = (settings: Record<string, unknown>, credential = credentialFor(kind)) =>
      implementations.controller.diff("id", olds, {
        ...(olds as object),
        [kind]: { ...SETTINGS[kind], ...settings },
        [credentialArg(kind)]: credential,
      } as never);
    t.deepEqual(await diff({}), { changes: false, replaces: [], deleteBeforeReplace: true }, kind);
    for (const setting of contractOf(kind).locatedBy ?? [])
      t.deepEqual((await diff({ [setting]: "elsewhere" })).replaces, [kind], `${kind}: ${setting}`);
    const other = Object.keys(SETTINGS[kind]).find((s) => !(contractOf(kind).locatedBy ?? []).includes(s))!;
    t.deepEqual(
      [(await diff({ [other]: "other" })).replaces, (await diff({ [other]: "other" })).changes],
      [[], true],
      `${kind}: ${other}`,
    );
    const rotated = Object.fromEntries(Object.entries(credentialFor(kind)).map(([k, v]) => [k, `${v}-2`]));
    t.deepEqual(
      [(await diff({}, rotated)).replaces, (await diff({}, rotated)).changes],
      [[], true],
      `${kind}: credential`,
    );
  }
});
