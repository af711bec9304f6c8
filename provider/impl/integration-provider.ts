/**
 * The Integration resource: a relation between two applications' endpoints. Its inputs carry the
 * applications' `uid`s, so replacing an application replaces its integrations too (what
 * terraform-provider-juju users have to wire by hand with replace_triggered_by).
 */
import { integrationJoins, waitForModelReady } from "../../api/core";
import type { IntegrationStatusView } from "../../api/core";
import type { ControllerConnection } from "../connection";
import { Failures } from "./checks";
import { schemas } from "./schemas";
import { changed, clientFor, isConflict, isNotFound, modelStatus, PartialFailure, until } from "./session";
import { isUnknown, plain, sameValue } from "./values";

export interface IntegrationInputs {
  connection: ControllerConnection;
  model: string;
  /** `app` or `app:endpoint`, two of them. */
  endpoints: [string, string];
  /** The `uid` output of each application, in the same order. */
  applicationUids: [string, string];
  /** How long to wait for both applications' units to be active/idle once integrated (0: do not wait). */
  timeoutSeconds: number;
}
export interface IntegrationOutputs extends IntegrationInputs {
  integrationId: number;
  interface: string;
}

export const integrationProvider = {
  async check(_olds: IntegrationInputs, news: IntegrationInputs) {
    const f = new Failures();
    f.connection(news.connection);
    f.name("model", news.model, "model name");
    f.wholeNumber("timeoutSeconds", news.timeoutSeconds, 0, 7 * 86400);
    if (!Array.isArray(news.endpoints) || news.endpoints.length !== 2)
      f.add("endpoints", "must be two endpoints, app or app:endpoint");
    else
      news.endpoints.forEach((e, i) => {
        if (!isUnknown(e) && !schemas().EndpointRef.safeParse(e).success)
          f.add(`endpoints[${i}]`, `${JSON.stringify(e)} must be app or app:endpoint`);
      });
    return { inputs: news, failures: f.list };
  },

  async diff(_id: string, olds: IntegrationOutputs, news: IntegrationInputs) {
    const replaces: string[] = [];
    if (olds.model !== news.model) replaces.push("model");
    if (!sameValue([...olds.endpoints].sort(), [...news.endpoints].sort())) replaces.push("endpoints");
    if (!sameValue([...olds.applicationUids].sort(), [...news.applicationUids].sort()))
      replaces.push("applicationUids");
    return {
      changes:
        replaces.length > 0 ||
        !sameValue(olds.connection, news.connection) ||
        olds.timeoutSeconds !== news.timeoutSeconds,
      replaces,
      deleteBeforeReplace: true,
    };
  },

  async create(inputs: IntegrationInputs) {
    const [a, b] = inputs.endpoints;
    let found: IntegrationStatusView | undefined;
    try {
      const made = await clientFor(inputs.connection).integrate(inputs.model, a, b);
      changed(inputs.connection, inputs.model);
      found = (await modelStatus(inputs.connection, inputs.model))?.integrations.find((i) => i.id === made.id);
    } catch (e) {
      // Already there (made by hand, or a create whose answer was lost): take it as it is.
      if (!isConflict(e)) throw e;
      found = (await modelStatus(inputs.connection, inputs.model))?.integrations.find(
        (i) => i.life === "alive" && integrationJoins(inputs.endpoints, i),
      );
      if (!found) throw e;
    }
    if (!found) throw new Error(`integration ${a} ↔ ${b} was made but is not in model "${inputs.model}"'s status`);
    const id = `${inputs.model}/${found.id}`;
    const outs = plain({ ...inputs, integrationId: found.id, interface: found.interface });
    if (inputs.timeoutSeconds > 0) {
      const apps = inputs.endpoints.map((e) => e.split(":")[0]!);
      await waitForModelReady(clientFor(inputs.connection), inputs.model, {
        apps,
        timeoutMs: inputs.timeoutSeconds * 1000,
        intervalMs: 500,
      }).catch((e: Error) => {
        throw new PartialFailure(id, outs, [`integration ${a} ↔ ${b}: ${e.message}`]);
      });
    }
    return { id, outs };
  },

  async read(id: string, props: IntegrationOutputs) {
    const i = (await modelStatus(props.connection, props.model, true))?.integrations.find(
      (x) => x.id === props.integrationId && x.life === "alive",
    );
    if (!i) return {};
    return { id, props: plain(props), inputs: plain(inputsOf(props)) };
  },

  async update(_id: string, olds: IntegrationOutputs, news: IntegrationInputs) {
    return { outs: plain({ ...news, integrationId: olds.integrationId, interface: olds.interface }) };
  },

  async delete(_id: string, props: IntegrationOutputs) {
    try {
      await clientFor(props.connection).removeIntegration(props.model, props.endpoints[0], props.endpoints[1]);
    } catch (e) {
      if (isNotFound(e)) return;
      throw e;
    }
    changed(props.connection, props.model);
    await until(
      `integration ${props.endpoints.join(" ↔ ")} to be removed (relation-broken hooks run)`,
      10 * 60_000,
      async () =>
        !(await modelStatus(props.connection, props.model))?.integrations.some((x) => x.id === props.integrationId),
    );
  },
};

function inputsOf(o: IntegrationOutputs): IntegrationInputs {
  const { integrationId: _i, interface: _f, ...inputs } = o;
  return inputs;
}
