/**
 * The last step of an upgrade across a minor version: the controller leader migrates the store to the
 * new release's format once every replica runs it. The CLI waits for that, saying how it goes, so an
 * upgrade that returns is one whose store is in the new format (the previous release refuses it).
 */
import type { ControllerClient, StoreFormatInfo } from "../../api/core";
import { STORE_FORMAT, StewardError } from "../../api/core";

export async function waitForStoreMigration(
  client: ControllerClient,
  timeoutMs: number,
  progress: (line: string) => void,
): Promise<StoreFormatInfo> {
  const deadline = Date.now() + timeoutMs;
  let why = "the controller has not answered yet";
  let said = "";
  while (Date.now() < deadline) {
    const store = await client.controllerInfo().then(
      (info) => info.store,
      (err: Error) => {
        why = `the controller did not answer: ${err.message}`;
        return undefined;
      },
    );
    if (store) {
      const m = store.migration;
      if (store.format >= STORE_FORMAT && (!m || m.doneAt)) return store;
      why = m?.waitsFor
        ? `it waits: ${m.waitsFor}`
        : m?.startedAt
          ? `under way since ${m.startedAt}, ${m.rewritten} documents rewritten`
          : `the store is at format ${store.format}; the leader has not started its migration`;
    }
    if (why !== said) progress(`  store format -> ${STORE_FORMAT}: ${(said = why)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new StewardError(
    "deadline-exceeded",
    `every replica runs the new release, but the store's migration to format ${STORE_FORMAT} did not finish within ${Math.round(timeoutMs / 1000)} s (${why}); the leader goes on with it: steward show-controller shows it, and this command run again waits for it`,
  );
}
