/**
 * The agent ↔ controller protocol over one WebSocket. Frames are JSON:
 * `{t:"req", id, method, params}` answered by `{t:"res", id, result}` or `{t:"res", id, error}`,
 * and `{t:"push", topic, data}` for one-way news (the controller pushes the agent's view).
 */
import { z } from "zod";
import type { WireError } from "./errors";
import { WorkloadStatusValue } from "./schemas";

export const AGENT_PROTOCOL_VERSION = 1;

export interface UnitView {
  name: string;
  app: string;
  life: "alive" | "dying";
  operator: { hash: string; name: string; version: string };
  /** The effective config: operator defaults overlaid with the values set on the application. */
  config: Record<string, string | number | boolean>;
}

/** Everything one machine agent needs to know; pushed whole whenever any of it changes. */
export interface AgentView {
  model: { uuid: string; name: string };
  machine: { id: string };
  /** Seconds between update-status hooks. */
  updateStatusInterval: number;
  units: UnitView[];
  controllerAddresses: string[];
}

export type AgentFrame =
  | { t: "req"; id: number; method: string; params: unknown }
  | { t: "res"; id: number; result?: unknown; error?: WireError }
  | { t: "push"; topic: string; data: unknown };

export const UnitStatusReport = z.strictObject({
  unit: z.string(),
  workload: z.strictObject({ current: z.union([WorkloadStatusValue, z.literal("error")]), message: z.string().max(1024) }).optional(),
  agent: z.strictObject({ current: z.enum(["allocating", "executing", "idle", "error"]), message: z.string().max(1024) }).optional(),
  version: z.string().max(256).optional(),
});
export type UnitStatusReport = z.infer<typeof UnitStatusReport>;

export const UnitDeadReport = z.strictObject({ unit: z.string() });
export const MachineInfoReport = z.strictObject({
  hostname: z.string().max(255),
  address: z.string().max(255),
  os: z.string().max(255),
  agentVersion: z.string().max(64),
});

/** Methods an agent may call, with their parameter schemas. */
export const agentMethods = {
  "unit.status": UnitStatusReport,
  "unit.dead": UnitDeadReport,
  "machine.info": MachineInfoReport,
} as const;
export type AgentMethod = keyof typeof agentMethods;
