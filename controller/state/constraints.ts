/**
 * Checks a machine's constraints against its model's substrate when the machine is asked for, so
 * that what no machine could have is refused at once (400, naming the key) rather than failing
 * later in provisioning. The cloud checks again when it launches (the image may say more).
 */
import type { Constraints } from "../../api";
import { constraintsProblem, hasConstraints, invalidRequest } from "../../api";
import { substrateKind } from "../../substrates";
import type { ModelDoc } from "./documents";

export function checkMachineConstraints(model: Pick<ModelDoc, "placement">, c: Constraints | undefined): void {
  if (!hasConstraints(c)) return;
  const { substrate, settings } = model.placement;
  const problem = constraintsProblem(substrate, c);
  if (problem) throw invalidRequest(problem, { field: "constraints" });
  // The kind's own check (aws: some instance type fits), against the model's settings.
  substrateKind(substrate).checkConstraints?.(settings, c);
}
