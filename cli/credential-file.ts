/**
 * Reading a credential's attributes for `steward add-credential`: from a file (JSON, YAML or an
 * INI file such as ~/.aws/credentials, one profile of it), from the environment as the cloud's own
 * tools read it, or, for SSH, a private key file. Values never come from the command line (`ps`).
 */
import { UsageError } from "clipanion";
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import type { CredentialSubstrate } from "../api/core";
import { CREDENTIAL_KINDS } from "../api/core";
import type { StewardContext } from "./context";

/** `aws_secret_access_key`, `secret_access_key` and `secret-access-key` all name the same attribute. */
function attributeName(substrate: CredentialSubstrate, key: string): string {
  return key
    .trim()
    .toLowerCase()
    .replace(new RegExp(`^${substrate}[_-]`), "")
    .replace(/_/g, "-");
}

function fromIni(text: string, profile: string, path: string): Record<string, string> {
  const sections = new Map<string, Record<string, string>>();
  let current = sections.get("") ?? {};
  sections.set("", current);
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line || line.startsWith("#") || line.startsWith(";")) continue;
    const header = /^\[\s*(?:profile\s+)?([^\]]+?)\s*\]$/.exec(line);
    if (header) {
      current = {};
      sections.set(header[1]!, current);
      continue;
    }
    const eq = line.indexOf("=");
    if (eq < 0) throw new UsageError(`${path}: cannot read the line "${line.slice(0, 40)}": expected key = value`);
    current[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  const named = sections.get(profile);
  if (named) return named;
  if (sections.size === 1) return sections.get("")!;
  throw new UsageError(
    `${path} has no profile "${profile}" (it has ${[...sections.keys()].filter(Boolean).join(", ")}): choose one with --profile`,
  );
}

async function parseFile(text: string, path: string, profile: string): Promise<Record<string, unknown>> {
  const trimmed = text.trimStart();
  if (trimmed.startsWith("{")) {
    try {
      return JSON.parse(text) as Record<string, unknown>;
    } catch (err) {
      throw new UsageError(`${path} is not valid JSON: ${(err as Error).message}`);
    }
  }
  if (/^\s*\[/m.test(text) || /^[\w.-]+\s*=/m.test(text)) return fromIni(text, profile, path);
  const { parse } = await import("yaml");
  let v: unknown;
  try {
    v = parse(text);
  } catch (err) {
    throw new UsageError(`${path} is not valid YAML: ${(err as Error).message}`);
  }
  if (!v || typeof v !== "object" || Array.isArray(v))
    throw new UsageError(`${path} must hold attribute: value pairs (JSON, YAML or key = value lines)`);
  return v as Record<string, unknown>;
}

export interface CredentialSource {
  file?: string | undefined;
  profile: string;
  fromEnv: boolean;
  user?: string | undefined;
}

export async function readCredentialAttributes(
  ctx: StewardContext,
  substrate: CredentialSubstrate,
  src: CredentialSource,
): Promise<Record<string, string>> {
  const kind = CREDENTIAL_KINDS[substrate];
  const out: Record<string, string> = {};
  if (src.file && src.fromEnv) throw new UsageError("give --file or --from-env, not both");
  if (src.fromEnv) {
    if (!kind.env) throw new UsageError(`a ${substrate} credential cannot be read from the environment: give --file`);
    for (const [attr, variable] of Object.entries(kind.env)) if (ctx.env[variable]) out[attr] = ctx.env[variable];
    const missing = kind.required.filter((a) => !out[a]);
    if (missing.length > 0)
      throw new UsageError(
        `--from-env: ${missing.map((a) => kind.env![a]).join(", ")} ${missing.length > 1 ? "are" : "is"} not set`,
      );
  } else if (src.file) {
    const path = resolve(ctx.cwd, src.file.replace(/^~(?=\/)/, ctx.env.HOME ?? "~"));
    const text = await readFile(path, "utf8").catch(() => {
      throw new UsageError(`cannot read ${path}`);
    });
    // A kind whose credential is a private key (ssh) takes the key file itself.
    if (kind.required.includes("private-key") && text.trimStart().startsWith("-----BEGIN")) {
      out["private-key"] = text;
    } else {
      for (const [k, v] of Object.entries(await parseFile(text, path, src.profile))) {
        if (typeof v !== "string" && typeof v !== "number") throw new UsageError(`${path}: "${k}" must be a string`);
        out[attributeName(substrate, k)] = String(v);
      }
    }
  } else {
    throw new UsageError(`where are the credential's values? Give --file F${kind.env ? " or --from-env" : ""}`);
  }
  if (src.user) out.user = src.user;
  return out;
}
