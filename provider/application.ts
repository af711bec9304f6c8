import * as pulumi from "@pulumi/pulumi";
import { readOperatorDir } from "../api/core";
import type { ControllerConnection } from "./connection";
import type { Model } from "./model";
import { shims } from "./shim";
import { TYPE_MODULE, withSecretOutputs } from "./secrets";
import { waitSeconds } from "./timeouts";

export interface ApplicationArgs {
  model: Model;
  /** @default the resource name */
  name?: pulumi.Input<string>;
  /** The operator directory (holding operator.yaml), relative to the program. Changed content upgrades the application. */
  operator: pulumi.Input<string>;
  /** @default 1 */
  units?: pulumi.Input<number>;
  /** Place one unit on each of these machines (Machine `machineId`s) instead of giving `units`. */
  machines?: pulumi.Input<pulumi.Input<string>[]>;
  config?: pulumi.Input<Record<string, pulumi.Input<string | number | boolean>>>;
  /**
   * aws and vsphere models: what the machines made for its units must have (Juju's syntax,
   * `cores=4 mem=8G`), merged over the model's. A change applies to machines made after it (units
   * added by a larger `units`), as `steward constraints` does; machines that exist keep theirs.
   */
  constraints?: pulumi.Input<string>;
  /**
   * Storage for its units, per store its operator declares (`{data: {pool: "local", size: "10G", count: 2}}`),
   * each part optional: left out, the model's first pool, the operator's minimum-size and its minimum
   * count, as `steward deploy --storage`. A change is an update that applies to units added after it
   * (as Juju's storage directives): the storage of units that exist keeps its pool and size, and the
   * application is never replaced for it, which would destroy its data. A pool left out later stays.
   */
  storage?: pulumi.Input<Record<string, pulumi.Input<ApplicationStorageArgs>>>;
  /**
   * Its units' leadership lease: seconds, or a duration such as `"10s"` or `"1m"` (5 s to 1 h). A
   * leader whose agent dies is replaced about one lease later, so a database primary wants it short.
   * A change is an update that applies at each unit's next claim or renewal. @default the controller's (60 s)
   */
  leadershipLease?: pulumi.Input<number | string>;
  /** `active`: wait until every unit is active/idle (and fail with a table of those that are not). @default "active" */
  waitFor?: pulumi.Input<"active" | "none">;
  /** How long create and update wait for the units. @default `customTimeouts.create` (or `.update`), else 600 */
  timeoutSeconds?: pulumi.Input<number>;
  /** How long delete waits for the units to run their stop and remove hooks. @default `customTimeouts.delete`, else 600 */
  deleteTimeoutSeconds?: pulumi.Input<number>;
  /** On destroy, remove without hooks when the units are not gone in time. @default false */
  forceDelete?: pulumi.Input<boolean>;
  /** Take over an application of this name that already exists instead of failing. */
  adopt?: pulumi.Input<boolean>;
}

/** One store's storage for an application's units. */
export interface ApplicationStorageArgs {
  /** A pool of the model's substrate (`local`, …). @default the substrate's first pool */
  pool?: pulumi.Input<string>;
  /** `"512M"`, `"10G"`, or a number of MiB. @default the operator's minimum-size */
  size?: pulumi.Input<string | number>;
  /** Instances per unit, within the operator's `multiple.range`. @default its minimum */
  count?: pulumi.Input<number>;
}

/** An operator deployed to units in a model. */
export class Application extends pulumi.dynamic.Resource {
  declare readonly name: pulumi.Output<string>;
  declare readonly model: pulumi.Output<string>;
  /** New for each deployment of the application (integrations are recreated when it changes). */
  declare readonly uid: pulumi.Output<string>;
  declare readonly units: pulumi.Output<number>;
  declare readonly unitNames: pulumi.Output<string[]>;
  declare readonly operatorVersion: pulumi.Output<string>;
  declare readonly status: pulumi.Output<string>;
  /** What the controller gives each new unit of each store: pool, size (MiB) and count. */
  declare readonly storageDirectives: pulumi.Output<Record<string, { pool: string; size: number; count: number }>>;
  declare readonly connection: pulumi.Output<ControllerConnection>;

  constructor(name: string, args: ApplicationArgs, opts?: pulumi.CustomResourceOptions) {
    // The content hash is taken here, so a changed directory shows in the preview as an upgrade;
    // an unreadable one is reported by the provider's check, naming the field.
    const operator = pulumi.output(args.operator).apply((path) =>
      readOperatorDir(path).then(
        (r) => ({ path, hash: r.hash }),
        () => ({ path, hash: "" }),
      ),
    );
    super(
      shims.application,
      name,
      {
        uid: undefined,
        unitNames: undefined,
        operatorVersion: undefined,
        status: undefined,
        configDefaults: undefined,
        storageDirectives: undefined,
        connection: pulumi.secret(args.model.connection),
        model: args.model.name,
        name: args.name ?? name,
        operator,
        units: args.units ?? (args.machines ? pulumi.output(args.machines).apply((m) => m.length) : 1),
        ...(args.machines !== undefined ? { machines: args.machines } : {}),
        config: args.config ?? {},
        ...(args.constraints !== undefined ? { constraints: args.constraints } : {}),
        ...(args.storage !== undefined ? { storage: args.storage } : {}),
        ...(args.leadershipLease !== undefined ? { leadershipLease: args.leadershipLease } : {}),
        waitFor: args.waitFor ?? "active",
        timeoutSeconds: waitSeconds(args.timeoutSeconds, opts, ["create", "update"], 600),
        deleteTimeoutSeconds: waitSeconds(args.deleteTimeoutSeconds, opts, ["delete"], 600),
        forceDelete: args.forceDelete ?? false,
        adopt: args.adopt ?? false,
      },
      withSecretOutputs(opts, ["connection"]),
      TYPE_MODULE,
      "Application",
    );
  }
}
