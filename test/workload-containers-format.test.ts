/**
 * `containers:` in operator.yaml without a controller: what is read, every mistake named with its
 * field and line, the `<container>-workload-ready` hook allowed in the bundle, and metadata of
 * operators without containers unchanged.
 */
import test from "ava";
import type { Bundle, StewardError } from "../api";
import { knownHookNames, parseOperatorYaml, quantityValue, validateBundle } from "../api";
import { operatorYamlWith, yamlProblem as problem } from "./harness/operators";

const yaml = operatorYamlWith("containers");

test("operator.yaml: containers are read with their ports and resources", (t) => {
  const meta = parseOperatorYaml(
    yaml(
      "  web:\n    image: nginx:1.27\n    ports:\n      - { name: http, containerPort: 8080 }\n      - { containerPort: 53, protocol: UDP }\n    resources:\n      requests: { cpu: 100m, memory: 64Mi }\n      limits: { cpu: 1, memory: 1Gi }\n  cache:\n    image: registry.example.com:5000/team/redis@sha256:abc\n",
    ),
  );
  t.deepEqual(meta.containers, {
    cache: { image: "registry.example.com:5000/team/redis@sha256:abc" },
    web: {
      image: "nginx:1.27",
      ports: [
        { name: "http", containerPort: 8080 },
        { containerPort: 53, protocol: "UDP" },
      ],
      resources: { requests: { cpu: "100m", memory: "64Mi" }, limits: { cpu: "1", memory: "1Gi" } },
    },
  });
  t.false(
    "containers" in parseOperatorYaml(`name: op\nversion: "1"\n`),
    "no containers: no field, so stored metadata keeps its form",
  );
  t.false("containers" in parseOperatorYaml(yaml("")), "an empty section is no containers");
  t.true(knownHookNames(meta).has("web-workload-ready"));
  t.true(knownHookNames(meta).has("cache-workload-ready"));
  t.false(knownHookNames(meta).has("db-workload-ready"));
});

test("operator.yaml: container mistakes name the field and line, and say how to fix them", (t) => {
  t.regex(
    problem(yaml("  Web:\n    image: x\n")),
    /operator.yaml:4: "containers.Web" is not a valid container name: lower-case letters, digits and hyphens/,
  );
  t.regex(
    problem(yaml("  steward-agent:\n    image: x\n")),
    /"containers.steward-agent" is the name of a container Steward adds to every pod; choose another name/,
  );
  t.regex(problem(yaml("  web: {}\n")), /"containers.web.image" is required: the OCI image the container runs/);
  t.regex(problem(yaml('  web:\n    image: "nginx latest"\n')), /"containers.web.image" is not an image reference/);
  t.regex(
    problem(yaml("  web:\n    image: x\n    command: [sh]\n")),
    /operator.yaml:6: "containers.web.command" is not a known container field \(known: image, ports, resources\)/,
  );
  t.regex(
    problem(yaml("  web:\n    image: x\n    ports: [8080]\n")),
    /"containers.web.ports.0" must be a mapping with a containerPort/,
  );
  t.regex(
    problem(yaml("  web:\n    image: x\n    ports: [{ containerPort: 70000 }]\n")),
    /"containers.web.ports.0.containerPort" is required and must be a port number from 1 to 65535/,
  );
  t.regex(
    problem(yaml("  web:\n    image: x\n    ports: [{ containerPort: 38813 }]\n")),
    /is reserved for the agent's and the supervisors' probes \(38813-38829\)/,
  );
  t.regex(
    problem(yaml("  web:\n    image: x\n    ports: [{ containerPort: 80, protocol: tcp }]\n")),
    /"containers.web.ports.0.protocol" must be TCP, UDP or SCTP/,
  );
  t.regex(
    problem(yaml("  web:\n    image: x\n    ports: [{ name: http-server-port-1, containerPort: 80 }]\n")),
    /"containers.web.ports.0.name" must be at most 15 lower-case letters/,
  );
  t.regex(
    problem(
      yaml(
        "  a:\n    image: x\n    ports: [{ name: http, containerPort: 80 }]\n  b:\n    image: y\n    ports: [{ name: http, containerPort: 81 }]\n",
      ),
    ),
    /"containers.b.ports.0.name" is used by another port/,
  );
  t.regex(
    problem(yaml("  web:\n    image: x\n    ports: [{ containerPort: 80 }, { containerPort: 80 }]\n")),
    /declares 80\/TCP twice/,
  );
  t.regex(
    problem(yaml("  web:\n    image: x\n    resources: { requests: { cpu: lots } }\n")),
    /"containers.web.resources.requests.cpu" must be a Kubernetes quantity such as 500m or 2 \(got "lots"\)/,
  );
  t.regex(
    problem(yaml("  web:\n    image: x\n    resources: { limits: { memory: 1GB } }\n")),
    /"containers.web.resources.limits.memory" must be a Kubernetes quantity such as 128Mi or 1Gi/,
  );
  t.regex(
    problem(yaml("  web:\n    image: x\n    resources: { limits: { gpu: 1 } }\n")),
    /"containers.web.resources.limits.gpu" is not a known resource field \(known: cpu, memory\)/,
  );
  t.regex(
    problem(yaml("  web:\n    image: x\n    resources: { requests: { memory: 2Gi }, limits: { memory: 1Gi } }\n")),
    /asks for 2Gi, more than its limit 1Gi/,
  );
  t.regex(
    problem('name: op\nversion: "1"\ncontainers: [web]\n'),
    /"containers" must be a mapping of container name to \{image, ports, resources\}/,
  );
  const many = Array.from({ length: 17 }, (_, i) => `  c${i}:\n    image: x\n`).join("");
  t.regex(problem(yaml(many)), /declares 17 containers; an operator may declare at most 16/);
});

test("quantities compare across suffixes", (t) => {
  t.is(quantityValue("500m"), 0.5);
  t.is(quantityValue("1Ki"), 1024);
  t.is(quantityValue("1e3"), 1000);
  t.true(quantityValue("1Gi") > quantityValue("1G"));
});

test("bundles: a container's workload-ready hook is accepted, another container's is refused", (t) => {
  const file = (path: string, content: string, mode = 0o755): Bundle["files"][number] => ({
    path,
    mode,
    content: Buffer.from(content).toString("base64"),
  });
  const meta = file("operator.yaml", yaml("  web:\n    image: nginx\n"), 0o644);
  const refused = (files: Bundle["files"]): string => {
    try {
      validateBundle({ files });
      return "accepted";
    } catch (err) {
      return (err as StewardError).message;
    }
  };
  t.is(refused([meta, file("hooks/web-workload-ready", "#!/bin/sh\n")]), "accepted");
  t.regex(
    refused([meta, file("hooks/db-workload-ready", "#!/bin/sh\n")]),
    /hooks\/db-workload-ready: is not a hook this operator can receive/,
  );
});
