/**
 * Machines: adding them (made by the model's substrate, or an SSH host installed in the
 * background), listing them with what their substrate reports, and removing one.
 */
import { StewardError, contractOf, kindsWhere, routes } from "../../../api";
import { buildModelStatus } from "../../state";
import { checkMachinesPerRequest, checkNewLocalMachines } from "../../access/controller-host";
import { flag } from "../../access/route";
import type { Route } from "../../access/route";
import type { HttpApiDeps } from "./deps";

export function registerMachineRoutes(route: Route, deps: HttpApiDeps): void {
  const { cache, ops } = deps;

  route(routes.addMachines, async ({ reply, principal, model: idx, body, settled }) => {
    checkMachinesPerRequest(body.substrate, body.count, "count");
    if (contractOf(body.substrate).onControllerHost)
      checkNewLocalMachines({ superuser: principal.superuser, cache, policy: deps.localMachines, count: body.count });
    // A kind whose machines are hosts added by address: the host to install on is the request's `ssh`.
    if (contractOf(body.substrate).addMachines === "address") {
      if (!body.ssh)
        throw new StewardError(
          "invalid-request",
          `substrate "${body.substrate}" needs "ssh": {host, user, privateKey, hostKey or trustOnFirstUse}`,
          { details: { field: "ssh" } },
        );
      const m = await deps.ssh.add(idx.uuid, body.substrate, body.ssh, body.storageDevices);
      reply.code(m.created ? 201 : 200);
      return { machines: [{ id: m.id, hostKey: m.hostKey }] };
    }
    if (body.ssh)
      throw new StewardError(
        "invalid-request",
        `"ssh" is only for substrate ${kindsWhere((k) => k.addMachines === "address")}`,
        { details: { field: "ssh" } },
      );
    if (body.storageDevices)
      throw new StewardError(
        "invalid-request",
        `storage devices are declared only for hosts added by address (${kindsWhere((k) => k.addMachines === "address")})`,
        { details: { field: "storageDevices" } },
      );
    const res = await ops.machines.add(idx.uuid, body.substrate, body.count, body.constraints);
    await settled(res.revision);
    return { machines: res.machines };
  });

  route(routes.listMachines, async ({ model: idx }) => {
    const status = buildModelStatus(cache, idx);
    return Object.values(status.machines).map((m) => {
      // The hardware is shown once, in constraint syntax (below), not again as the record holds it.
      const { hardware: _, ...install } = idx.machineInstall.get(m.id) ?? { hardware: undefined };
      return {
        id: m.id,
        substrate: m.substrate,
        life: m.life,
        address: m.address,
        hostname: m.hostname,
        status: m.status.current,
        message: m.status.message,
        units: m.units,
        ...(m.instance ? { instance: m.instance } : {}),
        ...(m.constraints ? { constraints: m.constraints } : {}),
        ...(m.hardware ? { hardware: m.hardware } : {}),
        ...("state" in install ? { install } : {}),
      };
    });
  });

  route(routes.removeMachine, async ({ model: idx, params: { id }, query, settled }) => {
    await settled((await ops.machines.remove(idx.uuid, id, flag(query, "force"))).revision);
  });
}
