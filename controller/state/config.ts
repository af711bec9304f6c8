/**
 * An application's config: what the user sets is checked against its operator's options, and what its
 * units see is the operator's defaults overlaid with that. Its own file because the agents' views read
 * the effective config as the operations write the set one, and neither should import the other for it.
 */
import type { OperatorMeta } from "../../api";
import { CONFIG_TOTAL_LIMIT_BYTES, StewardError, checkConfigValue } from "../../api";
import type { ConfigValues } from "./documents";

/** Checks user-set config against the operator's options; names the key and the fix on error. */
export function validateConfig(meta: OperatorMeta, values: ConfigValues, app: string): ConfigValues {
  const out: ConfigValues = {};
  for (const [k, v] of Object.entries(values)) {
    const opt = meta.config[k];
    if (!opt) throw configError(app, meta, k);
    const problem = checkConfigValue(opt.type, v);
    if (problem)
      throw new StewardError("config-invalid", `config "${k}" of ${app}: ${problem}`, {
        details: { field: k, type: opt.type },
      });
    out[k] = v;
  }
  return out;
}

/** Refuses config whose values together exceed {@link CONFIG_TOTAL_LIMIT_BYTES}; returns it otherwise. */
export function checkConfigTotal(config: ConfigValues, app: string): ConfigValues {
  const bytes = Buffer.byteLength(JSON.stringify(config));
  if (bytes <= CONFIG_TOTAL_LIMIT_BYTES) return config;
  const largest = Object.entries(config)
    .sort(([, a], [, b]) => String(b).length - String(a).length)
    .slice(0, 3)
    .map(([k]) => `"${k}"`);
  throw new StewardError(
    "config-invalid",
    `config of ${app} would be ${bytes} bytes in all; an application's config may hold at most ${CONFIG_TOTAL_LIMIT_BYTES} bytes (largest values: ${largest.join(", ")})`,
    { details: { field: "config", bytes, limit: CONFIG_TOTAL_LIMIT_BYTES } },
  );
}

/** An option the operator does not declare, with the options it does. */
export function configError(app: string, meta: OperatorMeta, key: string): StewardError {
  const known = Object.keys(meta.config);
  return new StewardError(
    "config-invalid",
    `config "${key}" is not an option of ${app} (operator ${meta.name}); ${known.length > 0 ? `known options: ${known.join(", ")}` : "it has no config options"}`,
    { details: { field: key, known } },
  );
}

/** The effective config: operator defaults overlaid with the values set on the application. */
export function effectiveConfig(meta: OperatorMeta | undefined, set: ConfigValues): ConfigValues {
  const out: ConfigValues = {};
  for (const [k, opt] of Object.entries(meta?.config ?? {})) if (opt.default !== undefined) out[k] = opt.default;
  return { ...out, ...set };
}
