/**
 * Storage instances as a table (issue 32): the model view lists them all, attached and kept
 * (detached, waiting for `add-unit --attach-storage`), and the unit view those attached to the unit.
 * The list comes whole over the live feed's `storage:<model>` topic, so attaching and detaching show at once.
 */
import type { StorageInfo } from "../../../../api/browser";
import { formatSizeMiB } from "../../../../api/browser";
import { href } from "../router";
import { Badge, Empty } from "../ui";

export function StorageTable({
  model,
  storage,
  none,
  showUnit = true,
}: {
  model: string;
  storage: StorageInfo[] | undefined;
  /** What to say when there is none. */
  none: string;
  showUnit?: boolean;
}) {
  if (!storage) return <p class="loading">Loading storage…</p>;
  if (storage.length === 0) return <Empty>{none}</Empty>;
  return (
    <table class="grid" data-storage-table>
      <thead>
        <tr>
          <th>Storage</th>
          {showUnit ? <th>Unit</th> : null}
          <th>Pool</th>
          <th>Size</th>
          <th>Status</th>
          <th>Location</th>
        </tr>
      </thead>
      <tbody>
        {storage.map((s) => (
          <tr key={s.id} data-storage={s.id} data-storage-status={s.status} data-storage-unit={s.unit ?? ""}>
            <td>{s.id}</td>
            {showUnit ? (
              <td>
                {s.unit ? (
                  <a href={href({ view: "unit", model, unit: s.unit })}>{s.unit}</a>
                ) : (
                  <span class="muted">kept ({s.app})</span>
                )}
              </td>
            ) : null}
            <td>{s.pool}</td>
            <td>{formatSizeMiB(s.size)}</td>
            <td>
              <Badge status={s.status} />
            </td>
            <td class="message">
              {s.location || <span class="muted">{s.status === "attached" ? "being attached…" : "on no machine"}</span>}
              {s.message ? <div class="field-problem">{s.message}</div> : null}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
