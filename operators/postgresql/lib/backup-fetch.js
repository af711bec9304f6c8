// A backup is on the storage of the unit that took it; `restore` runs on the leader. When the leader
// does not have it, it fetches it from the peer that does, with PostgreSQL's own means over the
// connection the units already use for each other (the operator superuser, SCRAM, TLS when the tls
// option is set): pg_ls_dir and pg_stat_file list the backup's directory on the peer's server and
// pg_read_binary_file reads its files, in batches. Nothing new listens, no SSH key or file server is
// shared between units, and it works as well from a standby (those functions only read). Why not a
// peer relation announcement: relation data is small and not for files; the units would still need
// a channel for the bytes, and the server they run is one already. Every read and write of the
// storage goes through the unit's Pg (lib/pg.js; lib/workload.js on a pod, where psql and the files
// are the workload container's).
"use strict";
const { join } = require("node:path");
const { lit, FETCH_BATCH_BYTES: BATCH } = require("./pg");
const { peers } = require("./peers");

/** At most this many bytes of a file per row, and BATCH per query (hex doubles them on the wire). */
const SEGMENT = 8 << 20;

const conninfoOf = (peer) =>
  `host=${peer.host} port=${peer.port} user=operator dbname=postgres connect_timeout=5 application_name=steward-backup-fetch`;

/** The peer holding backup `id` and the directory it is in there, or undefined. */
function findBackup(pg, id, log) {
  for (const peer of peers().filter((x) => x.host && x.port)) {
    try {
      const dir = pg.peerQuery(
        conninfoOf(peer),
        `SELECT d FROM (SELECT regexp_replace(current_setting('data_directory'), '/[^/]+$', '') || '/backups/' || ${lit(id)} AS d) x ` +
          `WHERE (pg_stat_file(d || '/PG_VERSION', true)).size IS NOT NULL`,
      )[0]?.[0];
      if (dir) return { peer, dir };
    } catch (err) {
      log(`${peer.unit} did not answer (${String(err.message).trim().split("\n").pop()})`);
    }
  }
  return undefined;
}

/** Every file and directory under `dir` on the peer: [{path, isdir, size}], paths relative. */
function listing(pg, peer, dir) {
  const d = lit(dir);
  const rows = pg.peerQuery(
    conninfoOf(peer),
    `WITH RECURSIVE t(path, isdir, size) AS (
       SELECT ''::text, true, 0::bigint
       UNION ALL
       SELECT CASE WHEN t.path = '' THEN f ELSE t.path || '/' || f END, s.isdir, s.size
       FROM t,
         LATERAL pg_ls_dir(${d} || CASE WHEN t.path = '' THEN '' ELSE '/' || t.path END) AS f,
         LATERAL pg_stat_file(${d} || '/' || CASE WHEN t.path = '' THEN f ELSE t.path || '/' || f END) AS s
       WHERE t.isdir
     )
     SELECT path, isdir, size FROM t WHERE path <> '' ORDER BY path`,
  );
  return rows.map(([path, isdir, size]) => {
    // A newline would end a line of the pod's list of files (lib/workload.js): no backup has one.
    if (path.split("/").some((part) => part === ".." || part === "") || path.startsWith("/") || /[\n\r]/.test(path))
      throw new Error(`${peer.unit} listed an unexpected path in the backup: ${JSON.stringify(path)}`);
    return { path, isdir: isdir === "t", size: Number(size) };
  });
}

/**
 * Fetches backup `id` from the peer that has it into `p.backups/<id>` (through `<id>.partial`, so a
 * fetch cut short is never taken for a backup), with the unit's Pg `pg`. Returns where it came
 * from, or undefined when no peer has it.
 */
function fetchBackup(pg, p, id, log = () => undefined) {
  const found = findBackup(pg, id, log);
  if (!found) return undefined;
  const { peer, dir } = found;
  const entries = listing(pg, peer, dir);
  const partial = join(p.backups, `${id}.partial`);
  pg.startFetch(partial, entries);
  const segments = [];
  for (const e of entries.filter((x) => !x.isdir))
    for (let off = 0; off < e.size; off += SEGMENT)
      segments.push({ path: e.path, off, len: Math.min(SEGMENT, e.size - off) });
  let bytes = 0;
  for (let i = 0; i < segments.length;) {
    const batch = [];
    let size = 0;
    while (i < segments.length && (batch.length === 0 || size + segments[i].len <= BATCH)) {
      size += segments[i].len;
      batch.push(segments[i++]);
    }
    bytes += pg.fetchBatch(conninfoOf(peer), dir, partial, batch);
  }
  pg.finishFetch(partial, id);
  log(`fetched backup ${id} from ${peer.unit} (${entries.length} entries, ${bytes} bytes)`);
  return { from: peer.unit, bytes };
}

module.exports = { fetchBackup };
