/** The address a unit gives others to reach it (`STEWARD_UNIT_ADDRESS` in hooks). */
import { networkInterfaces } from "node:os";
import type { ControllerConnection } from "./connection";

/**
 * The source address of the agent's connection to the controller; before the first connection,
 * the machine's first non-loopback IPv4 address, else loopback.
 */
export function unitAddress(conn: ControllerConnection): string {
  const local = conn.localAddress?.replace(/^::ffff:/, "");
  if (local) return local;
  const all = Object.values(networkInterfaces()).flat();
  return all.find((a) => a && !a.internal && a.family === "IPv4")?.address ?? "127.0.0.1";
}
