import { open, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { Command, Option, UsageError } from "clipanion";
import type * as Substrates from "../../substrates";
import { ControllerClient, routes } from "../../api/core";
import { BaseCommand } from "../base-command";
import type { ControllerEntry } from "../client-config";
import { dataDirOf } from "../client-config";
import { passphraseOptions, readPassphrase } from "../read-passphrase";
import { isPort } from "../validators";

/** The part of a backup's header a restore needs before the passphrase (controller/backup/backup-cipher.ts). */
interface HeaderView {
  format: number;
  id: string;
  controller: { uuid: string; name: string };
  revision: number;
  createdAt: string;
}

export default class RestoreBackupCommand extends BaseCommand {
  static override paths = [["restore-backup"]];
  static override usage = Command.Usage({
    category: "Controllers",
    description: "bring a controller back from a backup, on this host, at its old address",
    details: `
      For a controller on this host that was lost (its process and data directory gone, or its
      store damaged): makes a new controller from the backup in the controller's directory, on the
      same address and port, with the same CA, so its agents reconnect with the credentials they
      have. The controller is named by the backup (or \`-c NAME\`); a controller this client does not
      know needs \`--port\` (and \`--host\`). Given another port or host than before, the agents on this
      host (its local machines) are pointed at the new address; agents on other hosts are not. Everything acknowledged before the backup is back; what
      was written after it is gone, and agents converge on the restored state (a config set since
      reverts and config-changed runs). A controller that still answers with models is not replaced
      without \`--force\`; the restored one has one replica (grow it with \`steward enable-ha\`).
      The passphrase comes from \`--passphrase-env VAR\`, \`--passphrase-file FILE\` or a prompt.
    `,
    examples: [
      [
        "Restore the controller a backup was made of",
        "$0 restore-backup steward-backup-local-20261125T001500Z-a1b2c3.sbk --passphrase-env BACKUP_PASSPHRASE",
      ],
      [
        "Restore onto this host's port 17070 for a client that does not know it",
        "$0 restore-backup local.sbk --port 17070",
      ],
    ],
  });

  file = Option.String({ required: true, name: "file" });
  controllerName = Option.String("-c,--controller", {
    description: "Name of the controller to restore (default: the backup's)",
  });
  host = Option.String("--host", {
    description: "Address to listen on (default: the controller's old one, else 127.0.0.1)",
  });
  port = Option.String("--port", {
    description: "Port to listen on (default: the controller's old one)",
    validator: isPort(),
  });
  force = Option.Boolean("--force", false, { description: "Replace a controller that still answers with models" });
  passphraseEnv = passphraseOptions().passphraseEnv;
  passphraseFile = passphraseOptions().passphraseFile;

  async run(): Promise<number> {
    const path = resolve(this.context.cwd, this.file);
    const header = await readHeader(path);
    const name = this.controllerName ?? header.controller.name;
    const cfg = await this.clientConfig();
    const entry: ControllerEntry | undefined = cfg.controllers[name];
    if (entry && !dataDirOf(entry))
      throw new UsageError(
        `controller "${name}" does not run on this host; restore-backup restores controllers on this host only for now`,
      );
    const old = entry?.addresses[0] ? /^(.+):(\d+)$/.exec(entry.addresses[0]) : undefined;
    const host = this.host ?? old?.[1]?.replace(/^\[|\]$/g, "") ?? "127.0.0.1";
    const port = this.port ?? (old ? Number(old[2]) : undefined);
    if (port === undefined)
      throw new UsageError(
        `controller "${name}" is not known here: give the port it listened on (--port), so its agents find it`,
      );
    const dataDir = dataDirOf(entry) ?? join(this.home, "controllers", name);
    const passphrase = await readPassphrase(this.context, this, false);
    const substrates = require("../../substrates") as typeof Substrates;
    // The file and passphrase first: a backup that does not open must not cost a running controller.
    await substrates.restoreLocalController({
      dataDir,
      backupFile: path,
      passphrase,
      listen: { host, port },
      checkOnly: true,
    });

    // A controller that still answers is asked what it holds; one with models is kept unless --force
    // (an empty one, e.g. bootstrapped again in its place, is replaced).
    let models: { name: string }[] | undefined;
    if (entry) {
      const client = new ControllerClient({
        addresses: entry.addresses,
        caCert: entry.caCert,
        user: entry.user,
        ...(entry.password ? { password: entry.password } : {}),
        ...(entry.token ? { token: entry.token } : {}),
        timeoutMs: 3000,
      });
      models = await client
        .call(routes.listModels, {})
        .then(
          (m) => m,
          () => undefined,
        )
        .finally(() => client.close());
      if (models && models.length > 0 && !this.force)
        throw new UsageError(
          `controller "${name}" is running with models (${models.map((m) => m.name).join(", ")}): restoring replaces them with the backup's; pass --force to do it`,
        );
    }
    const hasController = await stat(join(dataDir, substrates.dataFiles.config)).then(
      () => true,
      () => false,
    );
    // One that does not answer may hold anything: only with --force.
    if (hasController && models === undefined && !this.force)
      throw new UsageError(
        `${dataDir} still holds a controller that does not answer: pass --force to replace it with the backup`,
      );
    // Stop what may still run there (its supervisor first, so it does not start it again); agents keep running.
    for (const f of [substrates.dataFiles.supervisorPid, substrates.dataFiles.pid]) {
      const pid = await substrates.readPidFile(join(dataDir, f));
      if (pid) await substrates.stopProcess(pid, dataDir, 15_000);
    }
    if (!(await substrates.portFree(host, port)))
      throw new UsageError(
        `port ${port} on ${host} is in use: the controller must come back on it for its agents; stop what uses it`,
      );

    this.progress(
      `Restoring backup ${header.id} (controller "${header.controller.name}", store revision ${header.revision}, made ${header.createdAt}) into ${dataDir}`,
    );
    const res = await substrates.restoreLocalController({
      dataDir,
      backupFile: path,
      passphrase,
      listen: { host, port },
      force: hasController || this.force,
    });
    // On another address than before, this host's agents are told where it is now (SSH-installed ones are not yet).
    const wanted = [`${host.includes(":") ? `[${host}]` : host}:${port}`];
    const moved =
      entry !== undefined && entry.addresses.join(",") !== wanted.join(",")
        ? await substrates.repointLocalAgents(join(dataDir, substrates.dataFiles.machines), wanted)
        : 0;
    const addresses = await substrates.startLocalController(dataDir, res.caCert);
    cfg.controllers[name] = {
      ...(entry ?? { user: "admin" }),
      addresses,
      caCert: res.caCert,
      hosting: entry?.hosting ?? substrates.recordedLocalController(dataDir, header.controller.uuid),
    };
    cfg.current ??= name;
    await this.saveConfig(cfg);
    this.out(
      `Controller "${name}" restored from backup ${res.backupId} at ${addresses.join(", ")}: store revision ${res.revision}, ${res.keys} keys, models: ${res.models.join(", ") || "none"} (restore epoch ${res.epoch}).`,
    );
    if (moved > 0)
      this.out(
        `It listens on another address than before: ${moved} agents on this host were pointed at it (agents on other hosts must be told by hand: their agent.json's controllerAddresses).`,
      );
    this.out(
      "Agents reconnect with their credentials; anything written after the backup is gone and agents converge on the restored state.",
    );
    if (!entry?.password && !entry?.token) this.out(`Log in as a user the backup holds: steward login -c ${name}`);
    return 0;
  }
}

/** Reads the backup's plain header (magic, length, JSON) so errors about the file come before anything else. */
async function readHeader(path: string): Promise<HeaderView> {
  const fh = await open(path, "r").catch((e: Error) => {
    throw new UsageError(`cannot read ${path}: ${e.message}`);
  });
  try {
    const magic = "STEWARD-BACKUP\n";
    const head = Buffer.alloc(magic.length + 4);
    const { bytesRead } = await fh.read(head, 0, head.length, 0);
    if (bytesRead < head.length || head.subarray(0, magic.length).toString() !== magic)
      throw new UsageError(`${path} is not a Steward backup file`);
    const len = head.readUInt32BE(magic.length);
    if (len > 64 * 1024) throw new UsageError(`${path}: the backup's header is damaged`);
    const body = Buffer.alloc(len);
    const got = await fh.read(body, 0, len, head.length);
    if (got.bytesRead < len) throw new UsageError(`${path} is truncated: its header is cut short`);
    const h = JSON.parse(body.toString("utf8")) as HeaderView;
    if (h.format !== 1)
      throw new UsageError(
        `${path} is a backup in format version ${String(h.format)}; this steward restores format 1 only`,
      );
    return h;
  } catch (err) {
    if (err instanceof SyntaxError) throw new UsageError(`${path}: the backup's header is damaged (not JSON)`);
    throw err;
  } finally {
    await fh.close();
  }
}
