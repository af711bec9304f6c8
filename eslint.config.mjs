// Lint is part of `npm test`: floating promises and type-only imports are errors here, and the
// folder rule of DESIGN.md §2 holds: api ← substrates ← controller, cli, provider; agent → api only;
// inside controller/, the inner direction (CONTROLLER_LAYERS).
import { readFileSync } from "node:fs";
import tseslint from "typescript-eslint";

const FOLDERS = ["api", "substrates", "controller", "agent", "cli", "provider"];
/** What each top-level folder may not import at all (DESIGN.md §2). */
const FORBIDDEN = {
  api: ["substrates", "controller", "agent", "cli", "provider"],
  substrates: ["controller", "agent", "cli", "provider"],
  agent: ["substrates", "controller", "cli", "provider"],
  controller: ["agent", "cli", "provider"],
  cli: ["controller", "agent", "provider"],
  provider: ["controller", "agent", "cli"],
};
/**
 * The same rule one level down, inside controller/ (DESIGN.md §2): its rooms (subfolders, and the files at its
 * top), lowest first. A room may import only rooms of lower layers, never one of its own layer or above.
 * Placed by what each imports today:
 * - store and supervisor.ts import nothing of the controller; config.ts reads the store's
 *   configuration; supervisor-main.ts starts the supervisor;
 * - security sits *below* state (DESIGN's sketch has them side by side): state hashes secrets and seals
 *   credentials with it, and it needs only the configuration's paths;
 * - workers (the worker kit: Worker, Reconciler, groups) takes only types from state and store, and every
 *   long-lived part above it runs on it;
 * - access (who may do what: request authentication, access rules, login limits, and admitting a request to a
 *   route of the table: route.ts's route() and the moved-model lookups it shares with the migration guards) sits
 *   beside cluster, provisioner and backup on state, so that server/ and migration/ both use it without importing
 *   each other;
 *   bootstrap.ts (a data directory's first state) and operator-collector.ts (a state pass) sit there too;
 * - cleaner.ts runs the operator collector, pod-replica.ts bootstraps a pod's data directory: they sit with
 *   server and migration, which use the rooms below and neither of which imports the other;
 * - dashboard sits above server: it serves its feeds and console over the server's plumbing (raw answers,
 *   socket acceptance, summaries), and the server takes its hubs by kind (server/upgrades.ts);
 * - leader-work.ts composes a leader's term (provisioners, cleaner, migration master, quorum keeper), so it
 *   sits beside the dashboard, above the rooms whose workers it builds;
 * - controller.ts wires them all; index.ts and main.ts are the doors.
 * scripts/import-circles.mjs reads this table to count what runs against it.
 */
const CONTROLLER_LAYERS = [
  ["store", "supervisor.ts"],
  ["config.ts", "supervisor-main.ts"],
  ["security"],
  ["state"],
  ["workers"],
  ["access", "cluster", "provisioner", "backup", "bootstrap.ts", "operator-collector.ts"],
  ["server", "migration", "cleaner.ts", "pod-replica.ts"],
  ["dashboard", "leader-work.ts"],
  ["controller.ts"],
  ["index.ts", "main.ts"],
];

/** Import patterns (relative to a file of `room`) that reach a room of `room`'s layer or above. */
function innerPatterns(room) {
  const layer = CONTROLLER_LAYERS.findIndex((l) => l.includes(room));
  const above = CONTROLLER_LAYERS.slice(layer)
    .flat()
    .filter((r) => r !== room);
  if (above.length === 0) return [];
  // From controller/<room>/… a sibling room is ../x (or ../../x from a subfolder); from a file at the top, ./x.
  const ups = room.endsWith(".ts") ? ["."] : ["..", "../.."];
  const specs = above.flatMap((r) =>
    r.endsWith(".ts") ? ups.map((u) => `${u}/${r.slice(0, -3)}`) : ups.flatMap((u) => [`${u}/${r}`, `${u}/${r}/*`]),
  );
  return [
    {
      group: specs,
      message: `inside controller/, ${room} may import only rooms below its layer (eslint.config.mjs CONTROLLER_LAYERS: store ← config ← security ← state ← {access, cluster, provisioner, backup} ← {server, migration} ← dashboard ← controller.ts).`,
    },
  ];
}

/** devDependencies that check our fakes and manifests in tests; the product's Kubernetes client stays dependency-free. */
const TEST_ONLY = [
  "@kubernetes/client-node",
  "@kubernetes/client-node/*",
  "kubernetes-models",
  "kubernetes-models/*",
  "pg",
  "pg/*",
];
/** `../x`, `../../x`, `../../../x`; from a subfolder of the same top-level folder (api/node), one level fewer is ours. */
const upTo = (folder, depth = 0) => ["..", "../..", "../../.."].slice(depth).map((up) => `${up}/${folder}`);

/** The import restrictions for files in `folder` (or anywhere else, for undefined), plus `inner` patterns. */
function importRules(folder, depth = 0, inner = []) {
  const forbidden = FORBIDDEN[folder] ?? [];
  const small = folder === "cli" || folder === "agent";
  const indexOnly = FOLDERS.filter((f) => f !== "api" && f !== folder && !forbidden.includes(f));
  return {
    "no-restricted-imports": [
      "error",
      {
        // The CLI and the agent start often and must stay small: the full api index loads zod and yaml.
        ...(small
          ? {
              paths: upTo("api").map((name) => ({
                name,
                allowTypeImports: true,
                message: "The CLI and agent import api/core (the full api index loads zod and yaml at start-up).",
              })),
            }
          : {}),
        patterns: [
          ...(forbidden.length
            ? [
                {
                  group: forbidden.flatMap((f) => [...upTo(f, depth), ...upTo(f, depth).map((p) => `${p}/*`)]),
                  message: `${folder}/ may not import ${forbidden.join(", ")} (DESIGN.md §2: api ← substrates ← controller, cli, provider; agent → api only).`,
                },
              ]
            : []),
          ...(folder === "api"
            ? []
            : [
                {
                  group: [
                    "../api/*",
                    "../../api/*",
                    "../../../api/*",
                    "!../api/core",
                    "!../../api/core",
                    "!../../../api/core",
                    "!../api/substrate-kinds",
                    "!../../api/substrate-kinds",
                    "!../../../api/substrate-kinds",
                  ],
                  message:
                    "Import api/ through its index.ts (or api/core for processes that must stay small, or api/substrate-kinds, the contracts, which import nothing: for published declarations that must not reach zod).",
                },
              ]),
          ...(indexOnly.length
            ? [
                {
                  group: indexOnly.flatMap((f) => upTo(f).map((p) => `${p}/*`)),
                  message: "Import another top-level folder only through its index.ts.",
                },
              ]
            : []),
          ...(folder
            ? [
                {
                  group: TEST_ONLY,
                  message:
                    "Test-only devDependency: product code talks to Kubernetes through substrates/kubernetes (dependency-free); pg is the PostgreSQL proof's ledger client.",
                },
              ]
            : []),
          ...inner,
        ],
      },
    ],
  };
}

/**
 * A substrate kind is named only where it is described (DESIGN.md §2): its contract
 * (api/substrate-kinds.ts), its folder (substrates/<kind>/) and the registry; everyone else asks the
 * contract (`provisions`, `instances`, `words`, `flags`, `describe`, …) instead of comparing names.
 * The names are read from the contract's MODEL_SUBSTRATES, so a kind added there is covered here.
 */
const KIND_NAMES = (() => {
  const source = readFileSync(new URL("./api/substrate-kinds.ts", import.meta.url), "utf8");
  const list = /export const MODEL_SUBSTRATES = \[([^\]]*)\]/.exec(source)?.[1];
  const names = [...(list ?? "").matchAll(/"([a-z0-9-]+)"/g)].map((m) => m[1]);
  if (names.length === 0) throw new Error("eslint.config.mjs: no MODEL_SUBSTRATES found in api/substrate-kinds.ts");
  return names;
})();
const KIND_NAME = `/^(${KIND_NAMES.join("|")})$/`;
/** Where a kind's name as a literal decides something: compared, switched on, defaulted to, or written as a substrate. */
const NAMING_PLACES = [
  ["BinaryExpression[right.type='Literal']", "right"],
  ["BinaryExpression[left.type='Literal']", "left"],
  ["SwitchCase", "test"],
  ["LogicalExpression", "right"],
  ["AssignmentPattern", "right"],
  ["Property[key.name='substrate']", "value"],
];
const NAMED_KIND = {
  "no-restricted-syntax": [
    "error",
    ...NAMING_PLACES.map(([node, field]) => ({
      selector: `${node} > Literal.${field}[value=${KIND_NAME}]`,
      message:
        "Name no substrate kind here: ask its contract (api/substrate-kinds.ts: provisions, instances, onControllerHost, DEFAULT_SUBSTRATE, …) or its runtime half (substrates/registry.ts).",
    })),
    {
      selector: `TSTypeParameterInstantiation TSLiteralType > Literal[value=${KIND_NAME}]`,
      message: "Name no substrate kind in a type here: take the kinds from the contract (api/substrate-kinds.ts).",
    },
  ],
};
/** Where naming a kind is the point, or not yet gone: each with why. */
const NAMING_KINDS_ALLOWED = [
  // The contract names each kind once, with its settings' schema; the registry loads each kind's folder.
  "api/substrate-kinds.ts",
  "api/substrate-settings.ts",
  "substrates/*/**",
  "substrates/registry.ts",
  "test/**",
  "bench/**",
  "examples/**",
  // Another `substrate`: where the controller itself runs (on this host or a remote one, as controller.json says), not a kind.
  "controller/config.ts",
  "controller/main.ts",
  // The client's published addSshMachine sends the kind it is named for.
  "api/node/client.ts",
  // A controllers.json written before entries recorded their hosting: its `dataDir` key was a local controller's, read only to upgrade it.
  "cli/client-config.ts",
  // The package's per-kind type names published before its arguments came from the contracts (stacks import them).
  "provider/index.ts",
];

export default tseslint.config(
  { ignores: ["dist/**", "build/**", "node_modules/**", "operators/**", "eslint.config.mjs"] },
  {
    files: ["**/*.ts", "**/*.tsx"],
    extends: [tseslint.configs.base],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": [
        "error",
        { checksVoidReturn: { arguments: false, attributes: false } },
      ],
      "@typescript-eslint/consistent-type-imports": "error",
      "eqeqeq": ["error", "smart"],
      ...importRules(undefined),
    },
  },
  ...FOLDERS.map((folder) => ({ files: [`${folder}/**/*.ts`], rules: importRules(folder) })),
  // Inside controller/: each room on the controller folder's own rule, plus the inner direction.
  ...CONTROLLER_LAYERS.flat().map((room) => ({
    files: [room.endsWith(".ts") ? `controller/${room}` : `controller/${room}/**/*.ts`],
    rules: importRules("controller", 0, innerPatterns(room)),
  })),
  { files: ["**/*.ts", "**/*.tsx"], ignores: NAMING_KINDS_ALLOWED, rules: NAMED_KIND },
  // api/node/ is still api: `../substrates` there is api/substrates.ts.
  { files: ["api/node/**/*.ts"], rules: importRules("api", 1) },
  // The dashboard's page runs in a browser: of ours it may load only api/browser (no Node modules).
  {
    files: ["controller/dashboard/app/**/*.{ts,tsx}"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              regex: "^(\\.\\./)+(?!api/browser$)(api|substrates|controller|agent|cli|provider)(/|$)",
              message: "The dashboard's page runs in a browser: import the contract from api/browser only.",
            },
            { regex: "^node:", message: "The dashboard's page runs in a browser: no Node modules." },
          ],
        },
      ],
    },
  },
);
