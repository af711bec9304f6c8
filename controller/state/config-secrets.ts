/**
 * Config options of type `secret` hold a secret's uri (api/config-values.ts checks its form): when
 * config is set, the model must have that secret, so a typo is refused at once rather than found by
 * the operator's `secret-get` failing. Its own file: it reads the store, which config.ts does not.
 */
import type { OperatorMeta } from "../../api";
import { StewardError, secretIdOf } from "../../api";
import type { Store } from "../store";
import type { ConfigValues } from "./documents";
import { keys } from "./keys";

/** Refuses a value of a `secret` option that names no secret of model `uuid`. */
export async function checkConfigSecrets(
  store: Store,
  uuid: string,
  meta: OperatorMeta,
  values: ConfigValues,
  app: string,
): Promise<void> {
  for (const [k, v] of Object.entries(values)) {
    if (meta.config[k]?.type !== "secret" || typeof v !== "string") continue;
    const id = secretIdOf(v);
    if (id !== undefined && (await store.get(keys.secret(uuid, id)))) continue;
    throw new StewardError(
      "config-invalid",
      `config "${k}" of ${app}: this model has no secret ${v} (steward secrets lists them; steward add-secret makes one)`,
      { details: { field: k, type: "secret" } },
    );
  }
}
