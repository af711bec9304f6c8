import { Command, Option } from "clipanion";
import { X509Certificate } from "node:crypto";
import { ControllerClient, routes } from "../../api/core";
import { ControllerCommand } from "../base-command";

export default class DashboardCommand extends ControllerCommand {
  static override paths = [["dashboard"]];
  static override usage = Command.Usage({
    category: "Controllers",
    description: "show where the web dashboard is and how to log in to it",
    details: `
      Every replica of a controller serves the dashboard at https://ADDRESS/. It prints the addresses
      (the first that answers first), the user to log in as, and the fingerprint of the controller's
      own CA, which signs its certificate: your browser does not know that CA, so either import it
      (\`--ca\` prints it in PEM) or check the fingerprint before accepting the warning once.
      \`--show-password\` prints the password this client holds for the user (a bootstrap-generated
      one has no other copy); without it the password is never printed.
    `,
    examples: [
      ["Where is the dashboard?", "$0 dashboard"],
      ["The CA, to import into a browser", "$0 dashboard --ca > steward-ca.pem"],
      ["With the stored password", "$0 dashboard --show-password"],
    ],
  });

  showPassword = Option.Boolean("--show-password", false, {
    description: "also print the password this client holds for the user",
  });
  ca = Option.Boolean("--ca", false, {
    description: "print only the controller's CA certificate (PEM), to import into a browser",
  });

  async run(): Promise<number> {
    const { name, entry } = await this.resolveController();
    if (this.ca) {
      this.context.stdout.write(entry.caCert.endsWith("\n") ? entry.caCert : `${entry.caCert}\n`);
      return 0;
    }
    // The replicas' current addresses, when one answers (replicas can have moved since this entry was written).
    let addresses = entry.addresses;
    const client = new ControllerClient({ addresses, caCert: entry.caCert, timeoutMs: 3000, retryUnavailableMs: 0 });
    try {
      await client.call(routes.health, {});
      addresses = client.addresses;
    } catch (err) {
      this.out(`(controller "${name}" did not answer just now: ${(err as Error).message})`);
    } finally {
      client.close();
    }
    this.out(`Dashboard of controller "${name}": https://${addresses[0]}/`);
    if (addresses.length > 1)
      this.out(
        `  also served by: ${addresses
          .slice(1)
          .map((a) => `https://${a}/`)
          .join(" ")}`,
      );
    this.out(
      `Log in as ${entry.user}${this.showPassword && entry.password ? ` with password ${entry.password}` : entry.password ? " (its password: steward dashboard --show-password)" : ""}.`,
    );
    this.out(`The certificate is signed by the controller's own CA, SHA-256 fingerprint`);
    this.out(`  ${new X509Certificate(entry.caCert).fingerprint256}`);
    this.out(
      `Import it into your browser (steward dashboard --ca > steward-ca.pem) or check that fingerprint before accepting the warning.`,
    );
    return 0;
  }
}
