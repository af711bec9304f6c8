/**
 * Operator config options and the check of a value against its option: shared by the CLI, the
 * controller and the dashboard's config editor (browser-safe).
 */
import { CONFIG_VALUE_LIMIT_BYTES } from "./limits";
import { SECRET_URI_PREFIX, secretIdOf } from "./secrets";

/**
 * `secret`: the uri of a user secret (`secret:<id>`, `steward add-secret`), which the operator reads
 * with `secret-get "$(config-get KEY)"` once the user granted it to the application (`grant-secret`).
 */
export type ConfigOptionType = "string" | "int" | "float" | "boolean" | "secret";
export const CONFIG_OPTION_TYPES: readonly ConfigOptionType[] = ["string", "int", "float", "boolean", "secret"];
export interface ConfigOption {
  type: ConfigOptionType;
  default?: string | number | boolean;
  description: string;
}

/** Returns why `value` does not fit `type`, or undefined when it does. */
export function checkConfigValue(type: ConfigOptionType, value: unknown): string | undefined {
  switch (type) {
    case "string": {
      if (typeof value !== "string") return `must be a string, got ${describe(value)}`;
      const bytes = new TextEncoder().encode(value).length;
      return bytes > CONFIG_VALUE_LIMIT_BYTES
        ? `is ${bytes} bytes long; a config value may be at most ${CONFIG_VALUE_LIMIT_BYTES} bytes`
        : undefined;
    }
    case "int":
      return typeof value === "number" && Number.isInteger(value)
        ? undefined
        : `must be a whole number, got ${describe(value)}`;
    case "float":
      return typeof value === "number" && Number.isFinite(value)
        ? undefined
        : `must be a number, got ${describe(value)}`;
    case "boolean":
      return typeof value === "boolean" ? undefined : `must be true or false, got ${describe(value)}`;
    case "secret":
      // The uri is not secret (the values stay sealed), so it may be shown in the message.
      return typeof value === "string" && value.startsWith(SECRET_URI_PREFIX) && secretIdOf(value) !== undefined
        ? undefined
        : `must be a secret's uri, secret:<20 characters> (steward add-secret prints it; steward secrets lists them), got ${describe(value)}`;
  }
}

function describe(v: unknown): string {
  return typeof v === "string" ? `the string ${JSON.stringify(v)}` : `${typeof v} ${JSON.stringify(v)}`;
}

/**
 * Converts text from the command line (`--config port=80`) to the option's type, so `port=80`
 * becomes the number 80 and `debug=true` the boolean true.
 */
export function coerceConfigText(type: ConfigOptionType | undefined, text: string): string | number | boolean {
  if (type === "int" && /^-?\d+$/.test(text)) return Number(text);
  if (type === "float" && text.trim() !== "" && Number.isFinite(Number(text))) return Number(text);
  if (type === "boolean" && (text === "true" || text === "false")) return text === "true";
  return text;
}
