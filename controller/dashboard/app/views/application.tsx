/**
 * An application: its units, its config (edited against the operator's schema, checked here and
 * again by the controller), scale, integrations and removal. Read-only users see no write controls.
 */
import { useEffect, useState } from "preact/hooks";
import type { ApplicationInfo, ConfigOption, ModelStatus } from "../../../../api/browser";
import { checkConfigValue, coerceConfigText, routes } from "../../../../api/browser";
import { call } from "../http";
import { href } from "../router";
import { ActionButton, Badge, Empty, ErrorNote, Section } from "../ui";
import { RunAction } from "./run-action";

type Value = string | number | boolean;

export function ApplicationView({
  model,
  app,
  status,
  canWrite,
}: {
  model: string;
  app: string;
  status: ModelStatus | undefined;
  canWrite: boolean;
}) {
  const [info, setInfo] = useState<ApplicationInfo | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const live = status?.applications[app];
  const operatorHash = live?.operator.hash;
  // The schema and actions come with the operator: read again only when it changes.
  useEffect(() => {
    call(routes.getApplication, { model, app }).then(setInfo, setError);
  }, [model, app, operatorHash]);
  if (!status) return <p class="loading">Loading…</p>;
  if (!live)
    return (
      <div class="stack">
        <h1>{app}</h1>
        <Empty>
          There is no application {app} in model {model} (it may have been removed).
        </Empty>
        <ErrorNote error={error} />
      </div>
    );
  const units = Object.values(live.units).sort((a, b) => Number(a.name.split("/")[1]) - Number(b.name.split("/")[1]));
  const others = Object.keys(status.applications)
    .filter((n) => n !== app)
    .sort();
  const integrations = status.integrations.filter((i) => [i.provider, i.requirer].some((e) => e.split(":")[0] === app));
  return (
    <div class="stack">
      <div class="page-head">
        <div class="crumbs">
          <a href={href({ view: "model", model })}>{model}</a> /
        </div>
        <h1>
          {app} <Badge status={live.status.current} />
        </h1>
        <p class="muted">
          {live.operator.name} {live.operator.version} · scale {live.scale}
          {live.status.message ? ` · ${live.status.message}` : ""}
        </p>
      </div>
      <ErrorNote error={error} />
      <Section title="Units" actions={canWrite ? <AddUnits model={model} app={app} /> : null}>
        <table class="grid">
          <thead>
            <tr>
              <th>Unit</th>
              <th>Workload</th>
              <th>Agent</th>
              <th>Machine</th>
              <th>Message</th>
              {canWrite ? <th /> : null}
            </tr>
          </thead>
          <tbody>
            {units.map((u) => (
              <tr key={u.name} data-unit={u.name}>
                <td>
                  <a href={href({ view: "unit", model, unit: u.name })}>{u.name}</a>
                  {u.leader ? (
                    <span class="leader" title="leader">
                      ★
                    </span>
                  ) : null}
                </td>
                <td>
                  <Badge status={u.workload.current} />
                </td>
                <td>
                  <Badge status={u.agent.current} />
                </td>
                <td>{u.machine}</td>
                <td class="message">{u.workload.message}</td>
                {canWrite ? (
                  <td class="row-actions">
                    <ActionButton
                      label="Remove"
                      kind="plain"
                      confirm={`Remove unit ${u.name}? Its teardown hooks run first.`}
                      run={() =>
                        call(routes.removeUnit, { model, app: u.name.split("/")[0]!, n: u.name.split("/")[1]! })
                      }
                    />
                  </td>
                ) : null}
              </tr>
            ))}
          </tbody>
        </table>
      </Section>
      {info ? (
        <ConfigEditor
          key={operatorHash}
          model={model}
          app={app}
          schema={info.configSchema}
          values={live.config}
          canWrite={canWrite}
        />
      ) : null}
      <Section
        title="Integrations"
        actions={canWrite && others.length ? <Integrate model={model} app={app} others={others} /> : null}
      >
        {integrations.length === 0 ? (
          <Empty>Not integrated with anything.</Empty>
        ) : (
          <table class="grid">
            <thead>
              <tr>
                <th>Provider</th>
                <th>Requirer</th>
                <th>Interface</th>
                {canWrite ? <th /> : null}
              </tr>
            </thead>
            <tbody>
              {integrations.map((i) => (
                <tr key={i.id}>
                  <td>{i.provider}</td>
                  <td>{i.requirer}</td>
                  <td>{i.interface}</td>
                  {canWrite && i.type === "regular" ? (
                    <td class="row-actions">
                      <ActionButton
                        label="Remove"
                        kind="plain"
                        confirm={`Remove the integration ${i.provider} — ${i.requirer}?`}
                        run={() => call(routes.removeIntegration, { model }, { endpoints: [i.provider, i.requirer] })}
                      />
                    </td>
                  ) : canWrite ? (
                    <td />
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Section>
      {info && canWrite && Object.keys(info.actions).length > 0 ? (
        <Section title="Run an action">
          <RunAction model={model} target={app} actions={info.actions} />
        </Section>
      ) : null}
      {canWrite ? (
        <Section title="Remove">
          <p class="muted">
            Removing {app} runs every unit's teardown hooks, then removes its machines that hold nothing else.
          </p>
          <ActionButton
            label={`Remove ${app}`}
            kind="danger"
            name="remove-application"
            confirm={`Remove application ${app} and its ${units.length} units?`}
            run={async () => {
              await call(routes.removeApplication, { model, app });
              location.hash = href({ view: "model", model });
            }}
          />
        </Section>
      ) : null}
    </div>
  );
}

function AddUnits({ model, app }: { model: string; app: string }) {
  const [count, setCount] = useState(1);
  return (
    <span class="inline-form">
      <input
        type="number"
        min={1}
        max={100}
        value={count}
        aria-label="Units to add"
        class="narrow"
        onInput={(e) => setCount(Number((e.target as HTMLInputElement).value))}
      />
      <ActionButton label="Add units" name="add-units" run={() => call(routes.addUnits, { model, app }, { count })} />
    </span>
  );
}

function Integrate({ model, app, others }: { model: string; app: string; others: string[] }) {
  const [other, setOther] = useState(others[0] ?? "");
  return (
    <span class="inline-form">
      <input
        list="integrate-targets"
        value={other}
        aria-label="Integrate with"
        placeholder="app or app:endpoint"
        onInput={(e) => setOther((e.target as HTMLInputElement).value)}
      />
      <datalist id="integrate-targets">
        {others.map((o) => (
          <option key={o} value={o} />
        ))}
      </datalist>
      <ActionButton
        label="Integrate"
        run={() => call(routes.integrate, { model }, { endpoints: [app, other.trim()] })}
      />
    </span>
  );
}

/** Config fields typed by the operator's schema; only what was changed is sent. */
function ConfigEditor({
  model,
  app,
  schema,
  values,
  canWrite,
}: {
  model: string;
  app: string;
  schema: Record<string, ConfigOption>;
  values: Record<string, Value>;
  canWrite: boolean;
}) {
  const [edits, setEdits] = useState<Record<string, string | boolean>>({});
  const [saved, setSaved] = useState(false);
  const keys = Object.keys(schema).sort();
  if (keys.length === 0)
    return (
      <Section title="Config">
        <Empty>This operator has no config options.</Empty>
      </Section>
    );
  const shown = (k: string): string | boolean => {
    if (k in edits) return edits[k]!;
    const v = values[k] ?? schema[k]!.default;
    return schema[k]!.type === "boolean" ? v === true : v === undefined ? "" : String(v);
  };
  const problems: Record<string, string> = {};
  const changes: Record<string, Value> = {};
  for (const [k, raw] of Object.entries(edits)) {
    const opt = schema[k]!;
    const value = typeof raw === "boolean" ? raw : coerceConfigText(opt.type, raw);
    const problem = checkConfigValue(opt.type, value);
    if (problem) problems[k] = `${k} ${problem}`;
    else if (value !== (values[k] ?? opt.default)) changes[k] = value;
  }
  const dirty = Object.keys(changes).length > 0;
  const save = async (): Promise<void> => {
    await call(routes.updateApplication, { model, app }, { config: changes });
    setEdits({});
    setSaved(true);
  };
  return (
    <Section title="Config">
      <form class="config" onSubmit={(e) => e.preventDefault()}>
        {keys.map((k) => {
          const opt = schema[k]!;
          const v = shown(k);
          const edited = k in edits;
          return (
            <label key={k} class={`field${problems[k] ? " field-bad" : ""}${edited ? " field-edited" : ""}`}>
              <span class="field-name">
                {k}{" "}
                <span class="muted">
                  {opt.type}
                  {opt.default !== undefined ? `, default ${String(opt.default)}` : ""}
                </span>
              </span>
              {opt.type === "boolean" ? (
                <input
                  type="checkbox"
                  name={k}
                  checked={v === true}
                  disabled={!canWrite}
                  onChange={(e) => {
                    setSaved(false);
                    setEdits({ ...edits, [k]: (e.target as HTMLInputElement).checked });
                  }}
                />
              ) : (
                <input
                  type={opt.type === "string" || opt.type === "secret" ? "text" : "number"}
                  step={opt.type === "float" ? "any" : "1"}
                  placeholder={opt.type === "secret" ? "secret:… (steward secrets lists them)" : undefined}
                  name={k}
                  value={String(v)}
                  readOnly={!canWrite}
                  onInput={(e) => {
                    setSaved(false);
                    setEdits({ ...edits, [k]: (e.target as HTMLInputElement).value });
                  }}
                />
              )}
              {opt.description ? <span class="field-help">{opt.description}</span> : null}
              {problems[k] ? <span class="field-problem">{problems[k]}</span> : null}
            </label>
          );
        })}
        {canWrite ? (
          <div class="form-actions">
            <ActionButton
              label="Save config"
              name="save-config"
              disabled={!dirty || Object.keys(problems).length > 0}
              run={save}
            />
            {Object.keys(edits).length ? (
              <button type="button" class="btn btn-plain" onClick={() => setEdits({})}>
                Discard
              </button>
            ) : null}
            {saved && !Object.keys(edits).length ? (
              <span class="muted">Saved: the units run config-changed.</span>
            ) : null}
          </div>
        ) : (
          <p class="muted">You have read access to this model: config is shown, not editable.</p>
        )}
      </form>
    </Section>
  );
}
