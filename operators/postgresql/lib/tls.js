// TLS from the `tls` config option: a user secret (type secret in operator.yaml, so its value is
// checked to be a secret uri wherever config is set) holding `certificate` and `private-key` (PEM)
// and optionally `ca-certificate` (Steward's secret keys are 3 to 64 characters, so not `ca`). The files go to tls/ on the unit's storage, outside the data directory (so
// pg_basebackup and pg_rewind never copy a key to another unit), postgres's and 0600. A secret
// that cannot be read or is not a matching certificate and key changes nothing on disk: the unit is
// blocked with the reason, and the last good files (or none: ssl off) stay in use.
//
// On a Kubernetes pod the files are written in the postgresql container (the agent's container may
// not read or write the storage), and what is in place is recorded in the unit's own directory
// (STEWARD_UNIT_DATA), which the agent's container may read, rather than read back from the storage.
"use strict";
const { X509Certificate, createPrivateKey } = require("node:crypto");
const { existsSync, readFileSync, renameSync, writeFileSync } = require("node:fs");
const { join } = require("node:path");
const t = require("./tools");

const tlsDir = (p) => join(p.base, "tls");
const files = (p) => ({
  cert: join(tlsDir(p), "server.crt"),
  key: join(tlsDir(p), "server.key"),
  ca: join(tlsDir(p), "ca.crt"),
});

/** Why the secret's values are not a usable certificate and key, or undefined. */
function problemOf(values) {
  const cert = values.certificate;
  const key = values["private-key"];
  if (!cert || !key)
    return `needs the keys certificate and private-key (PEM); it has ${Object.keys(values).join(", ") || "none"}`;
  let x509;
  try {
    x509 = new X509Certificate(cert);
  } catch {
    return "its certificate is not a PEM X.509 certificate";
  }
  let pkey;
  try {
    pkey = createPrivateKey(key);
  } catch {
    return "its private-key is not a PEM private key (unencrypted: the server cannot ask for a passphrase)";
  }
  if (!x509.checkPrivateKey(pkey)) return "its private-key does not belong to its certificate";
  if (values["ca-certificate"]) {
    try {
      new X509Certificate(values["ca-certificate"]);
    } catch {
      return "its ca-certificate is not a PEM X.509 certificate";
    }
  }
  return undefined;
}

/**
 * Brings tls/ in line with the config. Returns {on, ca, problem}: `on` when the server should run
 * with ssl (files in place), `ca` the CA's PEM when one is given (not secret: clients get it),
 * `problem` a message for a blocked status.
 */
function ensureTls(p, config) {
  const f = files(p);
  const uri = config.tls;
  // Required here, not at the top: conf.js requires this file for its lines.
  const { writeOwned, ownedDir, removeOwned } = require("./conf");
  if (!uri) {
    if (tlsState(p).on || !onPod()) removeOwned(tlsDir(p));
    return recorded(p, { on: false });
  }
  const current = () => tlsState(p);
  const values = t.secretGet(uri, { refresh: true });
  if (!values)
    return {
      ...current(),
      problem: `tls: secret ${uri} is not readable: grant it to the application (steward grant-secret <secret> ${process.env.STEWARD_APPLICATION_NAME})`,
    };
  const problem = problemOf(values);
  if (problem) return { ...current(), problem: `tls: secret ${uri} ${problem}` };
  ownedDir(tlsDir(p));
  const pem = (s) => (s.endsWith("\n") ? s : `${s}\n`);
  writeOwned(f.cert, pem(values.certificate));
  writeOwned(f.key, pem(values["private-key"]));
  if (values["ca-certificate"]) writeOwned(f.ca, pem(values["ca-certificate"]));
  else removeOwned(f.ca);
  return recorded(p, { on: true, ca: values["ca-certificate"] ? pem(values["ca-certificate"]) : undefined });
}

const onPod = () => Boolean(require("./workload").podWorkload());
const recordFile = () => join(process.env.STEWARD_UNIT_DATA || "", "tls-state.json");

/** On a pod, what ensureTls put in place, recorded for tlsState; `state` returned. */
function recorded(p, state) {
  if (onPod()) {
    writeFileSync(`${recordFile()}.tmp`, JSON.stringify(state));
    renameSync(`${recordFile()}.tmp`, recordFile());
  }
  return state;
}

/** What is in place (what ensureTls left): {on, ca}. */
function tlsState(p) {
  if (onPod()) {
    try {
      return JSON.parse(readFileSync(recordFile(), "utf8"));
    } catch {
      return { on: false };
    }
  }
  const f = files(p);
  if (!existsSync(f.cert) || !existsSync(f.key)) return { on: false };
  return { on: true, ca: existsSync(f.ca) ? readFileSync(f.ca, "utf8") : undefined };
}

/** postgresql.conf lines for the server's side. */
function serverLines(p, tls = tlsState(p)) {
  if (!tls.on) return ["ssl = off"];
  const f = files(p);
  const q = (v) => `'${v.replace(/'/g, "''")}'`;
  return [
    "ssl = on",
    `ssl_cert_file = ${q(f.cert)}`,
    `ssl_key_file = ${q(f.key)}`,
    ...(tls.ca ? [`ssl_ca_file = ${q(f.ca)}`] : []),
  ];
}

/** libpq words for a standby's primary_conninfo (and the hooks' own connections to peers). */
function clientWords(p, tls = tlsState(p)) {
  if (!tls.on) return ["sslmode=prefer"];
  return tls.ca ? ["sslmode=verify-ca", `sslrootcert='${files(p).ca}'`] : ["sslmode=require"];
}

module.exports = { ensureTls, tlsState, serverLines, clientWords, problemOf };
