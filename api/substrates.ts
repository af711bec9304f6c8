/**
 * Where a model's machines come from (as a Juju model records its cloud): `local` starts agent
 * processes on the controller's host for units placed without `--to`; `manual` and `ssh` models
 * only use machines added to them (`add-machine`).
 */
export const MODEL_SUBSTRATES = ["local", "manual", "ssh"] as const;
export type ModelSubstrate = (typeof MODEL_SUBSTRATES)[number];
