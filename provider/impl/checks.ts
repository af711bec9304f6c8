/** `check` helpers: failures as data, each naming its field, with unknown (preview) values let through. */
import { NAME_PATTERN } from "../../api/core";
import { schemas } from "./schemas";
import { isUnknown } from "./values";

export interface CheckFailure {
  property: string;
  reason: string;
}

export class Failures {
  readonly list: CheckFailure[] = [];
  add(property: string, reason: string): void {
    this.list.push({ property, reason });
  }

  name(property: string, value: unknown, what: string): void {
    if (isUnknown(value)) return;
    if (typeof value !== "string" || !NAME_PATTERN.test(value) || value.length > 63) {
      this.add(
        property,
        `${what} ${JSON.stringify(value)} must be lower-case letters, digits and single hyphens, starting with a letter, at most 63 characters`,
      );
    }
  }

  connection(value: unknown): void {
    if (isUnknown(value)) return;
    const c = value as { addresses?: unknown; caCert?: unknown; user?: unknown; password?: unknown } | undefined;
    if (!c || typeof c !== "object")
      return this.add(
        "connection",
        "required: pass a Controller's `connection` output (addresses, caCert, user, password)",
      );
    if (!Array.isArray(c.addresses) || c.addresses.length === 0)
      this.add("connection.addresses", "must list at least one host:port");
    if (typeof c.caCert !== "string" || !c.caCert.includes("BEGIN CERTIFICATE"))
      this.add("connection.caCert", "must be the controller CA's PEM certificate");
    if (typeof c.user !== "string" || !c.user) this.add("connection.user", "required");
    if (typeof c.password !== "string" || !c.password) this.add("connection.password", "required");
  }

  /** An SSH host: address, optional port, and a pinned host key (required: keys are always verified). */
  sshHost(property: string, h: unknown): void {
    if (isUnknown(h)) return;
    const host = h as { host?: unknown; port?: unknown; hostKey?: unknown } | undefined;
    const { HOST_KEY_PATTERN, HOST_PATTERN } = schemas();
    if (!HOST_PATTERN.test(String(host?.host ?? ""))) this.add(`${property}.host`, "must be a host name or IP address");
    this.wholeNumber(`${property}.port`, host?.port, 1, 65535);
    if (!isUnknown(host?.hostKey) && !HOST_KEY_PATTERN.test(String(host?.hostKey ?? ""))) {
      this.add(
        `${property}.hostKey`,
        "required: the host key's fingerprint, SHA256:… (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub on the host); host keys are always verified",
      );
    }
  }

  wholeNumber(property: string, value: unknown, min: number, max: number): void {
    if (value === undefined || isUnknown(value)) return;
    if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max)
      this.add(property, `must be a whole number from ${min} to ${max}, not ${JSON.stringify(value)}`);
  }

  oneOf(property: string, value: unknown, allowed: readonly unknown[], why = ""): void {
    if (value === undefined || isUnknown(value)) return;
    if (!allowed.includes(value))
      this.add(
        property,
        `must be ${allowed.map((a) => JSON.stringify(a)).join(", ")}, not ${JSON.stringify(value)}${why ? `: ${why}` : ""}`,
      );
  }

  unknownKeys(property: string, value: unknown, known: readonly string[]): void {
    if (!value || typeof value !== "object" || isUnknown(value)) return;
    for (const k of Object.keys(value))
      if (!known.includes(k)) this.add(`${property}.${k}`, `unknown setting; known: ${known.join(", ")}`);
  }
}
