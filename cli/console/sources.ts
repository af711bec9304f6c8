/**
 * What completion looks up, from the controller the client config names: models, controllers, and
 * the applications and units of the model in use. Answers are kept a few seconds, so pressing tab
 * twice asks the controller once; every lookup gives up after 2 s rather than hang the prompt.
 */
import { ControllerClient } from "../../api/core";
import type { ClientConfig } from "../client-config";
import { loadClientConfig } from "../client-config";
import type { CompletionSources } from "./completion";

const KEEP_MS = 5000;

export class ControllerSources implements CompletionSources {
  private readonly kept = new Map<string, { at: number; value: Promise<string[]> }>();

  /** `model()`: the model in use now (the console's `use`, else the controller's current one). */
  constructor(
    private readonly home: string,
    private readonly env: NodeJS.ProcessEnv,
    private readonly model: () => string | undefined,
  ) {}

  controllers(): Promise<string[]> {
    return this.keep("controllers", async () => Object.keys((await loadClientConfig(this.home)).controllers));
  }

  models(): Promise<string[]> {
    return this.keep("models", () => this.withClient(async (c) => (await c.listModels()).map((m) => m.name)));
  }

  entities(): Promise<string[]> {
    return this.keep(`entities:${this.model() ?? ""}`, () =>
      this.withClient(async (c, cfg) => {
        const model = this.model() ?? (cfg.current ? cfg.controllers[cfg.current]?.currentModel : undefined);
        if (!model) return [];
        const s = await c.status(model);
        return Object.values(s.applications).flatMap((a) => [a.name, ...Object.keys(a.units)]);
      }),
    );
  }

  private keep(key: string, load: () => Promise<string[]>): Promise<string[]> {
    const k = this.kept.get(key);
    if (k && Date.now() - k.at < KEEP_MS) return k.value;
    const value = load();
    this.kept.set(key, { at: Date.now(), value });
    value.catch(() => this.kept.delete(key));
    return value;
  }

  private async withClient<T>(use: (c: ControllerClient, cfg: ClientConfig) => Promise<T>): Promise<T> {
    const cfg = await loadClientConfig(this.home);
    const name = this.env.STEWARD_CONTROLLER ?? cfg.current;
    const entry = name ? cfg.controllers[name] : undefined;
    if (!entry) throw new Error("no controller");
    const client = new ControllerClient({
      addresses: entry.addresses,
      caCert: entry.caCert,
      user: entry.user,
      timeoutMs: 2000,
      ...(entry.password ? { password: entry.password } : {}),
      ...(entry.token ? { token: entry.token } : {}),
    });
    try {
      return await use(client, cfg);
    } finally {
      client.close();
    }
  }
}
