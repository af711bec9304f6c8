/**
 * User data that enrols a cloud instance's agent without SSH (AWS user data, vSphere
 * `guestinfo.userdata`): cloud-init writes the controller's CA, a one-time enrolment token and a
 * script, and runs the script. The script fetches the agent (and Node.js 20+ when the image has
 * none) from the controller over HTTPS, pinning that CA, trades the token for the agent's
 * configuration, and starts the agent as a service the way the SSH installer does.
 *
 * The result is gzipped: EC2 caps user data at 16 KiB, and cloud-init reads gzip natively.
 */
import { gzipSync } from "node:zlib";
import { stringify } from "yaml";
import { AGENT_CONFIG_FILE, CONTROLLER_TLS_NAME, ENROLMENT_HEADER, splitAddress } from "../api/core";
import { AGENT_NODE_FLAGS } from "./controller-files";
import { PATHS } from "./ssh/agent-installer";
import { SERVICE_PATHS, supervisorScript, systemdUnitText } from "./ssh/service";
import { shellQuote } from "./ssh/ssh-session";

/** The most user data EC2 accepts, in bytes (before base64). */
export const USER_DATA_LIMIT = 16 * 1024;
const ENROL_DIR = "/etc/steward/enrol";

export interface EnrolmentPlan {
  model: string;
  machine: string;
  controller: { addresses: string[]; caCert: string };
  /** One-time token (state/enrolment-ops.ts). */
  token: string;
}

/** The gzipped `#cloud-config` that enrols the machine's agent. */
export function enrolmentUserData(plan: EnrolmentPlan): Buffer {
  const name = `${plan.model}-${plan.machine}`;
  const dir = `${PATHS.agents}/${name}`;
  const service = { unit: `steward-agent-${name}`, description: `Steward agent ${name}`, dir, log: "agent.log" };
  const config = {
    write_files: [
      { path: `${ENROL_DIR}/ca.crt`, permissions: "0644", content: plan.controller.caCert },
      { path: `${ENROL_DIR}/${name}.token`, permissions: "0600", content: plan.token },
      { path: `${ENROL_DIR}/${name}.service`, permissions: "0644", content: systemdUnitText(service) },
      { path: `${ENROL_DIR}/${name}.supervisor`, permissions: "0755", content: supervisorScript(service) },
      { path: `${ENROL_DIR}/${name}.sh`, permissions: "0755", content: enrolScript(name, dir, service.unit, plan.controller.addresses) },
    ],
    runcmd: [`${ENROL_DIR}/${name}.sh`],
  };
  const data = gzipSync(Buffer.from(`#cloud-config\n${stringify(config, { lineWidth: 0 })}`), { level: 9 });
  if (data.length > USER_DATA_LIMIT) throw new Error(`the enrolment user data is ${data.length} bytes gzipped, over EC2's ${USER_DATA_LIMIT}: is the controller's CA certificate unusually large?`);
  return data;
}

function enrolScript(name: string, dir: string, unit: string, addresses: string[]): string {
  const targets = addresses.map((a) => { const [host, port] = splitAddress(a); return `${host}:${port}`; }).join(" ");
  return `#!/bin/sh
# Enrols the Steward agent ${name} with its controller; written and run by cloud-init.
set -u
enrol=${ENROL_DIR}
dir=${shellQuote(dir)}
log=/var/lib/steward/enrol-${name}.log
mkdir -p "$dir" /var/lib/steward
exec >>"$log" 2>&1
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
retry() { n=0; until "$@"; do n=$((n + 1)); [ $n -ge 120 ] && { echo "enrolment failed: $*"; exit 1; }; sleep 5; done; }
lib=${PATHS.lib}/${name}
mkdir -p "$lib"
retry fetch /v1/enrol/files/main.js "$lib/main.js"
retry fetch /v1/enrol/files/tool-client.js "$lib/tool-client.js"
node=$(command -v node || true)
if [ -z "$node" ] || ! "$node" -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)'; then
  node=${PATHS.node}/node
  mkdir -p ${PATHS.node}
  retry fetch /v1/enrol/files/node "$node"
  chmod 755 "$node"
fi
umask 077
# Trades the token for the agent's configuration (with its credential); the token is then spent.
retry fetch /v1/enrol "$dir/${AGENT_CONFIG_FILE}" -X POST
rm -f "$enrol/${name}.token"
umask 022
printf '#!/bin/sh\\nexec %s ${AGENT_NODE_FLAGS.join(" ")} %s --dir %s\\n' "$node" "$lib/main.js" "$dir" > "$dir/launch"
chmod 755 "$dir/launch"
if [ -d /run/systemd/system ]; then
  cp "$enrol/${name}.service" ${SERVICE_PATHS.unitDir}/${unit}.service
  systemctl daemon-reload && systemctl enable --now ${unit}
else
  mkdir -p ${SERVICE_PATHS.bootDir}
  cp "$enrol/${name}.supervisor" ${SERVICE_PATHS.bootDir}/${unit}
  setsid ${SERVICE_PATHS.bootDir}/${unit} </dev/null >/dev/null 2>&1 &
fi
echo "enrolled"
`;
}
