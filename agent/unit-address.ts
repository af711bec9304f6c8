/** The address a unit gives others to reach it (`STEWARD_UNIT_ADDRESS` in hooks). */
import { networkInterfaces } from "node:os";
import type { ControllerConnection } from "./connection";

/** The machine's first non-loopback IPv4 address, else loopback. */
export function machineAddress(): string {
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  return "127.0.0.1";
}

/** The source address of the agent's connection to the controller, once it has connected. */
export function connectedAddress(conn: ControllerConnection): string | undefined {
  return conn.localAddress?.replace(/^::ffff:/, "");
}

/** Where units on other machines reach this one: {@link connectedAddress}, before that {@link machineAddress}. */
export function unitAddress(conn: ControllerConnection): string {
  return connectedAddress(conn) ?? machineAddress();
}
