/** Small pieces every view uses: status badges, sections, tables, errors, times. */
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { ApiError } from "./http";

const TONE: Record<string, string> = {
  active: "good",
  idle: "good",
  started: "good",
  available: "good",
  completed: "good",
  yes: "good",
  blocked: "bad",
  error: "bad",
  lost: "bad",
  down: "bad",
  failed: "bad",
  destroying: "bad",
  waiting: "warn",
  maintenance: "warn",
  executing: "warn",
  allocating: "warn",
  pending: "warn",
  running: "warn",
  busy: "warn",
};

export function Badge({ status, title }: { status: string; title?: string }) {
  return (
    <span class={`badge tone-${TONE[status] ?? "quiet"}`} title={title}>
      {status}
    </span>
  );
}

export function Section({
  title,
  actions,
  children,
}: {
  title: string;
  actions?: ComponentChildren;
  children: ComponentChildren;
}) {
  return (
    <section class="card">
      <header class="card-head">
        <h2>{title}</h2>
        {actions && <div class="card-actions">{actions}</div>}
      </header>
      {children}
    </section>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const message = error instanceof ApiError ? error.message : error instanceof Error ? error.message : String(error);
  return (
    <p class="error-note" role="alert">
      {message}
    </p>
  );
}

/** "3 min ago", with the exact time on hover. */
export function Ago({ at }: { at: string }) {
  const t = Date.parse(at);
  if (Number.isNaN(t)) return <span>{at}</span>;
  const s = Math.max(0, Math.round((Date.now() - t) / 1000));
  const text =
    s < 60
      ? `${s} s ago`
      : s < 3600
        ? `${Math.round(s / 60)} min ago`
        : s < 86_400
          ? `${Math.round(s / 3600)} h ago`
          : new Date(t).toLocaleDateString();
  return (
    <time dateTime={at} title={new Date(t).toLocaleString()}>
      {text}
    </time>
  );
}

/** A key/value databag as a small table. */
export function Bag({ data, empty = "empty" }: { data: Record<string, string>; empty?: string }) {
  const keys = Object.keys(data).sort();
  if (keys.length === 0) return <span class="muted">{empty}</span>;
  return (
    <table class="bag">
      <tbody>
        {keys.map((k) => (
          <tr key={k}>
            <th>{k}</th>
            <td>
              <code>{data[k]}</code>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** A button that runs an async action, shows it is busy, and reports a refusal beside it. */
export function ActionButton({
  label,
  busyLabel,
  run,
  kind = "primary",
  confirm,
  disabled,
  name,
}: {
  label: string;
  busyLabel?: string;
  run: () => Promise<unknown>;
  kind?: "primary" | "danger" | "plain";
  confirm?: string;
  disabled?: boolean;
  name?: string;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const click = async () => {
    if (confirm && !window.confirm(confirm)) return;
    setBusy(true);
    setError(undefined);
    try {
      await run();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <span class="action">
      <button
        type="button"
        class={`btn btn-${kind}`}
        name={name}
        disabled={busy || disabled}
        onClick={() => void click()}
      >
        {busy ? (busyLabel ?? `${label}…`) : label}
      </button>
      <ErrorNote error={error} />
    </span>
  );
}
