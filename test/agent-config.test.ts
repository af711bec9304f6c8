/** The one agent configuration format: what installers write is what the agent reads back, and bad files are named. */
import test from "ava";
import type { StewardError } from "../api";
import { agentConfigText, parseAgentConfig } from "../api";

const cfg = {
  model: "0b7c",
  machine: "3",
  credential: "s3cret",
  controllerAddresses: ["10.0.0.1:17070", "10.0.0.2:17070"],
  caCert: "-----BEGIN CERTIFICATE-----\n…",
};

test("a written config reads back the same", (t) => {
  t.deepEqual(parseAgentConfig(agentConfigText(cfg), "agent.json"), cfg);
});

test("a broken config is refused with the file and field named", (t) => {
  const cases: [string, RegExp][] = [
    ["{", /x\/agent.json is not valid JSON/],
    ["[]", /"model" is missing/],
    ["null", /must hold a JSON object/],
    [JSON.stringify({ ...cfg, credential: "" }), /"credential" is missing/],
    [JSON.stringify({ ...cfg, controllerAddresses: [] }), /"controllerAddresses" must list at least one/],
    [JSON.stringify({ ...cfg, controllerAddresses: [7] }), /"controllerAddresses" must list at least one/],
  ];
  for (const [text, message] of cases) {
    const err = t.throws<StewardError>(() => parseAgentConfig(text, "x/agent.json"));
    t.regex(err?.message ?? "", message, text);
    t.is(err?.code, "invalid-request");
  }
});
