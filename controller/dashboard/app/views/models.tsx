/** Every model the user can see, with what is in it. */
import type { ModelSummary } from "../../../../api/browser";
import { href } from "../router";
import { Badge, Empty, Section } from "../ui";

export function ModelsView({ models }: { models: ModelSummary[] | undefined }) {
  if (!models) return <p class="loading">Loading models…</p>;
  return (
    <Section title="Models">
      {models.length === 0 ? (
        <Empty>
          No models you can see yet. A superuser adds one with <code>steward add-model NAME</code>.
        </Empty>
      ) : (
        <div class="tiles">
          {models.map((m) => (
            <a class="tile" href={href({ view: "model", model: m.name })} key={m.uuid} data-model={m.name}>
              <div class="tile-head">
                <strong>{m.name}</strong>
                {m.life !== "alive" ? <Badge status="destroying" /> : null}
              </div>
              <div class="tile-counts">
                <span>
                  <b>{m.applications}</b> applications
                </span>
                <span>
                  <b>{m.units}</b> units
                </span>
                <span>
                  <b>{m.machines}</b> machines
                </span>
              </div>
              <div class="tile-foot muted" title={m.where}>
                {m.substrate}
                {m.credential ? ` · ${m.credential}` : ""} · owner {m.owner} · you: {m.access}
              </div>
            </a>
          ))}
        </div>
      )}
    </Section>
  );
}
