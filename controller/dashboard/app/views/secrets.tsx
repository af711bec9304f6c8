/**
 * A model's secrets (issue 33): what `steward secrets` tells, never a value. Each row says who owns
 * the secret, its latest revision, rotation and expiry, who it is granted to and which unit tracks
 * which revision (Juju #21499). A value shows only on an explicit "Reveal", which asks the controller
 * (`showSecret` with `reveal`): it answers only the secret's maker or a superuser, and anyone else
 * sees its refusal. A revealed value lives in this row's state until "Hide" or leaving the page.
 * The list follows the live feed's `secrets:<model>` topic (metadata only: the feed never has a value).
 */
import { useState } from "preact/hooks";
import type { RevealedSecret, SecretInfo, WireError } from "../../../../api/browser";
import { routes } from "../../../../api/browser";
import { call } from "../http";
import { href } from "../router";
import { ActionButton, Ago, Bag, Empty, Section } from "../ui";

export function SecretsView({
  model,
  secrets: live,
  error,
}: {
  model: string;
  /** The live feed's `secrets:<model>`: the list, whole, whenever it changes. */
  secrets: SecretInfo[] | undefined;
  error: WireError | undefined;
}) {
  const secrets = live
    ? [...live].sort((a, b) => (a.name ?? a.label ?? a.uri).localeCompare(b.name ?? b.label ?? b.uri))
    : undefined;
  return (
    <div class="stack">
      <div class="page-head">
        <div class="crumbs">
          <a href={href({ view: "model", model })}>{model}</a> /
        </div>
        <h1>Secrets</h1>
        <p class="muted">
          Metadata only: owners, revisions, grants and who reads which revision. A value shows on Reveal, for the user
          who made the secret or a superuser.
        </p>
      </div>
      {error ? <p class="error-note">{error.message}</p> : null}
      <Section title={secrets ? `Secrets (${secrets.length})` : "Secrets"}>
        {!secrets ? (
          error ? null : (
            <p class="loading">Loading secrets…</p>
          )
        ) : secrets.length === 0 ? (
          <Empty>No secrets in this model: operators add them with secret-add, users with steward add-secret.</Empty>
        ) : (
          <table class="grid" data-secrets-table>
            <thead>
              <tr>
                <th>Secret</th>
                <th>Owner</th>
                <th>Revision</th>
                <th>Rotation</th>
                <th>Granted to</th>
                <th>Tracked by</th>
                <th>Updated</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {secrets.map((s) => (
                <SecretRow key={s.uri} model={model} secret={s} />
              ))}
            </tbody>
          </table>
        )}
      </Section>
    </div>
  );
}

function SecretRow({ model, secret: s }: { model: string; secret: SecretInfo }) {
  const [revealed, setRevealed] = useState<RevealedSecret["content"] | undefined>(undefined);
  const reveal = async (): Promise<void> => {
    const r = await call(routes.showSecret, { model, secret: s.uri }, undefined, { reveal: "true" });
    if ("content" in r) setRevealed(r.content);
  };
  const tracked = s.revisions.filter((r) => r.trackedBy.length > 0);
  return (
    <>
      <tr data-secret={s.uri} data-secret-name={s.name ?? ""} data-secret-owner={s.owner}>
        <td>
          <strong>{s.name ?? s.label ?? <span class="muted">(no label)</span>}</strong>
          <div>
            <code>{s.uri}</code>
          </div>
          {s.description ? <div class="muted">{s.description}</div> : null}
        </td>
        <td>{s.owner}</td>
        <td class="num" data-secret-revision={s.latestRevision}>
          {s.latestRevision}
          {s.expireAt ? <div class="muted">expires {new Date(s.expireAt).toLocaleString()}</div> : null}
        </td>
        <td>
          {s.rotate}
          {s.nextRotateAt ? <div class="muted">next {new Date(s.nextRotateAt).toLocaleString()}</div> : null}
        </td>
        <td data-secret-grants>
          {s.grants.length === 0 ? (
            <span class="muted">nobody</span>
          ) : (
            s.grants.map((g) => (
              <div key={`${g.app}/${g.unit ?? ""}/${g.relationId ?? ""}`}>
                {g.unit ?? g.app}
                {g.relationId !== undefined ? <span class="muted"> (integration {g.relationId})</span> : null}
              </div>
            ))
          )}
        </td>
        <td data-secret-tracking>
          {tracked.length === 0 ? (
            <span class="muted">no unit</span>
          ) : (
            tracked.map((r) => (
              <div key={r.revision} data-tracks-revision={r.revision}>
                rev {r.revision}: {r.trackedBy.join(", ")}
              </div>
            ))
          )}
        </td>
        <td>
          <Ago at={s.updatedAt} />
        </td>
        <td>
          {revealed ? (
            <button type="button" class="btn btn-plain" name="hide" onClick={() => setRevealed(undefined)}>
              Hide
            </button>
          ) : (
            <ActionButton label="Reveal" busyLabel="Revealing…" kind="plain" name="reveal" run={reveal} />
          )}
        </td>
      </tr>
      {revealed ? (
        <tr data-secret-values={s.uri}>
          <td colSpan={8}>
            <span class="muted">Revision {revealed.revision}:</span> <Bag data={revealed.values} />
          </td>
        </tr>
      ) : null}
    </>
  );
}
