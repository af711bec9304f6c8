/**
 * The dashboard's live feed: one WebSocket per browser on `/v1/live`. The page says which topics it
 * shows ({@link LiveRequest}, replacing what it asked before); the controller sends each topic's
 * state at once and then what changed ({@link LiveMessage}), at most every few hundred ms per topic.
 * A model's changes come as {@link ModelPatch}es: only the units, machines and applications that
 * changed, so a model of 1,000 units costs a few hundred bytes per change, not its whole status.
 * Browser-safe.
 */
import type { WireError } from "./errors";
import type {
  ApplicationStatusView,
  IntegrationStatusView,
  MachineStatusView,
  ModelStatus,
  UnitDetails,
  UnitStatusView,
} from "./status";
import type { StorageInfo } from "./storage";
import type { SecretInfo } from "./secrets";
import type { ControllerOverview, ModelSummary } from "./wire";

/**
 * `models`, `controller`, `model:<name>`, `storage:<model>` (its storage instances), `secrets:<model>`
 * (its secrets' metadata, never values), or `unit:<model>/<app>/<n>`.
 */
export type LiveTopic = string;

/** Most topics one feed follows at once. */
export const MAX_LIVE_TOPICS = 8;

export interface LiveRequest {
  subscribe: LiveTopic[];
}

/** An application without its units (they come on their own in a patch). */
export type ApplicationHead = Omit<ApplicationStatusView, "units">;

/** What changed in a model's status since the last message on its topic; `null` means removed. */
export interface ModelPatch {
  model: ModelStatus["model"];
  applications?: Record<string, ApplicationHead | null>;
  /** Changed units, by name (`app/n`). */
  units?: Record<string, UnitStatusView | null>;
  machines?: Record<string, MachineStatusView | null>;
  /** The whole list, when it changed. */
  integrations?: IntegrationStatusView[];
  timestamp: string;
}

export type LiveMessage =
  | { topic: LiveTopic; models: ModelSummary[] }
  /** A superuser's feed carries the whole ControllerInfo (see showsCluster). */
  | { topic: LiveTopic; controller: ControllerOverview }
  | { topic: LiveTopic; status: ModelStatus }
  | { topic: LiveTopic; patch: ModelPatch }
  | { topic: LiveTopic; unit: UnitDetails }
  /** The model's storage instances, attached and kept (detached), whole each time the list changes. */
  | { topic: LiveTopic; storage: StorageInfo[] }
  /** The model's secrets as `steward secrets` lists them (metadata only), whole each time the list changes. */
  | { topic: LiveTopic; secrets: SecretInfo[] }
  /** The topic cannot be followed (no such model or unit, no access); the others go on. */
  | { topic: LiveTopic; error: WireError }
  /** The feed was refused as a whole (a malformed request). */
  | { error: WireError };

/** The topic's parts, or undefined when it is not one of the six forms. */
export function parseLiveTopic(
  topic: unknown,
):
  | { kind: "models" }
  | { kind: "controller" }
  | { kind: "model"; model: string }
  | { kind: "storage"; model: string }
  | { kind: "secrets"; model: string }
  | { kind: "unit"; model: string; unit: string }
  | undefined {
  if (typeof topic !== "string" || topic.length > 200) return undefined;
  if (topic === "models" || topic === "controller") return { kind: topic };
  const model = /^model:([^/]+)$/.exec(topic);
  if (model) return { kind: "model", model: model[1]! };
  const storage = /^storage:([^/]+)$/.exec(topic);
  if (storage) return { kind: "storage", model: storage[1]! };
  const secrets = /^secrets:([^/]+)$/.exec(topic);
  if (secrets) return { kind: "secrets", model: secrets[1]! };
  const unit = /^unit:([^/]+)\/([^/]+\/\d+)$/.exec(topic);
  if (unit) return { kind: "unit", model: unit[1]!, unit: unit[2]! };
  return undefined;
}

/** The model's status with a patch applied (the page keeps its copy current this way). */
export function applyModelPatch(doc: ModelStatus, patch: ModelPatch): ModelStatus {
  const applications: Record<string, ApplicationStatusView> = {};
  for (const [name, app] of Object.entries(doc.applications)) applications[name] = app;
  for (const [name, head] of Object.entries(patch.applications ?? {})) {
    if (head === null) delete applications[name];
    else applications[name] = { ...head, units: applications[name]?.units ?? {} };
  }
  for (const [name, unit] of Object.entries(patch.units ?? {})) {
    const app = applications[name.slice(0, name.lastIndexOf("/"))];
    if (!app) continue;
    const units = { ...app.units };
    if (unit === null) delete units[name];
    else units[name] = unit;
    applications[app.name] = { ...app, units };
  }
  const machines = { ...doc.machines };
  for (const [id, m] of Object.entries(patch.machines ?? {})) {
    if (m === null) delete machines[id];
    else machines[id] = m;
  }
  return {
    model: patch.model,
    applications,
    machines,
    integrations: patch.integrations ?? doc.integrations,
    timestamp: patch.timestamp,
  };
}

/*
 * The console pane: `/v1/console`, a WebSocket on which the controller runs the console shell
 * (`steward` with no arguments) as the logged-in user, restricted to commands that talk to the
 * controller. Frames are JSON text both ways.
 */

/** Most bytes one frame from the page may have; a longer paste goes in several `input` frames. */
export const MAX_CONSOLE_FRAME_BYTES = 64 * 1024;

/** Page → controller: keystrokes as typed (UTF-8 text, escape sequences as xterm.js sends them), or the terminal's new size. */
export type ConsoleRequest = { input: string } | { resize: { cols: number; rows: number } };

/**
 * Controller → page: what the console wrote (terminal text: escape sequences, newlines as `\r\n`);
 * `exit` once, with the console's exit code, just before the socket closes; `error` when a frame was
 * refused or the console could not start, just before the socket closes.
 */
export type ConsoleMessage = { output: string } | { exit: number } | { error: WireError };

/** How `/v1/console` closes; the reason says more. */
export const CONSOLE_CLOSE_CODES = {
  /** The console exited (exit, Ctrl-D); `exit` came first. */
  exited: 1000,
  /** The controller is stopping. */
  shutdown: 1001,
  /** A binary frame: send JSON text. */
  binary: 1003,
  /** A frame that is not one of {@link ConsoleRequest}. */
  malformed: 1008,
  /** A frame over {@link MAX_CONSOLE_FRAME_BYTES}. */
  tooBig: 1009,
  internal: 1011,
  /** The session's token expired or was revoked (logout, password change): log in again. */
  tokenEnded: 4401,
  /** No input for the idle time (30 minutes by default): open a new console. */
  idle: 4408,
} as const;

/** What the controller starts the console with (shared with the CLI, which reads them). */
export const WEB_CONSOLE_ENV = {
  /** `web`: the console's pipes are a terminal (keys in, screen out), its size on {@link WEB_CONSOLE_CONTROL_FD}. */
  terminal: "STEWARD_CONSOLE_TERMINAL",
  /** `1`: only commands that talk to the controller (it runs on a controller host). */
  restricted: "STEWARD_CONSOLE_RESTRICTED",
} as const;

/** The console's file descriptor for `{"resize":{"cols":n,"rows":n}}` lines from the controller. */
export const WEB_CONSOLE_CONTROL_FD = 3;
