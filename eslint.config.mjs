// Lint is part of `npm test`: floating promises and type-only imports are errors here, and the
// folder rule of DESIGN.md §2 holds: api ← substrates ← controller, cli, provider; agent → api only.
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
/** devDependencies that check our fakes and manifests in tests; the product's Kubernetes client stays dependency-free. */
const TEST_ONLY = ["@kubernetes/client-node", "@kubernetes/client-node/*", "kubernetes-models", "kubernetes-models/*"];
/** `../x`, `../../x`, `../../../x`; from a subfolder of the same top-level folder (api/node), one level fewer is ours. */
const upTo = (folder, depth = 0) => ["..", "../..", "../../.."].slice(depth).map((up) => `${up}/${folder}`);

/** The import restrictions for files in `folder` (or anywhere else, for undefined). */
function importRules(folder, depth = 0) {
  const forbidden = FORBIDDEN[folder] ?? [];
  const small = folder === "cli" || folder === "agent";
  const indexOnly = FOLDERS.filter((f) => f !== "api" && f !== folder && !forbidden.includes(f));
  return {
    "no-restricted-imports": ["error", {
      // The CLI and the agent start often and must stay small: the full api index loads zod and yaml.
      ...(small ? { paths: upTo("api").map((name) => ({ name, allowTypeImports: true, message: "The CLI and agent import api/core (the full api index loads zod and yaml at start-up)." })) } : {}),
      patterns: [
        ...(forbidden.length ? [{ group: forbidden.flatMap((f) => [...upTo(f, depth), ...upTo(f, depth).map((p) => `${p}/*`)]), message: `${folder}/ may not import ${forbidden.join(", ")} (DESIGN.md §2: api ← substrates ← controller, cli, provider; agent → api only).` }] : []),
        ...(folder === "api" ? [] : [{ group: ["../api/*", "../../api/*", "../../../api/*", "!../api/core", "!../../api/core", "!../../../api/core"],
          message: "Import api/ through its index.ts (or api/core for processes that must stay small)." }]),
        ...(indexOnly.length ? [{ group: indexOnly.flatMap((f) => upTo(f).map((p) => `${p}/*`)), message: "Import another top-level folder only through its index.ts." }] : []),
        ...(folder ? [{ group: TEST_ONLY, message: "Test-only devDependency: product code talks to Kubernetes through substrates/kubernetes (dependency-free)." }] : []),
      ],
    }],
  };
}

/**
 * A substrate kind is named only where it is described (DESIGN.md §2): its contract
 * (api/substrate-kinds.ts), its folder (substrates/<kind>/) and the registry; everyone else asks the
 * contract (`provisions`, `instances`, `words`, `flags`, `describe`, …) instead of comparing names.
 */
const KIND_NAME = "/^(aws|vsphere|kubernetes|ssh|local|manual)$/";
const NAMED_KIND = {
  "no-restricted-syntax": ["error", ...["BinaryExpression[right.type='Literal']", "BinaryExpression[left.type='Literal']", "SwitchCase"].map((node) => ({
    selector: `${node} > Literal.${node === "SwitchCase" ? "test" : node.includes("right") ? "right" : "left"}[value=${KIND_NAME}]`,
    message: "Compare no substrate name here: ask its contract (api/substrate-kinds.ts: provisions, instances, onControllerHost, …) or its runtime half (substrates/registry.ts).",
  }))],
};
/** Where naming a kind is the point, or not yet gone: each with why. */
const NAMING_KINDS_ALLOWED = [
  "api/substrate-kinds.ts", "api/substrate-settings.ts", "substrates/*/**", "substrates/registry.ts", "test/**", "bench/**", "examples/**",
  // Another `substrate`: where the controller itself runs ("local" | "remote"), not a kind.
  "controller/config.ts", "controller/main.ts",
  // The provider's resource arguments are the user's vocabulary (one input per kind, typed as a union by name); they map onto the contract.
  "provider/controller.ts", "provider/machine.ts", "provider/model.ts",
  // The replica cloud document is a union by kind (aws | vsphere | kubernetes) narrowed by name; it becomes the kinds' replicaHosts() with controller hosting.
  "controller/cluster/**",
  // An ssh credential's file may be the private key itself (PEM), read as such.
  "cli/credential-file.ts",
  // TODO(hosting): controller bootstrap and destroy, being rewritten onto each kind's `controller` slot (substrates/kind.ts); then remove these.
  "cli/commands/bootstrap.ts", "cli/commands/destroy-controller.ts", "provider/impl/controller-provider.ts", "cli/cloud-bootstrap.ts",
];

export default tseslint.config(
  { ignores: ["dist/**", "build/**", "node_modules/**", "operators/**", "eslint.config.mjs"] },
  {
    files: ["**/*.ts", "**/*.tsx"],
    extends: [tseslint.configs.base],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": ["error", { checksVoidReturn: { arguments: false, attributes: false } }],
      "@typescript-eslint/consistent-type-imports": "error",
      "eqeqeq": ["error", "smart"],
      ...importRules(undefined),
    },
  },
  ...FOLDERS.map((folder) => ({ files: [`${folder}/**/*.ts`], rules: importRules(folder) })),
  { files: ["**/*.ts", "**/*.tsx"], ignores: NAMING_KINDS_ALLOWED, rules: NAMED_KIND },
  // api/node/ is still api: `../substrates` there is api/substrates.ts.
  { files: ["api/node/**/*.ts"], rules: importRules("api", 1) },
  // The dashboard's page runs in a browser: of ours it may load only api/browser (no Node modules).
  {
    files: ["controller/dashboard/app/**/*.{ts,tsx}"],
    rules: {
      "no-restricted-imports": ["error", { patterns: [
        { regex: "^(\\.\\./)+(?!api/browser$)(api|substrates|controller|agent|cli|provider)(/|$)", message: "The dashboard's page runs in a browser: import the contract from api/browser only." },
        { regex: "^node:", message: "The dashboard's page runs in a browser: no Node modules." },
      ] }],
    },
  },
);
