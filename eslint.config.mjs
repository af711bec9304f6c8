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
