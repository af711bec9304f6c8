/**
 * Units: what one is doing (its status, integrations and, in error, the failure), its recent status
 * history, resolving its error, and removing it (its storage kept, or destroyed; storage itself is
 * storage.ts's).
 */
import { Name, notFound, routes } from "../../../api";
import { buildUnitDetails } from "../../state";
import { flag } from "../../access/route";
import type { Route } from "../../access/route";
import type { HttpApiDeps } from "./deps";

export function registerUnitRoutes(route: Route, deps: HttpApiDeps): void {
  const { ops } = deps;

  route(routes.showUnit, async ({ model: idx, params: { app, n } }) => {
    const details = buildUnitDetails(idx, `${app}/${n}`);
    // A failure recorded before a later success says nothing about the unit now.
    const failure =
      details.agent.current === "error" ? await ops.reports.unitFailure(idx.uuid, details.name) : undefined;
    return { ...details, ...(failure ? { failure } : {}) };
  });

  route(routes.statusLog, async ({ model: idx, params: { app, n } }) => {
    const unit = `${app}/${n}`;
    if (!idx.units.has(unit)) throw notFound("unit", unit);
    return { entries: await ops.reports.statusHistory(idx.uuid, unit) };
  });

  route(routes.resolve, async ({ model: idx, params: { app, n }, body, settled }) => {
    await settled(
      (await ops.applications.resolve(idx.uuid, `${app}/${n}`, body.retry ? "retry" : "no-retry")).revision,
    );
    return {};
  });

  route(routes.removeUnit, async ({ model: idx, params: { app, n }, query, settled }) => {
    if (!Name.safeParse(app).success || !/^\d+$/.test(n)) throw notFound("unit", `${app}/${n}`);
    const unit = `${app}/${n}`;
    const res = await ops.applications.removeUnit(idx.uuid, unit, flag(query, "force"), flag(query, "destroyStorage"));
    await settled(res.revision);
  });
}
