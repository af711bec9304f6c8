/**
 * Several controllers, switched in the page: the addresses of the controllers this browser has used
 * are remembered (addresses only, never credentials); picking one opens its own dashboard, where
 * one logs in with that controller's user.
 */
import { useState } from "preact/hooks";

interface Known {
  name: string;
  url: string;
}
const KEY = "steward.controllers";

function load(): Known[] {
  try {
    const v = JSON.parse(localStorage.getItem(KEY) ?? "[]") as unknown;
    return Array.isArray(v)
      ? v.filter(
          (k): k is Known => typeof k?.name === "string" && typeof k?.url === "string" && /^https:\/\//.test(k.url),
        )
      : [];
  } catch {
    return [];
  }
}

export function ControllerSwitcher({ current }: { current: string }) {
  const [known, setKnown] = useState<Known[]>(() => {
    const list = load().filter((k) => k.url !== location.origin);
    const all = [{ name: current, url: location.origin }, ...list];
    localStorage.setItem(KEY, JSON.stringify(all));
    return all;
  });
  const [adding, setAdding] = useState(false);
  const [url, setUrl] = useState("");
  const add = (): void => {
    let u: URL;
    try {
      u = new URL(/^https:\/\//.test(url) ? url : `https://${url}`);
    } catch {
      return;
    }
    const next = [...known.filter((k) => k.url !== u.origin), { name: u.host, url: u.origin }];
    localStorage.setItem(KEY, JSON.stringify(next));
    setKnown(next);
    setAdding(false);
    setUrl("");
  };
  return (
    <span class="switcher">
      <select
        aria-label="Controller"
        value={location.origin}
        onChange={(e) => {
          const v = (e.target as HTMLSelectElement).value;
          if (v === "+") {
            setAdding(true);
            return;
          }
          if (v !== location.origin) location.assign(`${v}/`);
        }}
      >
        {known.map((k) => (
          <option key={k.url} value={k.url}>
            {k.name}
            {k.url === location.origin ? "" : ` (${new URL(k.url).host})`}
          </option>
        ))}
        <option value="+">Add a controller…</option>
      </select>
      {adding ? (
        <span class="inline-form">
          <input
            placeholder="host:port of a replica"
            value={url}
            onInput={(e) => setUrl((e.target as HTMLInputElement).value)}
            aria-label="Controller address"
          />
          <button type="button" class="btn btn-primary" onClick={add}>
            Add
          </button>
          <button type="button" class="btn btn-plain" onClick={() => setAdding(false)}>
            Cancel
          </button>
        </span>
      ) : null}
    </span>
  );
}
