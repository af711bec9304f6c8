/**
 * A model document in its current shape, whatever shape it was written in. Models written before
 * placements (and exports of them) held `substrate` (absent: local), `credential` and the kind's
 * settings in a bag named after the kind (`aws: {…}`); now they hold one `placement`. Stores,
 * backups and exports of the previous build are read through {@link modelDocOf}, so nothing needs
 * rewriting first; the next write of a model stores the new shape.
 */
import type { ModelPlacement, ModelSubstrate } from "../../api";
import { MODEL_SUBSTRATES } from "../../api";
import type { ModelDoc } from "./documents";

/** `raw` (a parsed model document of any shape this controller reads) in the current shape. */
export function modelDocOf(raw: unknown): ModelDoc {
  const doc = raw as Record<string, unknown>;
  if (doc.placement !== undefined) return raw as ModelDoc;
  const substrate = (doc.substrate ?? "local") as ModelSubstrate;
  const placement = {
    substrate,
    ...(typeof doc.credential === "string" ? { credential: doc.credential } : {}),
    settings: doc[substrate] ?? {},
  } as ModelPlacement;
  const rest = Object.fromEntries(
    Object.entries(doc).filter(
      ([k]) => k !== "substrate" && k !== "credential" && !(MODEL_SUBSTRATES as readonly string[]).includes(k),
    ),
  );
  return { ...rest, placement } as unknown as ModelDoc;
}

/** The model's settings for its kind, typed by the caller (who knows the kind). */
export const settingsOf = <S = Record<string, unknown>>(model: Pick<ModelDoc, "placement">): S =>
  model.placement.settings as S;

/**
 * {@link modelDocOf} backwards: the model document as the previous build stores it (`substrate`,
 * `credential`, and the settings in a bag named after the kind, left out for a kind without settings),
 * for an export to a controller of that build. `modelDocOf` turns it back into `doc`, unchanged.
 */
export function previousModelShapeOf(doc: ModelDoc): Record<string, unknown> {
  const { placement, ...rest } = doc;
  const settings = (placement.settings ?? {}) as Record<string, unknown>;
  return {
    ...rest,
    substrate: placement.substrate,
    ...(placement.credential ? { credential: placement.credential } : {}),
    ...(Object.keys(settings).length > 0 ? { [placement.substrate]: settings } : {}),
  };
}
