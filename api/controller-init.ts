/**
 * The `main.js init` contract: what makes a controller's data directory, and what it answers. One
 * type for both sides of that process boundary: the controller's own `initControllerDir`
 * (controller/bootstrap.ts, which adds what only an in-process caller can hand it) and the callers
 * that run `main.js init` as a child or over SSH (substrates/local, substrates/ssh).
 */

export interface ControllerInit {
  dataDir: string;
  name: string;
  listen: { host: string; port: number };
  advertise?: string[];
  /** Generated (24 random characters) when not given; a child process gets it on stdin, never on its command line. */
  adminPassword?: string;
  /** The controller's UUID, when its machines were tagged with it before it existed (bootstrap on a cloud); random otherwise. */
  uuid?: string;
  /** The cloud instance or VM a bootstrap launched for it (`i-…`, `vm-42`). */
  instance?: string;
  /** Where it was bootstrapped (local bootstrap says `local`: only then are local machines on by default). */
  substrate?: "local" | "remote";
}

/** What `main.js init` answers: the CA clients pin, and the admin password when it made the directory. */
export interface ControllerInitResult {
  created: boolean;
  adminPassword?: string;
  caCert: string;
}
