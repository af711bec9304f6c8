/**
 * The whole api index (request schemas: zod and yaml, ~65 ms and ~10 MiB), loaded only by the checks
 * that need a schema: the rest of a provider runs on api/core, so a refresh never loads it. (Its own
 * module, so the published declarations of checks.ts do not name the api index, and through it zod.)
 */
import type * as Api from "../../api";

export const schemas = (): typeof Api => require("../../api");
