/**
 * A unit: its status, what failed (the hook and its output), the data it exchanges on each
 * integration (its own, its application's, and each remote unit's databag), its recent log,
 * status history and actions.
 */
import { useEffect, useState } from "preact/hooks";
import type {
  ApplicationInfo,
  DebugLogRecord,
  OperationInfo,
  StatusLogEntry,
  StorageInfo,
  UnitDetails,
  WireError,
} from "../../../../api/browser";
import { routes } from "../../../../api/browser";
import { call, seg } from "../http";
import { href } from "../router";
import { ActionButton, Ago, Badge, Bag, Empty, ErrorNote, Section } from "../ui";
import { RunAction } from "./run-action";
import { StorageTable } from "./storage";

async function readLog(model: string, unit: string): Promise<DebugLogRecord[]> {
  const res = await fetch(`/v1/models/${seg(model)}/logs?include=${seg(unit)}&lines=200&tail=false`, {
    credentials: "same-origin",
  });
  if (!res.ok) return [];
  return (await res.text())
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as DebugLogRecord)
    .filter((r) => "message" in r);
}

export function UnitView({
  model,
  unit,
  details,
  storage,
  error,
  canWrite,
}: {
  model: string;
  unit: string;
  details: UnitDetails | undefined;
  /** The storage instances attached to it (the live feed's `storage:<model>`, narrowed to the unit). */
  storage: StorageInfo[] | undefined;
  error?: WireError;
  canWrite: boolean;
}) {
  const [history, setHistory] = useState<StatusLogEntry[]>([]);
  const [log, setLog] = useState<DebugLogRecord[]>([]);
  const [ops, setOps] = useState<OperationInfo[]>([]);
  const [info, setInfo] = useState<ApplicationInfo | undefined>(undefined);
  const [app, n] = unit.split("/") as [string, string];
  const changedAt = details ? `${details.workload.since}|${details.agent.since}|${details.agent.current}` : "";
  // History, log and actions are read again whenever the unit's status moves (the live feed says when).
  useEffect(() => {
    if (!details) return;
    void call(routes.statusLog, { model, app, n }).then(
      (r) => setHistory(r.entries),
      () => undefined,
    );
    void readLog(model, unit).then(setLog, () => undefined);
    void call(routes.operations, { model }, undefined, { limit: 50 }).then(
      (r) => setOps(r.operations.filter((o) => o.tasks.some((t) => t.unit === unit))),
      () => undefined,
    );
  }, [model, unit, changedAt]);
  useEffect(() => {
    void call(routes.getApplication, { model, app }).then(setInfo, () => undefined);
  }, [model, app]);
  if (error)
    return (
      <div class="stack">
        <h1>{unit}</h1>
        <ErrorNote error={new Error(error.message)} />
      </div>
    );
  if (!details) return <p class="loading">Loading {unit}…</p>;
  return (
    <div class="stack">
      <div class="page-head">
        <div class="crumbs">
          <a href={href({ view: "model", model })}>{model}</a> /{" "}
          <a href={href({ view: "application", model, app })}>{app}</a> /
        </div>
        <h1>
          {unit}
          {details.leader ? (
            <span class="leader" title="leader">
              ★
            </span>
          ) : null}{" "}
          <Badge status={details.workload.current} /> <Badge status={details.agent.current} />
        </h1>
        <p class="muted">
          machine {details.machine}
          {details.address ? ` · ${details.address}` : ""}
          {details.ports.length ? ` · ports ${details.ports.join(" ")}` : ""} ·{" "}
          {details.workload.message || "no message"}
        </p>
      </div>
      {details.failure ? (
        <section class="card card-bad" data-failure>
          <header class="card-head">
            <h2>
              Hook {details.failure.hook} failed <Ago at={details.failure.since} />
            </h2>
            {canWrite ? (
              <div class="card-actions">
                <ActionButton
                  label="Retry the hook"
                  name="resolve-retry"
                  run={() => call(routes.resolve, { model, app, n }, { retry: true })}
                />
                <ActionButton
                  label="Skip it"
                  kind="plain"
                  run={() => call(routes.resolve, { model, app, n }, { retry: false })}
                />
              </div>
            ) : null}
          </header>
          <pre class="output">{details.failure.output || "(the hook printed nothing)"}</pre>
        </section>
      ) : null}
      <Section title="Storage">
        <StorageTable model={model} storage={storage} none="No storage is attached to this unit." showUnit={false} />
      </Section>
      <Section title="Relation data">
        {details.integrations.length === 0 ? (
          <Empty>This unit is in no integration.</Empty>
        ) : (
          details.integrations.map((r) => (
            <div class="relation" key={r.id} data-relation={r.endpoint}>
              <h3>
                {r.endpoint}{" "}
                <span class="muted">
                  → {r.remoteApp} ({r.interface}, #{r.id})
                </span>
              </h3>
              <div class="bags">
                <div>
                  <h4>This unit</h4>
                  <Bag data={r.data} />
                </div>
                <div>
                  <h4>{app} (application)</h4>
                  <Bag data={r.appData} />
                </div>
                {r.remoteApp !== app ? (
                  <div>
                    <h4>{r.remoteApp} (application)</h4>
                    <Bag data={r.remoteAppData} />
                  </div>
                ) : null}
                {Object.entries(r.remoteUnits).map(([ru, bag]) => (
                  <div key={ru}>
                    <h4>{ru}</h4>
                    <Bag data={bag} />
                  </div>
                ))}
              </div>
            </div>
          ))
        )}
      </Section>
      <div class="columns">
        <Section title="Recent hooks and output">
          {log.length === 0 ? (
            <Empty>Nothing logged by this unit on this replica yet.</Empty>
          ) : (
            <pre class="output log">
              {log
                .slice(-80)
                .map((r) => `${r.ts.slice(11, 19)} ${r.level.padEnd(7)} ${r.hook ? `[${r.hook}] ` : ""}${r.message}`)
                .join("\n")}
            </pre>
          )}
        </Section>
        <Section title="Status history">
          {history.length === 0 ? (
            <Empty>No status changes recorded.</Empty>
          ) : (
            <table class="grid compact">
              <thead>
                <tr>
                  <th>When</th>
                  <th>Type</th>
                  <th>Status</th>
                  <th>Message</th>
                </tr>
              </thead>
              <tbody>
                {[...history].reverse().map((h, i) => (
                  <tr key={i}>
                    <td>
                      <Ago at={h.since} />
                    </td>
                    <td>{h.type}</td>
                    <td>
                      <Badge status={h.status} />
                    </td>
                    <td class="message">{h.message}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </Section>
      </div>
      <Section title="Actions">
        {info && canWrite && Object.keys(info.actions).length ? (
          <RunAction model={model} target={unit} actions={info.actions} />
        ) : null}
        {ops.length === 0 ? (
          <Empty>No actions run on this unit recently.</Empty>
        ) : (
          <table class="grid compact">
            <thead>
              <tr>
                <th>Operation</th>
                <th>Action</th>
                <th>By</th>
                <th>Status</th>
                <th>When</th>
              </tr>
            </thead>
            <tbody>
              {ops.map((o) => (
                <tr key={o.id}>
                  <td>{o.id}</td>
                  <td>{o.action}</td>
                  <td>{o.by}</td>
                  <td>
                    <Badge status={o.status} />
                  </td>
                  <td>
                    <Ago at={o.enqueued} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Section>
    </div>
  );
}
