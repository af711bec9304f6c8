/**
 * Checks a machine's constraints against its model's substrate when the machine is asked for, so
 * that what no machine could have is refused at once (400, naming the key) rather than failing
 * later in provisioning. The cloud checks again when it launches (the image may say more).
 */
import type { Constraints } from "../../api";
import { constraintsProblem, hasConstraints, invalidRequest } from "../../api";
import { aws } from "../../substrates";
import type { ModelDoc } from "./documents";

export function checkMachineConstraints(model: ModelDoc, c: Constraints | undefined): void {
  if (!hasConstraints(c)) return;
  const problem = constraintsProblem(model.substrate ?? "local", c);
  if (problem) throw invalidRequest(problem, { field: "constraints" });
  // Throws, saying what the largest types are, when nothing fits.
  if (model.substrate === "aws" && model.aws) aws.instanceTypeFor(c, model.aws.instanceType);
}
