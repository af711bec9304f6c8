/**
 * The base of every command: shared `--controller` and `--model` options, loading the client
 * configuration, connecting, and turning Steward errors into a one-line message and exit code 1
 * (a stack trace is only for bugs).
 */
import { Command, Option, UsageError } from "clipanion";
import { join, resolve } from "node:path";
import { ControllerClient, StewardError, sanitizeForTerminal } from "../api/core";
import type { ModelMoved, MovedTo } from "../api/core";
import type { ClientConfig, ControllerEntry } from "./client-config";
import { dataDirOf, loadClientConfig, saveClientConfig, stewardHome } from "./client-config";
import type { StewardContext } from "./context";
import type * as ModelFile from "./model-file";
import type { ModelDefinition } from "./model-file";
import type { Change } from "./plan";
import { usageErrorText } from "./steward-cli";
import { actualStatus, describePlan, planChanges } from "./plan";

export abstract class BaseCommand extends Command<StewardContext> {
  abstract run(): Promise<number | void>;

  async execute(): Promise<number | void> {
    try {
      return await this.run();
    } catch (err) {
      if (StewardError.isInstance(err)) {
        this.context.stderr.write(`ERROR ${sanitizeForTerminal(this.explain(err))}\n`);
        return 1;
      }
      if (err instanceof UsageError) {
        // On standard error with a pointer to the command's help, not clipanion's whole signature on standard output.
        const name = (this.constructor as typeof BaseCommand).paths?.[0]?.[0];
        this.context.stderr.write(sanitizeForTerminal(usageErrorText(err.message, name)));
        return 1;
      }
      throw err;
    }
  }

  /** The message for a Steward error; commands that know more context (which controller) add it. */
  protected explain(err: StewardError): string {
    return err.message;
  }

  get home(): string {
    return stewardHome(this.context.env);
  }
  clientConfig(): Promise<ClientConfig> {
    return loadClientConfig(this.home);
  }
  saveConfig(cfg: ClientConfig): Promise<void> {
    return saveClientConfig(this.home, cfg);
  }

  /** Prints a line; text from the controller may hold escape sequences, so it is sanitised here. */
  out(line = ""): void {
    this.context.stdout.write(sanitizeForTerminal(line) + "\n");
  }
  progress(line: string): void {
    this.context.stderr.write(sanitizeForTerminal(line) + "\n");
  }
}

/** A command that talks to a controller (`--controller`, default the current one). */
export abstract class ControllerCommand extends BaseCommand {
  controllerName = Option.String("-c,--controller", {
    description: "Controller to use (default: the current one; env STEWARD_CONTROLLER)",
  });

  protected entryName?: string;
  protected entry?: ControllerEntry;
  private client?: ControllerClient;

  protected override explain(err: StewardError): string {
    if (err.reason !== "untrusted-certificate" || !this.entryName) return err.message;
    const config = join(this.home, "controllers.json");
    const dataDir = dataDirOf(this.entry);
    const localCa = dataDir ? `, or put its current CA (${join(dataDir, "ca.crt")}) in the entry's caCert` : "";
    return `cannot trust controller "${this.entryName}": ${err.message}. If it was re-created on purpose, this client's entry is stale: remove "${this.entryName}" from ${config}${localCa}. Otherwise do not send it your credentials.`;
  }

  async resolveController(): Promise<{ name: string; entry: ControllerEntry; cfg: ClientConfig }> {
    const cfg = await this.clientConfig();
    const name = this.controllerName ?? this.context.env.STEWARD_CONTROLLER ?? cfg.current;
    if (!name) throw new UsageError("no controller selected: bootstrap one (steward bootstrap) or pass --controller");
    const entry = cfg.controllers[name];
    if (!entry)
      throw new UsageError(
        `controller "${name}" is not known here (known: ${Object.keys(cfg.controllers).join(", ") || "none"})`,
      );
    this.entryName = name;
    this.entry = entry;
    return { name, entry, cfg };
  }

  async connect(): Promise<ControllerClient> {
    if (this.client) return this.client;
    const { entry } = await this.resolveController();
    this.client = new ControllerClient({
      addresses: entry.addresses,
      caCert: entry.caCert,
      user: entry.user,
      ...(entry.password ? { password: entry.password } : {}),
      ...(entry.token ? { token: entry.token } : {}),
      onMoved: (moved) => this.followMove(moved),
    });
    return this.client;
  }

  /**
   * A model moved to another controller (a migration): when this client knows that controller (the
   * same CA), the command goes there, and the current model follows to it; otherwise the error says
   * where the model went.
   */
  private async followMove(moved: ModelMoved): Promise<MovedTo | undefined> {
    const cfg = await this.clientConfig();
    const found = Object.entries(cfg.controllers).find(([, e]) => e.caCert.trim() === moved.target.caCert.trim());
    if (!found) return undefined;
    const [name, target] = found;
    this.context.stderr.write(`Model ${moved.model} moved to controller ${name}; following it there.\n`);
    const source = this.entryName ? cfg.controllers[this.entryName] : undefined;
    if (source?.currentModel === moved.model) {
      delete source.currentModel;
      target.currentModel = moved.model;
      if (cfg.current === this.entryName) {
        cfg.current = name;
        this.context.stderr.write(`The current controller is now ${name}.\n`);
      }
      await this.saveConfig(cfg);
    }
    this.entryName = name;
    this.entry = target;
    return {
      addresses: target.addresses,
      caCert: target.caCert,
      user: target.user,
      ...(target.password ? { password: target.password } : {}),
      ...(target.token ? { token: target.token } : {}),
    };
  }

  /** Saves a renewed token and the replicas' current addresses, so the next command starts from them. */
  async persistSession(): Promise<void> {
    if (!this.client || !this.entryName) return;
    const token = this.client.currentToken;
    const addresses = this.client.addresses;
    if (token === this.entry?.token && addresses.join() === this.entry?.addresses.join()) return;
    const cfg = await this.clientConfig();
    const e = cfg.controllers[this.entryName];
    if (e) {
      e.token = token;
      e.addresses = addresses;
      await this.saveConfig(cfg);
    }
  }

  override async execute(): Promise<number | void> {
    try {
      return await super.execute();
    } finally {
      await this.persistSession().catch(() => undefined);
      this.client?.close();
    }
  }
}

/** A command that works on a model (`--model`, default the controller's current model). */
export abstract class ModelCommand extends ControllerCommand {
  modelName = Option.String("-m,--model", {
    description: "Model to use (default: the current one; env STEWARD_MODEL)",
  });

  async model(): Promise<string> {
    const { entry } = await this.resolveController();
    const name = this.modelName ?? this.context.env.STEWARD_MODEL ?? entry.currentModel;
    if (!name) throw new UsageError(await this.noModelHint());
    return name;
  }

  /** Why no model is selected and what to do: choose one of the models there are, or make the first. */
  private async noModelHint(): Promise<string> {
    const models = await (await this.connect()).listModels().catch(() => []);
    if (models.length === 0) return "no model selected: pass --model, or create one with steward add-model";
    const names = models.map((m) => m.name);
    return `no model selected: pass --model, or choose one with steward switch ${names[0]} (models here: ${names.slice(0, 10).join(", ")}${names.length > 10 ? ", …" : ""}; steward models lists them)`;
  }

  /** Records where an application's operator came from, so `steward refresh` can find it again. */
  async rememberOperatorSource(model: string, app: string, dir: string): Promise<void> {
    const { name, cfg } = await this.resolveController();
    const entry = cfg.controllers[name]!;
    entry.operatorSources = { ...entry.operatorSources, [`${model}/${app}`]: dir };
    await this.saveConfig(cfg);
  }
}

/** Parses repeated `key=value` arguments. */
export function parseAssignments(items: string[], what: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of items) {
    const eq = item.indexOf("=");
    if (eq <= 0) throw new UsageError(`${what} "${item}" is not key=value`);
    out[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return out;
}

/** A command that compares a model file with the controller (`apply`, `diff`). */
export abstract class ModelFileCommand extends ModelCommand {
  file = Option.String({ required: true, name: "model-file" });

  /** Loads the file, reads the model and prints the plan. */
  async plan(): Promise<{ client: ControllerClient; model: string; def: ModelDefinition; changes: Change[] }> {
    // Loaded here, not at the top: the YAML parser is not needed by every other command.
    const { loadModelFile } = require("./model-file") as typeof ModelFile;
    const def = await loadModelFile(resolve(this.context.cwd, this.file));
    const model = this.modelName ?? def.model ?? (await this.model());
    const client = await this.connect();
    const changes = planChanges(def, model, await actualStatus(client, model));
    this.context.stdout.write(sanitizeForTerminal(describePlan(model, changes)));
    return { client, model, def, changes };
  }
}
