/**
 * The key layout of the store, in one place. Operator content lives under `/blobs/`, which the
 * state cache never loads.
 */
export const keys = {
  controller: "/controller/info",
  tokenKey: "/controller/token-key",
  user: (name: string) => `/users/${name}`,
  revokedToken: (id: string) => `/revoked-tokens/${id}`,
  revokedTokensPrefix: "/revoked-tokens/",
  modelName: (name: string) => `/model-names/${name}`,
  model: (uuid: string) => `/models/${uuid}`,
  modelPrefix: (uuid: string) => `/models/${uuid}/`,
  app: (m: string, app: string) => `/models/${m}/apps/${app}`,
  unit: (m: string, unit: string) => `/models/${m}/units/${unit}`,
  unitsOf: (m: string, app: string) => `/models/${m}/units/${app}/`,
  unitStatus: (m: string, unit: string) => `/models/${m}/unit-status/${unit}`,
  /** The last failed hook's output (kept apart from the status, which every status read serves). */
  unitFailure: (m: string, unit: string) => `/models/${m}/unit-failure/${unit}`,
  machine: (m: string, id: string) => `/models/${m}/machines/${id}`,
  machineInfo: (m: string, id: string) => `/models/${m}/machine-info/${id}`,
  machineSeq: (m: string) => `/models/${m}/seq/machine`,
  machineInstall: (m: string, id: string) => `/models/${m}/machine-install/${id}`,
  relationSeq: (m: string) => `/models/${m}/seq/relation`,
  relation: (m: string, id: number) => `/models/${m}/relations/${id}`,
  relationsPrefix: (m: string) => `/models/${m}/relations/`,
  scope: (m: string, id: number, unit: string) => `/models/${m}/relation-scope/${id}/${unit}`,
  scopePrefix: (m: string, id: number) => `/models/${m}/relation-scope/${id}/`,
  unitBag: (m: string, id: number, unit: string) => `/models/${m}/relation-data/${id}/unit/${unit}`,
  appBag: (m: string, id: number, app: string) => `/models/${m}/relation-data/${id}/app/${app}`,
  relationDataPrefix: (m: string, id: number) => `/models/${m}/relation-data/${id}/`,
  leader: (m: string, app: string) => `/models/${m}/leaders/${app}`,
  leaderData: (m: string, app: string) => `/models/${m}/leader-data/${app}`,
  ports: (m: string, unit: string) => `/models/${m}/unit-ports/${unit}`,
  /** Task and operation ids share one sequence per model, as in Juju. */
  taskSeq: (m: string) => `/models/${m}/seq/task`,
  taskQueue: (m: string, unit: string, id: number) => `/models/${m}/task-queue/${unit}/${sortableId(id)}`,
  taskQueueOf: (m: string, unit: string) => `/models/${m}/task-queue/${unit}/`,
  /** Not cached: task records carry results and logs that only show-task reads. */
  task: (m: string, id: number) => `/tasks/${m}/${sortableId(id)}`,
  tasksOf: (m: string) => `/tasks/${m}/`,
  operation: (m: string, id: number) => `/operations/${m}/${sortableId(id)}`,
  operationsOf: (m: string) => `/operations/${m}/`,
  /** Not cached: a unit's recent status changes (show-status-log), kept out of the status every read serves. */
  statusHistory: (m: string, unit: string) => `/status-history/${m}/${unit}`,
  statusHistoryOf: (m: string) => `/status-history/${m}/`,
  appStatus: (m: string, app: string) => `/models/${m}/app-status/${app}`,
  access: (m: string, user: string) => `/models/${m}/access/${user}`,
  presence: (m: string, machine: string) => `/presence/${m}/${machine}`,
  presencePrefix: (m: string) => `/presence/${m}/`,
  operator: (hash: string) => `/operators/${hash}`,
  operatorChunk: (hash: string, i: number) => `/blobs/operators/${hash}/${i}`,
  operatorChunks: (hash: string) => `/blobs/operators/${hash}/`,
  operatorUpload: (hash: string) => `/blobs/operator-uploads/${hash}`,
  operatorUploads: "/blobs/operator-uploads/",
  /** Not cached: read only when a credential is listed or used. */
  credential: (name: string) => `/credentials/${name}`,
  credentialsPrefix: "/credentials/",
  /** One-time enrolment tokens of cloud machines, by the token's SHA-256 (not cached). */
  enrolment: (tokenHash: string) => `/enrolments/${tokenHash}`,
  enrolmentsPrefix: "/enrolments/",
};

/** Ids padded so that keys sort as their numbers do. */
function sortableId(id: number): string {
  return String(id).padStart(10, "0");
}

/** Prefixes the state cache follows. */
export const CACHED_PREFIXES = ["/controller/", "/users/", "/revoked-tokens/", "/model-names/", "/models/", "/operators/", "/presence/", "/cluster/"];

/** Operator bundles are stored in chunks well under etcd's 1.5 MiB request limit. */
export const CHUNK_BYTES = 512 * 1024;
