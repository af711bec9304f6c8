/** Runs one of the operator's actions on a unit or an application, and shows each task's outcome. */
import { useState } from "preact/hooks";
import type { ActionSpec, ActionValue, TaskInfo } from "../../../../api/browser";
import { routes } from "../../../../api/browser";
import { call } from "../http";
import { ActionButton, Badge } from "../ui";

const DONE = new Set(["completed", "failed", "aborted"]);

export function RunAction({
  model,
  target,
  actions,
}: {
  model: string;
  target: string;
  actions: Record<string, ActionSpec>;
}) {
  const names = Object.keys(actions).sort();
  const [action, setAction] = useState(names[0] ?? "");
  const [params, setParams] = useState<Record<string, string | boolean>>({});
  const [tasks, setTasks] = useState<TaskInfo[]>([]);
  const spec = actions[action];
  const run = async (): Promise<void> => {
    const typed: Record<string, ActionValue> = {};
    for (const [k, v] of Object.entries(params)) {
      const t = spec?.params[k]?.type;
      if (v === "") continue;
      typed[k] =
        typeof v === "boolean"
          ? v
          : (t === "integer" || t === "number") && v.trim() !== "" && Number.isFinite(Number(v))
            ? Number(v)
            : v;
    }
    const res = await call(routes.runAction, { model }, { targets: [target], action, params: typed });
    // A task's outcome is read until it is done (a second apart): results are one-off answers, not live state.
    let pending = res.tasks.map((t) => t.id);
    const seen = new Map<number, TaskInfo>();
    for (let round = 0; pending.length && round < 600; round++) {
      for (const id of pending) seen.set(id, await call(routes.task, { model, id: String(id) }));
      setTasks([...seen.values()]);
      pending = pending.filter((id) => !DONE.has(seen.get(id)!.status));
      if (pending.length) await new Promise((r) => setTimeout(r, 1000));
    }
  };
  return (
    <div class="run-action">
      <div class="inline-form">
        <select
          value={action}
          aria-label="Action"
          onChange={(e) => {
            setAction((e.target as HTMLSelectElement).value);
            setParams({});
          }}
        >
          {names.map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
        <ActionButton label={`Run on ${target}`} name="run-action" run={run} />
      </div>
      {spec?.description ? <p class="muted">{spec.description}</p> : null}
      {spec && Object.keys(spec.params).length ? (
        <div class="params">
          {Object.entries(spec.params).map(([k, p]) => (
            <label key={k} class="field">
              <span class="field-name">
                {k}
                {spec.required.includes(k) ? " *" : ""} <span class="muted">{p.type}</span>
              </span>
              {p.type === "boolean" ? (
                <input
                  type="checkbox"
                  checked={params[k] === true}
                  onChange={(e) => setParams({ ...params, [k]: (e.target as HTMLInputElement).checked })}
                />
              ) : (
                <input
                  type="text"
                  value={String(params[k] ?? "")}
                  placeholder={p.default !== undefined ? String(p.default) : ""}
                  onInput={(e) => setParams({ ...params, [k]: (e.target as HTMLInputElement).value })}
                />
              )}
              {p.description ? <span class="field-help">{p.description}</span> : null}
            </label>
          ))}
        </div>
      ) : null}
      {tasks.map((t) => (
        <div class="task" key={t.id} data-task={t.id}>
          <div>
            <strong>Task {t.id}</strong> on {t.unit}: <Badge status={t.status} /> {t.message}
          </div>
          {Object.keys(t.results).length ? <pre class="output">{JSON.stringify(t.results, null, 2)}</pre> : null}
          {t.output ? <pre class="output">{t.output}</pre> : null}
        </div>
      ))}
    </div>
  );
}
