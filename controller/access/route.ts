/**
 * One way to serve a route of the table in api/routes.ts: `route(routes.deploy, handler)` checks
 * who is calling against the route's `access` (resolving the model named by `:model`), checks the
 * path parameters, parses the body with the route's schema, and types what the handler answers.
 * Handlers hold only what their route does; who may call it is written once, in the table.
 * It admits a request, so it lives in access/, which server/, migration/ and the dashboard all may import.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { z } from "zod";
import type { AnswerOf, ParamsOf, ParsedBodyOf, RouteSpec, SchemaName } from "../../api";
import * as contract from "../../api";
import { ENROLMENT_HEADER, StewardError, notFound, parseRequest } from "../../api";
import type { MigrationDoc, ModelIndex, StateCache } from "../state";
import type { Principal } from "./auth";
import { authenticate, requireModelAccess, requireSuperuser, requireUser, requireWriteOnSomeModel } from "./auth";
import { mayFollow, migrationOf } from "./moved-models";

type UserPrincipal = Extract<Principal, { kind: "user" }>;
type ModelAccessRule = "model:read" | "model:write" | "model:admin";

/** Who the handler is serving: a user for every rule but these. */
type PrincipalFor<R extends RouteSpec> = R["access"] extends "public" | "enrolment" | "staged-agent"
  ? undefined
  : R["access"] extends "user-or-agent"
    ? Principal
    : UserPrincipal;
/** The model named by `:model`: always there for model rules and superuser routes on a model; maybe gone (moved) for `model:follow`. */
type ModelFor<R extends RouteSpec> = R["access"] extends "model:follow"
  ? ModelIndex | undefined
  : R["path"] extends `${string}/:model${string}`
    ? ModelIndex
    : undefined;
/** Query parameters as they arrive: text, or several texts for a repeated one. */
type QueryIn<R extends RouteSpec> = R extends { query: readonly (infer Q extends string)[] }
  ? Partial<Record<Q, string | string[]>>
  : Record<string, never>;

export interface RouteCall<R extends RouteSpec> {
  req: FastifyRequest;
  reply: FastifyReply;
  principal: PrincipalFor<R>;
  model: ModelFor<R>;
  /** `model:follow`: the model's last migration, if it had one (also once it moved away). */
  migration: R["access"] extends "model:follow" ? MigrationDoc | undefined : undefined;
  /** `enrolment`: the token from the enrolment header, well-formed but not yet redeemed. */
  enrolmentToken: R["access"] extends "enrolment" ? string : undefined;
  params: ParamsOf<R>;
  body: ParsedBodyOf<R>;
  query: QueryIn<R>;
  /**
   * Waits until this replica's cache has seen `revision`: a read right after a write sees it. Resolves
   * with the route's model as the cache holds it now: a resync meanwhile replaces the index `model`
   * gave, and that one lacks the write (seen under load: "application not found" right after a deploy).
   */
  settled(revision: number): Promise<ModelFor<R>>;
}

/** The answer, or the reply when the handler answered through it (raw routes, a HEAD, another status). */
export type RouteHandler<R extends RouteSpec> = (call: RouteCall<R>) => Promise<AnswerOf<R> | FastifyReply>;

export interface RouteOptions {
  /** The largest body taken, in bytes (Fastify's default otherwise). */
  bodyLimit?: number;
  /** Runs before anything is checked (the session's logout clears the cookie even when the session has ended). */
  beforeAccess?: (reply: FastifyReply) => void;
}

export type Route = <R extends RouteSpec>(spec: R, handler: RouteHandler<R>, options?: RouteOptions) => void;

/** The `route()` of `app`, checking callers against `cache`. */
export function routeOn(app: FastifyInstance, cache: StateCache): Route {
  return (spec, handler, options = {}) => {
    app.route({
      method: typeof spec.method === "string" ? spec.method : [...spec.method],
      url: spec.path,
      ...(options.bodyLimit ? { bodyLimit: options.bodyLimit } : {}),
      ...(spec.secretAnswer ? { config: { secretAnswer: true } } : {}),
      handler: async (req, reply) => {
        options.beforeAccess?.(reply);
        const params = (req.params ?? {}) as Record<string, string>;
        const who = checkAccess(cache, spec, req, params.model);
        for (const [name, rule] of Object.entries(spec.params ?? {})) {
          const v = params[name];
          const schema = schemaNamed(rule.schema);
          if (schema.safeParse(v).success) continue;
          if (rule.refusal === "invalid-request") parseRequest(schema, v, rule.what);
          throw notFound(rule.what, String(v));
        }
        const body = spec.body ? parseRequest(schemaNamed(spec.body), req.body, spec.what) : undefined;
        // A superuser's route on a model looks the model up last: a bad body is told so first.
        if (spec.access === "superuser" && params.model !== undefined) who.model = modelNamed(cache, params.model);
        reply.code(spec.status);
        const call = {
          req,
          reply,
          ...who,
          params,
          body,
          query: req.query ?? {},
          settled: async (revision: number) => {
            await cache.waitForRevision(revision);
            return who.model && (cache.models.get(who.model.uuid) ?? who.model);
          },
        };
        return handler(call as unknown as RouteCall<typeof spec>);
      },
    });
  };
}

interface Checked {
  principal?: Principal;
  model?: ModelIndex;
  migration?: MigrationDoc;
  enrolmentToken?: string;
}

/** Refuses a caller the route's access rule does not let in; returns who it is and the model it named. */
function checkAccess(cache: StateCache, spec: RouteSpec, req: FastifyRequest, modelName: string | undefined): Checked {
  const principal = (): Principal => authenticate(cache, req.headers, { method: req.method });
  switch (spec.access) {
    case "public":
    case "staged-agent":
      return {};
    case "enrolment":
      return { enrolmentToken: enrolmentTokenOf(req) };
    case "user":
      return { principal: requireUser(principal()) };
    case "user-or-agent":
      return { principal: principal() };
    case "superuser": {
      const p = principal();
      requireSuperuser(p);
      return { principal: p };
    }
    case "model:write-any": {
      const p = principal();
      requireWriteOnSomeModel(p, cache);
      return { principal: p };
    }
    case "model:follow": {
      const p = requireUser(principal());
      const name = modelName!;
      const idx = cache.findModel(name);
      const migration = idx ? cache.migrations.get(idx.uuid) : migrationOf(cache, name);
      if (idx) requireModelAccess(p, idx, "read", name);
      else if (!migration || !mayFollow(p, migration)) throw notFound("model", name);
      return { principal: p, model: idx, migration };
    }
    default: {
      const needed = spec.access satisfies ModelAccessRule;
      const p = principal();
      const idx = modelNamed(cache, modelName!);
      requireModelAccess(
        p,
        idx,
        needed === "model:read" ? "read" : needed === "model:write" ? "write" : "admin",
        modelName,
      );
      return { principal: requireUser(p), model: idx };
    }
  }
}

/** The schema the route table names (api/schemas.ts). */
function schemaNamed(name: SchemaName): z.ZodType {
  return contract[name];
}

/** The model `name` (or uuid) names, or the not-found a model nobody may see gets. */
function modelNamed(cache: StateCache, name: string): ModelIndex {
  const idx = cache.findModel(name);
  if (!idx) throw notFound("model", name);
  return idx;
}

/** The enrolment token a cloud instance sends in a header, never in a URL (proxies log URLs). */
function enrolmentTokenOf(req: FastifyRequest): string {
  const v = req.headers[ENROLMENT_HEADER];
  if (typeof v !== "string" || !/^[A-Za-z0-9_-]{20,100}$/.test(v))
    throw new StewardError("unauthorized", `an enrolment token is needed in the ${ENROLMENT_HEADER} header`);
  return v;
}

/** A true-or-false query parameter (`force=true`); anything else is refused, naming it. */
export function flag(query: Partial<Record<string, string | string[]>>, name: string): boolean {
  const v = query[name];
  if (v === undefined || v === "false") return false;
  if (v === "true") return true;
  throw new StewardError("invalid-request", `query "${name}" must be true or false, got "${String(v)}"`, {
    details: { field: name },
  });
}
