import type * as pulumi from "@pulumi/pulumi";

/**
 * Adds `names` to the outputs Pulumi encrypts: a dynamic provider cannot mark secrets itself, and
 * outputs it makes up (a generated password) would otherwise be stored in plain text.
 */
export function withSecretOutputs(
  opts: pulumi.CustomResourceOptions | undefined,
  names: string[],
): pulumi.CustomResourceOptions {
  return { ...opts, additionalSecretOutputs: [...new Set([...(opts?.additionalSecretOutputs ?? []), ...names])] };
}

/** The type token's module: `pulumi-nodejs:dynamic/steward:<Kind>`. Changing it would replace every resource. */
export const TYPE_MODULE = "steward";
