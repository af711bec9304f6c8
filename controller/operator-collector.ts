/**
 * Deletes operator content nobody needs: operators no application in any model uses, and the
 * chunks of uploads that never finished, each once a grace period has passed since it was last
 * uploaded or used (so an upload followed by a deploy is never collected in between). Runs on the
 * leader with fenced writes; a deploy racing a deletion either sees the operator gone or makes the
 * deletion fail (it touches the operator's document, see StateOps.useOperator).
 */
import type { Logger } from "../api";
import type { StateCache, StateOps } from "./state";

export interface OperatorCollectorOptions {
  /** Milliseconds an unused operator (or an unfinished upload) is kept. */
  graceMs: number;
  /** @default Date.now */
  now?: () => number;
}

export class OperatorCollector {
  private readonly now: () => number;

  constructor(
    private readonly cache: StateCache,
    private readonly ops: StateOps,
    private readonly log: Logger,
    private readonly opts: OperatorCollectorOptions,
  ) {
    this.now = opts.now ?? Date.now;
  }

  /** One pass; the cache must have caught up with the store so no recent deploy is missed. */
  async collect(): Promise<void> {
    await this.cache.catchUp();
    const used = new Set<string>();
    for (const idx of this.cache.models.values()) for (const app of idx.apps.values()) used.add(app.operator.hash);
    for (const cached of [...this.cache.operators.values()]) {
      if (used.has(cached.hash) || !this.expired(cached.lastUsedAt ?? cached.uploadedAt)) continue;
      // Decide on the stored document: a deploy since the cache caught up has touched it.
      const current = await this.ops.operators.find(cached.hash);
      if (!current || !this.expired(current.doc.lastUsedAt ?? current.doc.uploadedAt)) continue;
      if (await this.ops.operators.delete(cached.hash, current.rev)) {
        const { hash, name, version, bytes } = current.doc;
        this.log.info("deleted an operator no application uses", { operator: hash, name, version, bytes });
      }
    }
    for (const upload of await this.ops.operators.uploads()) {
      if (!this.expired(upload.doc.startedAt)) continue;
      if (await this.ops.operators.deleteAbandonedUpload(upload.doc.hash, upload.rev))
        this.log.info("deleted the chunks of an unfinished operator upload", { operator: upload.doc.hash });
    }
  }

  private expired(since: string): boolean {
    return this.now() - Date.parse(since) > this.opts.graceMs;
  }
}
