/** A model as `steward status` shows it: applications, units, machines and integrations, filtered as you type. */
import { useMemo, useState } from "preact/hooks";
import type { ModelStatus, StorageInfo, UnitStatusView, WorkloadStatus } from "../../../../api/browser";
import { workloadSeverity } from "../../../../api/browser";
import { href } from "../router";
import { Ago, Badge, Empty, Section } from "../ui";
import { StorageTable } from "./storage";

const FILTERS: (WorkloadStatus | "all" | "attention")[] = [
  "all",
  "attention",
  "active",
  "blocked",
  "waiting",
  "maintenance",
  "error",
];

/** Units in their application's order, by unit number. */
const byUnitNumber = (a: string, b: string): number => {
  const [aa, an] = [a.slice(0, a.lastIndexOf("/")), Number(a.slice(a.lastIndexOf("/") + 1))];
  const [ba, bn] = [b.slice(0, b.lastIndexOf("/")), Number(b.slice(b.lastIndexOf("/") + 1))];
  return aa === ba ? an - bn : aa.localeCompare(ba);
};

export function ModelView({
  name,
  status,
  storage,
}: {
  name: string;
  status: ModelStatus | undefined;
  /** Its storage instances, attached and kept (the live feed's `storage:<model>`). */
  storage: StorageInfo[] | undefined;
}) {
  const [search, setSearch] = useState("");
  const [filter, setFilter] = useState<(typeof FILTERS)[number]>("all");
  const units = useMemo(() => {
    if (!status) return [];
    const all: (UnitStatusView & { app: string })[] = [];
    for (const app of Object.values(status.applications))
      for (const u of Object.values(app.units)) all.push({ ...u, app: app.name });
    return all.sort((a, b) => byUnitNumber(a.name, b.name));
  }, [status]);
  if (!status) return <p class="loading">Loading model {name}…</p>;
  const q = search.trim().toLowerCase();
  const matches = (u: UnitStatusView): boolean => {
    if (
      filter === "attention" &&
      workloadSeverity[u.workload.current] < workloadSeverity.waiting &&
      u.agent.current !== "error" &&
      u.agent.current !== "lost"
    )
      return false;
    if (filter !== "all" && filter !== "attention" && u.workload.current !== filter) return false;
    if (!q) return true;
    return [u.name, u.machine, u.address ?? "", u.workload.message, u.workload.current, u.agent.current].some((f) =>
      f.toLowerCase().includes(q),
    );
  };
  const shown = units.filter(matches);
  const apps = Object.values(status.applications)
    .sort((a, b) => a.name.localeCompare(b.name))
    .filter(
      (a) =>
        !q || a.name.toLowerCase().includes(q) || Object.keys(a.units).some((n) => shown.some((u) => u.name === n)),
    );
  const machines = Object.values(status.machines).filter(
    (m) =>
      !q ||
      [m.id, m.address, m.hostname, m.substrate].some((f) => f.toLowerCase().includes(q)) ||
      m.units.some((n) => shown.some((u) => u.name === n)),
  );
  const counts = new Map<string, number>();
  for (const u of units) counts.set(u.workload.current, (counts.get(u.workload.current) ?? 0) + 1);
  return (
    <div class="stack">
      <div class="page-head">
        <h1>
          {status.model.name} <Badge status={status.model.status.current} />
        </h1>
        <div class="summary">
          {[...counts]
            .sort((a, b) => workloadSeverity[b[0] as WorkloadStatus] - workloadSeverity[a[0] as WorkloadStatus])
            .map(([s, n]) => (
              <span key={s} class="summary-item">
                <Badge status={s} /> {n}
              </span>
            ))}
          <span class="muted">
            {units.length} units · {Object.keys(status.machines).length} machines
          </span>
          <a href={href({ view: "secrets", model: name })} data-secrets-link>
            Secrets
          </a>
        </div>
      </div>
      <div class="toolbar">
        <input
          type="search"
          class="search"
          placeholder="Filter units, applications, machines…"
          value={search}
          onInput={(e) => setSearch((e.target as HTMLInputElement).value)}
          aria-label="Filter"
        />
        <div class="chips" role="group" aria-label="Workload status">
          {FILTERS.map((f) => (
            <button type="button" key={f} class={`chip${filter === f ? " chip-on" : ""}`} onClick={() => setFilter(f)}>
              {f === "attention" ? "needs attention" : f}
            </button>
          ))}
        </div>
      </div>
      <Section title="Applications">
        {apps.length === 0 ? (
          <Empty>No applications{q ? " match" : " yet: deploy one with steward deploy"}.</Empty>
        ) : (
          <table class="grid">
            <thead>
              <tr>
                <th>Application</th>
                <th>Status</th>
                <th>Scale</th>
                <th>Operator</th>
                <th>Message</th>
              </tr>
            </thead>
            <tbody>
              {apps.map((a) => (
                <tr key={a.name} data-app={a.name}>
                  <td>
                    <a href={href({ view: "application", model: name, app: a.name })}>{a.name}</a>
                  </td>
                  <td>
                    <Badge status={a.status.current} />
                  </td>
                  <td class="num">{a.scale}</td>
                  <td>
                    {a.operator.name} <span class="muted">{a.operator.version}</span>
                  </td>
                  <td class="message">{a.status.message}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Section>
      <Section title={`Units${shown.length !== units.length ? ` (${shown.length} of ${units.length})` : ""}`}>
        {shown.length === 0 ? (
          <Empty>No units{q || filter !== "all" ? " match" : ""}.</Empty>
        ) : (
          <table class="grid">
            <thead>
              <tr>
                <th>Unit</th>
                <th>Workload</th>
                <th>Agent</th>
                <th>Machine</th>
                <th>Address</th>
                <th>Ports</th>
                <th>Message</th>
                <th>Since</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((u) => (
                <tr
                  key={u.name}
                  data-unit={u.name}
                  data-workload={u.workload.current}
                  data-agent={u.agent.current}
                  data-message={u.workload.message}
                >
                  <td>
                    <a href={href({ view: "unit", model: name, unit: u.name })}>{u.name}</a>
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
                  <td>
                    <code>{u.address ?? ""}</code>
                  </td>
                  <td>{u.ports.join(" ")}</td>
                  <td class="message">{u.workload.message}</td>
                  <td>
                    <Ago at={u.workload.since} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Section>
      <div class="columns">
        <Section title="Machines">
          {machines.length === 0 ? (
            <Empty>No machines.</Empty>
          ) : (
            <table class="grid">
              <thead>
                <tr>
                  <th>Machine</th>
                  <th>Status</th>
                  <th>Address</th>
                  <th>Substrate</th>
                  <th>Units</th>
                </tr>
              </thead>
              <tbody>
                {machines.map((m) => (
                  <tr key={m.id}>
                    <td>{m.id}</td>
                    <td>
                      <Badge status={m.status.current} title={m.status.message} />
                    </td>
                    <td>
                      <code>{m.address}</code>
                    </td>
                    <td>
                      {m.substrate}
                      {m.instance ? <span class="muted"> {m.instance.id}</span> : null}
                    </td>
                    <td>{m.units.join(", ")}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </Section>
        <Section title="Integrations">
          {status.integrations.length === 0 ? (
            <Empty>No integrations.</Empty>
          ) : (
            <table class="grid">
              <thead>
                <tr>
                  <th>Provider</th>
                  <th>Requirer</th>
                  <th>Interface</th>
                  <th>Type</th>
                </tr>
              </thead>
              <tbody>
                {status.integrations.map((i) => (
                  <tr key={i.id}>
                    <td>{i.provider}</td>
                    <td>{i.requirer}</td>
                    <td>{i.interface}</td>
                    <td>
                      {i.type}
                      {i.life !== "alive" ? " (dying)" : ""}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </Section>
      </div>
      <Section title="Storage">
        <StorageTable model={name} storage={storage} none="No storage: no operator here declares any." />
      </Section>
    </div>
  );
}
