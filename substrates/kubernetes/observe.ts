/**
 * Following a set of objects the way the API concepts page prescribes ("Efficient detection of
 * changes"): list, then watch from the list's resourceVersion; when the stream ends, watch again
 * from the last version seen (bookmarks keep it fresh while nothing matching changes); when the
 * server answers 410 Gone, that version has left its history: list again. Callers get the full
 * list after every (re)list (`LIST`, the truth to reconcile against) and the changes in between.
 */
import { isGone } from "./kube-api";
import type { KubeApi, ListOptions } from "./kube-api";
import type { KubeObject, KubeResource, WatchEvent } from "./resources";

export type Observed<T extends KubeObject> = { type: "LIST"; items: T[]; resourceVersion: string } | WatchEvent<T>;

export interface ObserveOptions extends Omit<ListOptions, "timeoutMs"> {
  /**
   * Each watch asks the server to end after this long.
   * @default 300
   */
  watchTimeoutSeconds?: number;
  /**
   * Wait after a failed list or watch (not a 410) before trying again, doubled up to 30 s.
   * @default 500
   */
  retryMs?: number;
}

/** Yields until `signal` aborts (then returns) or the caller stops iterating. */
export async function* observe<T extends KubeObject>(
  api: KubeApi,
  r: KubeResource<T>,
  o: ObserveOptions = {},
): AsyncGenerator<Observed<T>, void, undefined> {
  const { watchTimeoutSeconds = 300, retryMs = 500, ...listOptions } = o;
  let version: string | undefined;
  let delay = retryMs;
  while (!o.signal?.aborted) {
    try {
      if (version === undefined) {
        const list = await api.list(r, listOptions);
        version = list.resourceVersion;
        yield { type: "LIST", items: list.items, resourceVersion: list.resourceVersion };
      }
      for await (const e of api.watch(r, {
        ...listOptions,
        resourceVersion: version,
        bookmarks: true,
        timeoutSeconds: watchTimeoutSeconds,
      })) {
        version = e.object.metadata?.resourceVersion || version;
        delay = retryMs;
        if (e.type !== "BOOKMARK") yield e;
      }
    } catch (err) {
      if (o.signal?.aborted) return;
      if (isGone(err)) {
        version = undefined;
        continue;
      }
      // Anything else (the server unreachable, a stream cut): try again, backing off.
      await sleep(delay, o.signal);
      delay = Math.min(delay * 2, 30_000);
    }
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
