/**
 * The network a client's address belongs to, for login limits: one attacker usually holds a whole
 * IPv4 /24 or IPv6 /64 (a home router hands out a /64; a cloud account gets neighbouring IPv4s),
 * so counting per address would give it hundreds or billions of budgets.
 */
import { isIPv4, isIPv6 } from "node:net";

/** `a.b.c.0/24` for IPv4 (IPv4-mapped IPv6 included), the first four groups `/64` for IPv6, else the address itself. */
export function addressPrefix(address: string): string {
  const ip = address.replace(/%.*$/, ""); // a zone id (fe80::1%eth0) names an interface, not a network
  if (isIPv4(ip)) return `${ip.slice(0, ip.lastIndexOf("."))}.0/24`;
  if (!isIPv6(ip)) return address;
  const groups = ipv6Groups(ip);
  // ::ffff:a.b.c.d is an IPv4 client of a dual-stack listener.
  if (groups.slice(0, 5).every((g) => g === "0") && groups[5] === "ffff") {
    const [hi, lo] = [parseInt(groups[6]!, 16), parseInt(groups[7]!, 16)];
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.0/24`;
  }
  return `${groups.slice(0, 4).join(":")}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address, in lower-case hex without leading zeros. */
function ipv6Groups(ip: string): string[] {
  // A dotted IPv4 tail (::a.b.c.d forms) is two groups.
  const tail = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(ip);
  const text = tail
    ? `${ip.slice(0, tail.index)}${((+tail[1]! << 8) | +tail[2]!).toString(16)}:${((+tail[3]! << 8) | +tail[4]!).toString(16)}`
    : ip;
  const [head, rest] = text.split("::") as [string, string | undefined];
  const left = head ? head.split(":") : [];
  const right = rest ? rest.split(":") : [];
  const groups =
    rest === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right];
  return groups.map((g) => parseInt(g, 16).toString(16));
}
