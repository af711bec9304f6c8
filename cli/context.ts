import type { BaseContext } from "clipanion";

/** What every command gets: streams, environment and working directory (injectable for tests). */
export interface StewardContext extends BaseContext {
  env: NodeJS.ProcessEnv;
  cwd: string;
}
