import { Command } from "clipanion";
import { ControllerClient, STEWARD_VERSION, StewardError, routes } from "../../api/core";
import { ControllerCommand } from "../base-command";

export default class VersionCommand extends ControllerCommand {
  static override paths = [["version"]];
  static override usage = Command.Usage({
    category: "Getting started",
    description: "show the version of this client and of the current controller",
    details:
      "Prints this client's version and, when a controller is selected and answers, the version it reports (its health check needs no login), or why the two cannot work together: a client works with controllers one minor version older or newer (README, Versions that work together).",
    examples: [
      ["Show versions", "$0 version"],
      ["And of the controller called prod", "$0 version -c prod"],
    ],
  });

  async run(): Promise<number> {
    this.out(`steward ${STEWARD_VERSION}`);
    const cfg = await this.clientConfig();
    // Not resolveController(): with no controller at all, the client's version is the whole answer.
    const name = this.controllerName ?? this.context.env.STEWARD_CONTROLLER ?? cfg.current;
    const entry = name ? cfg.controllers[name] : undefined;
    if (!name) return 0;
    if (!entry) {
      this.out(`controller "${name}" is not known here`);
      return 0;
    }
    const client = new ControllerClient({ addresses: entry.addresses, caCert: entry.caCert, timeoutMs: 3000 });
    try {
      const health = await client.call(routes.health, {});
      this.out(`controller "${name}" ${health.version ?? "(version not reported)"}`);
    } catch (err) {
      if (StewardError.isInstance(err) && err.reason === "version-incompatible")
        this.out(`controller "${name}" answered, but ${err.message}`);
      else this.out(`controller "${name}" did not answer: ${(err as Error).message}`);
    } finally {
      client.close();
    }
    return 0;
  }
}
