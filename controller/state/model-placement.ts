/**
 * A model document in its current shape, whatever shape it was written in. Models written before
 * placements (and exports of them) held `substrate` (absent: local), `credential` and the kind's
 * settings in a bag named after the kind (`aws: {…}`); now they hold one `placement`. Stores,
 * backups and exports of the previous build are read through {@link modelDocOf}, so nothing needs
 * rewriting first; the next write of a model stores the new shape.
 */
import type { ModelPlacement, ModelSubstrate } from "../../api";
import { DEFAULT_SUBSTRATE, MODEL_SUBSTRATES } from "../../api";
import type { ModelDoc } from "./documents";

/** `raw` (a parsed model document of any shape this controller reads) in the current shape. */
export function modelDocOf(raw: unknown): ModelDoc {
  const doc = raw as Record<string, unknown>;
  const rest = Object.fromEntries(
    Object.entries(doc).filter(
      ([k]) => k !== "substrate" && k !== "credential" && !(MODEL_SUBSTRATES as readonly string[]).includes(k),
    ),
  );
  // Stored in both shapes ({@link storedModelDocOf}): the placement is the truth, the old fields go.
  if (doc.placement !== undefined) return rest as unknown as ModelDoc;
  const substrate = (doc.substrate ?? DEFAULT_SUBSTRATE) as ModelSubstrate;
  const placement = {
    substrate,
    ...(typeof doc.credential === "string" ? { credential: doc.credential } : {}),
    settings: doc[substrate] ?? {},
  } as ModelPlacement;
  return { ...rest, placement } as unknown as ModelDoc;
}

/**
 * What the store holds for `doc`: the current shape and, beside it, the previous build's fields
 * ({@link previousModelShapeOf}). Replicas of the previous build still run during a rolling upgrade
 * (followers first, the leader last): one reading a placement-only model would take an EC2 model for
 * a local one and its provisioner would reap the model's instances. Drop the old fields once no
 * supported build reads them.
 */
export function storedModelDocOf(doc: ModelDoc): Record<string, unknown> {
  return { ...previousModelShapeOf(doc), placement: doc.placement };
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
