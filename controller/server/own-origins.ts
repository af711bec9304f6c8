/**
 * The origins this controller's own page is served from: its replicas' configured addresses, and
 * the names its certificate carries at the ports it listens on. A WebSocket upgrade authenticated
 * by the session cookie alone must name one of them as its Origin. Comparing the Origin with the
 * request's own Host header proves nothing: a page on another name that resolves to this host
 * (DNS rebinding) sends a Host and an Origin that agree.
 */
import { X509Certificate } from "node:crypto";
import { isIPv6 } from "node:net";

export class OwnOrigins {
  private readonly certNames: string[];

  /**
   * @param addresses every replica's API addresses (`host:port`), as clients and agents are given them
   * @param serverCert this replica's certificate (PEM): its DNS and IP names
   */
  constructor(
    private readonly addresses: () => string[],
    serverCert: string,
  ) {
    const san = new X509Certificate(serverCert).subjectAltName ?? "";
    this.certNames = san
      .split(", ")
      .flatMap((entry) => {
        const m = /^(DNS|IP Address):(.+)$/.exec(entry.trim());
        return m ? [hostOf(m[1] === "DNS" ? m[2]! : isIPv6(m[2]!) ? `[${m[2]!}]` : m[2]!)] : [];
      })
      .filter((h): h is string => h !== undefined);
  }

  /** Whether `origin` (an Origin header) is a page of this controller's: https, at one of its addresses or certificate names. */
  allows(origin: string | string[] | undefined): boolean {
    if (typeof origin !== "string") return false;
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return false;
    }
    if (url.protocol !== "https:" || url.origin !== origin.toLowerCase().replace(/\/$/, "")) return false;
    const own = this.addresses()
      .map((a) => hostOf(a))
      .filter((h): h is string => h !== undefined);
    if (own.includes(url.host)) return true;
    // A certificate name at a port the controller is reached on (a name in /etc/hosts or DNS for a replica).
    const ports = new Set(this.addresses().map((a) => portOf(a)));
    return this.certNames.includes(url.hostname) && ports.has(url.port || "443");
  }
}

/** `host[:port]` as a URL would print it (lower case, IPv6 in brackets, no default port), or undefined if it is not one. */
function hostOf(hostPort: string): string | undefined {
  try {
    return new URL(`https://${hostPort}`).host;
  } catch {
    return undefined;
  }
}

function portOf(hostPort: string): string {
  try {
    return new URL(`https://${hostPort}`).port || "443";
  } catch {
    return "";
  }
}
