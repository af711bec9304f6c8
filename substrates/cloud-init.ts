/**
 * User data that sets a cloud instance up without SSH (AWS user data, vSphere
 * `guestinfo.userdata`): cloud-init writes the controller's CA, a one-time enrolment token and a
 * script, and runs the script. The script fetches what it runs from the controller over HTTPS,
 * pinning that CA (Node.js 20+ and etcd too when the image has none), then:
 * - a machine ({@link enrolmentUserData}) trades the token for its agent's configuration and starts
 *   the agent as a service, the way the SSH installer does;
 * - a controller replica ({@link replicaUserData}) reports itself staged, waits until the leader has
 *   added it to etcd and left its data directory (certificate, CA, configuration), collects that
 *   once, and starts the controller service.
 *
 * The result is gzipped: EC2 caps user data at 16 KiB, and cloud-init reads gzip natively.
 */
import { gzipSync } from "node:zlib";
import { stringify } from "yaml";
import { AGENT_CONFIG_FILE, CONTROLLER_TLS_NAME, ENROLMENT_HEADER, splitAddress } from "../api/core";
import { AGENT_NODE_FLAGS, CONTROLLER_NODE_FLAGS } from "./controller-files";
import { PATHS } from "./ssh/agent-installer";
import { CONTROLLER_DATA } from "./ssh/controller-installer";
import { SERVICE_PATHS, supervisorScript, systemdUnitText } from "./ssh/service";
import { shellQuote } from "./ssh/ssh-session";

/** The most user data EC2 accepts, in bytes (before base64). */
export const USER_DATA_LIMIT = 16 * 1024;
const ENROL_DIR = "/etc/steward/enrol";

export interface EnrolmentPlan {
  model: string;
  machine: string;
  controller: { addresses: string[]; caCert: string };
  /** One-time token (controller/state/enrolment-ops.ts). */
  token: string;
}

/** The gzipped `#cloud-config` that enrols the machine's agent. */
export function enrolmentUserData(plan: EnrolmentPlan): Buffer {
  const name = `${plan.model}-${plan.machine}`;
  const dir = `${PATHS.agents}/${name}`;
  const lib = `${PATHS.lib}/${name}`;
  const service = { unit: `steward-agent-${name}`, description: `Steward agent ${name}`, dir, log: "agent.log" };
  const body = `mkdir -p "$dir" ${shellQuote(lib)}
retry fetch /v1/enrol/files/agent-bundle/main.js ${shellQuote(`${lib}/main.js`)}
retry fetch /v1/enrol/files/agent-bundle/tool-client.js ${shellQuote(`${lib}/tool-client.js`)}
${ensureNode}
umask 077
# Trades the token for the agent's configuration (with its credential); the token is then spent.
retry fetch /v1/enrol "$dir/${AGENT_CONFIG_FILE}" -X POST
umask 022
printf '#!/bin/sh\\nexec %s ${AGENT_NODE_FLAGS.join(" ")} %s --dir %s\\n' "$node" ${shellQuote(`${lib}/main.js`)} "$dir" > "$dir/launch"
chmod 755 "$dir/launch"`;
  return userData(name, plan, service, body);
}

export interface ReplicaPlan {
  controller: { addresses: string[]; caCert: string };
  token: string;
  /** The controller's files to fetch, by their enrolment names (substrates/controller-files.ts `enrolmentFiles`), without node and etcd. */
  files: string[];
}

/** The gzipped `#cloud-config` that installs a controller replica (its data comes from the leader later). */
export function replicaUserData(plan: ReplicaPlan): Buffer {
  const root = "/opt/steward/controller/enrolled";
  const service = {
    unit: "steward-controller",
    description: "Steward controller replica",
    dir: CONTROLLER_DATA,
    log: "controller.log",
  };
  const body = `root=${root}
for f in ${plan.files.map(shellQuote).join(" ")}; do
  mkdir -p "$root/$(dirname "$f")"
  retry fetch "/v1/enrol/files/$f" "$root/$f"
done
${ensureNode}
etcd=$(command -v etcd || true)
if [ -z "$etcd" ] || ! "$etcd" --version 2>/dev/null | grep -Eq 'etcd Version: (3\\.([4-9]|[1-9][0-9])|[4-9])'; then
  etcd=/opt/steward/etcd/etcd
  mkdir -p /opt/steward/etcd
  retry fetch /v1/enrol/files/etcd "$etcd"
  chmod 755 "$etcd"
fi
# Staged: the leader now adds this replica to etcd and leaves its data; collect it once (~30 min at most).
mkdir -p -m 0700 "$dir"
umask 077
n=0
echo "staged; waiting for the leader to add this replica"
until fetch /v1/enrol/replica "$enrol/replica.json" -X POST 2>/dev/null; do n=$((n + 1)); [ $n -ge 900 ] && { echo "no data from the controller"; exit 1; }; sleep 2; done
"$node" -e 'const fs = require("fs"); const d = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
for (const [f, c] of Object.entries(d.files)) fs.writeFileSync(process.argv[2] + "/" + f, c, { mode: /\\.key$|\\.json$/.test(f) ? 0o600 : 0o644 });' "$enrol/replica.json" "$dir"
rm -f "$enrol/replica.json"
umask 022
printf '#!/bin/sh\\nPATH=%s:$PATH; export PATH\\nexec %s ${CONTROLLER_NODE_FLAGS.join(" ")} %s --data-dir %s\\n' "$(dirname "$etcd")" "$node" "$root/controller-bundle/main.js" "$dir" > "$dir/launch"
chmod 755 "$dir/launch"`;
  return userData("replica", plan, service, body);
}

/** Node.js 20+: the image's own, else the controller's binary fetched (sets $node). */
const ensureNode = `node=$(command -v node || true)
if [ -z "$node" ] || ! "$node" -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)'; then
  node=${PATHS.node}/node
  mkdir -p ${PATHS.node}
  retry fetch /v1/enrol/files/node "$node"
  chmod 755 "$node"
fi`;

/** The cloud-config around a script `body` that ends with `$dir/launch` written; the service is then started. */
function userData(
  name: string,
  plan: { controller: { addresses: string[]; caCert: string }; token: string },
  service: { unit: string; description: string; dir: string; log: string },
  body: string,
): Buffer {
  const targets = plan.controller.addresses
    .map((a) => {
      const [host, port] = splitAddress(a);
      return `${host}:${port}`;
    })
    .join(" ");
  const script = `#!/bin/sh
# Sets up ${service.description} from its controller; written and run by cloud-init.
set -u
enrol=${ENROL_DIR}
dir=${shellQuote(service.dir)}
mkdir -p /var/lib/steward
exec >>/var/lib/steward/enrol-${name}.log 2>&1
token=$(cat "$enrol/${name}.token")
# fetch PATH OUT [curl options]: from the first controller address that answers, its CA pinned.
fetch() {
  path=$1; out=$2; shift 2
  for t in ${targets}; do
    host=\${t%:*}; port=\${t##*:}
    curl -fsS --connect-timeout 5 --max-time 900 --cacert "$enrol/ca.crt" --connect-to "${CONTROLLER_TLS_NAME}:$port:$host:$port" \\
      -H "${ENROLMENT_HEADER}: $token" -o "$out.part" "$@" "https://${CONTROLLER_TLS_NAME}:$port$path" && mv "$out.part" "$out" && return 0
  done
  return 1
}
# Until the controller answers (it may be restarting, the network coming up): at most ~10 minutes.
retry() { n=0; until "$@"; do n=$((n + 1)); [ $n -ge 120 ] && { echo "failed: $*"; exit 1; }; sleep 5; done; }
${body}
rm -f "$enrol/${name}.token"
if [ -d /run/systemd/system ]; then
  cp "$enrol/${name}.service" ${SERVICE_PATHS.unitDir}/${service.unit}.service
  systemctl daemon-reload && systemctl enable --now ${service.unit}
else
  mkdir -p ${SERVICE_PATHS.bootDir}
  cp "$enrol/${name}.supervisor" ${SERVICE_PATHS.bootDir}/${service.unit}
  setsid ${SERVICE_PATHS.bootDir}/${service.unit} </dev/null >/dev/null 2>&1 &
fi
echo "done"
`;
  const config = {
    write_files: [
      { path: `${ENROL_DIR}/ca.crt`, permissions: "0644", content: plan.controller.caCert },
      { path: `${ENROL_DIR}/${name}.token`, permissions: "0600", content: plan.token },
      { path: `${ENROL_DIR}/${name}.service`, permissions: "0644", content: systemdUnitText(service) },
      { path: `${ENROL_DIR}/${name}.supervisor`, permissions: "0755", content: supervisorScript(service) },
      { path: `${ENROL_DIR}/${name}.sh`, permissions: "0755", content: script },
    ],
    runcmd: [`${ENROL_DIR}/${name}.sh`],
  };
  const data = gzipSync(Buffer.from(`#cloud-config\n${stringify(config, { lineWidth: 0 })}`), { level: 9 });
  if (data.length > USER_DATA_LIMIT)
    throw new Error(
      `the user data is ${data.length} bytes gzipped, over EC2's ${USER_DATA_LIMIT}: is the controller's CA certificate unusually large?`,
    );
  return data;
}

/**
 * The gzipped `#cloud-config` of the instance `steward bootstrap aws:…` installs its first replica
 * on over SSH, as Juju's bootstrap does: cloud-init's SSH module installs a host key made for this
 * instance (so the bootstrap pins it instead of trusting the first key it sees) and authorizes a
 * key made for this bootstrap, for root. The host key's private half is in the instance's user
 * data, readable by who may read that (ec2:DescribeInstanceAttribute, or root on the instance).
 */
export function sshBootstrapUserData(o: {
  authorizedKey: string;
  hostKey: { privateKey: string; publicKey: string };
}): Buffer {
  const config = {
    disable_root: false,
    ssh_authorized_keys: [o.authorizedKey.trim()],
    ssh_deletekeys: true,
    ssh_genkeytypes: [],
    ssh_keys: { ed25519_private: o.hostKey.privateKey, ed25519_public: o.hostKey.publicKey.trim() },
  };
  return gzipSync(Buffer.from(`#cloud-config\n${stringify(config, { lineWidth: 0 })}`), { level: 9 });
}
