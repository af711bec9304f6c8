import { Command, Option } from "clipanion";
import type { CredentialSubstrate } from "../../api/core";
import { substratesWhere } from "../../api/core";
import { kubernetes } from "../../substrates";
import { ControllerCommand } from "../base-command";
import { readKubeconfig } from "../kubeconfig-file";

/** The kind whose clusters this registers: the one whose units are pods. */
const clusterKind = (): CredentialSubstrate =>
  substratesWhere((k) => k.provisions === "pods")[0] as CredentialSubstrate;

export default class AddK8sCommand extends ControllerCommand {
  static override paths = [["add-k8s"]];
  static override usage = Command.Usage({
    category: "Credentials",
    description: "register a Kubernetes cluster that models can run on",
    details: `
      Reads the cluster's API server, CA and your user's credential from a kubeconfig (the named context or its current one) and stores them on the controller as a credential named NAME, encrypted like every credential; \`steward credentials\` shows only the context and server. Files the kubeconfig points to (a CA, a client certificate, a token file) are read here and stored inline, since the controller cannot read your files.

      Before storing it the controller checks the cluster from where it runs: that its API server answers and accepts the credential, and (by SelfSubjectAccessReviews, as \`kubectl auth can-i\`) that the user may do what Steward does: create namespaces and manage StatefulSets, Services, Secrets and pods in any namespace, or else do so in its context's namespace. A refusal names the server and what failed or is missing. \`--skip-check\` stores it unchecked (a cluster not up yet).

      The user needs a token (a ServiceAccount's, for instance) or a client certificate: \`exec\` and \`auth-provider\` users (cloud CLI plugins) are refused, because a controller replica would have to run those programs. It needs the rights to manage namespaces, StatefulSets, Services, Secrets, pods and their claims in the namespaces of its models.

      Then \`steward add-model NAME --substrate kubernetes:CLUSTER\` makes a model whose applications are StatefulSets in a namespace of that cluster (the model's name, or --namespace).
    `,
    examples: [
      ["A cluster from your kubeconfig's current context", "$0 add-k8s lab --kubeconfig ~/.kube/config"],
      ["A named context", "$0 add-k8s prod --kubeconfig ~/.kube/config --context prod-admin"],
      ["A cluster that is not up yet (stored unchecked)", "$0 add-k8s lab --kubeconfig ~/.kube/config --skip-check"],
      ["A model on it", "$0 add-model shop --substrate kubernetes:lab"],
    ],
  });

  name = Option.String({ required: true, name: "name" });
  kubeconfig = Option.String("--kubeconfig", {
    description: "The kubeconfig file (default $KUBECONFIG, else ~/.kube/config)",
  });
  contextName = Option.String("--context", {
    description: "The kubeconfig context to use (default its current-context)",
  });
  replace = Option.Boolean("--replace", false, { description: "Replace an existing cluster's credential" });
  skipCheck = Option.Boolean("--skip-check", false, {
    description:
      "Store it without checking that the controller reaches the cluster and that its user has the rights Steward needs",
  });

  async run(): Promise<number> {
    const connection = readKubeconfig(this.context.env, this.kubeconfig, this.contextName);
    const res = await (
      await this.connect()
    ).putCredential(this.name, clusterKind(), kubernetes.credentialOfConnection(connection), this.replace, {
      skipCheck: this.skipCheck,
    });
    const what = `cluster "${this.name}" (${connection.server}, context ${connection.context || "?"})`;
    this.out(
      res.created
        ? `Registered ${what}. Make a model on it: steward add-model NAME --substrate kubernetes:${this.name}`
        : res.changed
          ? `Replaced ${what}.`
          : `${what[0]!.toUpperCase()}${what.slice(1)} is already registered with these values; nothing changed.`,
    );
    return 0;
  }
}
