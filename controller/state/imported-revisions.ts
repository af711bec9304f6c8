/**
 * Databag versions across an import. Agents remember the version (store revision) of each relation
 * databag and of leader data they last ran a hook for, and run the hook again when the version
 * served differs. A target store has revisions of its own, so the import records the versions the
 * source served (`/models/<m>/imported-revisions`, written in the import's transaction): a bag
 * unchanged since the import is served at its source version, and a bag written later at a version
 * past every source version. Nothing re-runs, and every later change is still seen as one.
 */
export interface ImportedRevisionsDoc {
  /** The source's store revision at export (as it served it: an imported model exported again keeps its versions). */
  sourceRevision: number;
  /** Source versions by relation-data id (`<rel>/unit/<unit>`, `<rel>/app/<app>`) and `leader/<app>`. */
  versions: Record<string, number>;
}

/** What the cache keeps of the doc: its content and the revision the import wrote it at. */
export interface ImportOrigin extends ImportedRevisionsDoc {
  importRevision: number;
}

/** The version agents are served for a bag last written at `modRevision` (its id as in {@link ImportedRevisionsDoc.versions}). */
export function servedVersion(origin: ImportOrigin | undefined, id: string, modRevision: number): number {
  if (!origin || modRevision < origin.importRevision) return modRevision;
  if (modRevision === origin.importRevision) return origin.versions[id] ?? origin.sourceRevision;
  return modRevision - origin.importRevision + origin.sourceRevision;
}
