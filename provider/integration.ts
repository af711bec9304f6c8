import * as pulumi from "@pulumi/pulumi";
import type { Application } from "./application";
import { shims } from "./shim";
import { TYPE_MODULE, withSecretOutputs } from "./secrets";
import { waitSeconds } from "./timeouts";

export interface IntegrationEnd {
  application: Application;
  /** The endpoint name, when the application has more than one that fits. */
  endpoint?: pulumi.Input<string>;
}

export interface IntegrationArgs {
  endpoints: [IntegrationEnd, IntegrationEnd];
  /** How long to wait, once integrated, for both applications' units to be active/idle (0: do not wait). @default `customTimeouts.create`, else 600 */
  timeoutSeconds?: pulumi.Input<number>;
}

/**
 * An integration between two applications of one model. It follows the applications' identity:
 * when either is replaced, the integration is replaced with it.
 */
export class Integration extends pulumi.dynamic.Resource {
  declare readonly integrationId: pulumi.Output<number>;
  declare readonly interface: pulumi.Output<string>;

  constructor(name: string, args: IntegrationArgs, opts?: pulumi.CustomResourceOptions) {
    const [a, b] = args.endpoints;
    const ref = (e: IntegrationEnd): pulumi.Output<string> =>
      pulumi.all([e.application.name, e.endpoint]).apply(([n, endpoint]) => (endpoint ? `${n}:${endpoint}` : n));
    super(
      shims.integration,
      name,
      {
        integrationId: undefined,
        interface: undefined,
        connection: pulumi.secret(a.application.connection),
        model: a.application.model,
        endpoints: [ref(a), ref(b)],
        applicationUids: [a.application.uid, b.application.uid],
        timeoutSeconds: waitSeconds(args.timeoutSeconds, opts, ["create", "update"], 600),
      },
      withSecretOutputs(opts, ["connection"]),
      TYPE_MODULE,
      "Integration",
    );
  }
}
