// Lint is part of `npm test`: floating promises and type-only imports are errors here.
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "operators/**", "eslint.config.mjs"] },
  {
    files: ["**/*.ts"],
    extends: [tseslint.configs.base],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": ["error", { checksVoidReturn: { arguments: false, attributes: false } }],
      "@typescript-eslint/consistent-type-imports": "error",
      "eqeqeq": ["error", "smart"],
      "no-restricted-imports": ["error", { patterns: [
        { group: ["../api/*", "../../api/*", "!../api/core", "!../../api/core"],
          message: "Import api/ through its index.ts (or api/core for processes that must stay small)." },
        { group: ["../controller/*", "../../controller/*", "../agent/*", "../../agent/*", "../cli/*", "../../cli/*", "../provider/*", "../../provider/*"],
          message: "Import another top-level folder only through its index.ts." },
      ] }],
    },
  },
  {
    // The CLI and the agent start often and must stay small: the full api index loads zod and yaml.
    files: ["cli/**/*.ts", "agent/**/*.ts"],
    rules: {
      "no-restricted-imports": ["error", { paths: ["../api", "../../api", "../../../api"].map((name) => ({ name, allowTypeImports: true,
        message: "The CLI and agent import api/core (the full api index loads zod and yaml at start-up)." })), patterns: [
        { group: ["../api/*", "../../api/*", "!../api/core", "!../../api/core"],
          message: "Import api/ through its index.ts (or api/core for processes that must stay small)." },
        { group: ["../controller/*", "../../controller/*", "../agent/*", "../../agent/*", "../cli/*", "../../cli/*", "../provider/*", "../../provider/*"],
          message: "Import another top-level folder only through its index.ts." },
      ] }],
    },
  },
);
