/**
 * Serves the dashboard (a single page, built by esbuild into `dashboard/` beside the controller's
 * code) at `/`, with a strict Content-Security-Policy: scripts, styles and connections from this
 * controller only, nothing inline, no frames. The files are read once, at start-up.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { join } from "node:path";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "../../api";
import { StewardError, routes } from "../../api";
import type { StateCache } from "../state";
import { routeOn } from "../access/route";

/** What the page may load: its own script and styles, and connections back to this controller. */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy": DASHBOARD_CSP,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
};
/** The files esbuild writes: the page, its entry script and styles, and the chunks loaded on demand (the console's xterm.js). */
const ASSET_NAME = /^(index\.html|app\.js|app\.css|chunk-[A-Z0-9]{8}\.js)$/;

interface Asset {
  body: Buffer;
  gzipped: Buffer;
  type: string;
  etag: string;
}

/** Where the built page is: beside the bundle (dist/controller-bundle) or the compiled tree (dist/controller/dashboard). */
export function dashboardDir(): string | undefined {
  return [join(__dirname, "..", "dashboard"), join(__dirname, "..", "..", "dashboard")].find((d) =>
    existsSync(join(d, "index.html")),
  );
}

export function registerDashboard(app: FastifyInstance, o: { cache: StateCache; log: Logger; dir?: string }): void {
  const dir = o.dir ?? dashboardDir();
  const assets = new Map<string, Asset>();
  if (dir) {
    for (const name of readdirSync(dir).filter((n) => ASSET_NAME.test(n))) {
      const body = readFileSync(join(dir, name));
      const type = TYPES[name.slice(name.lastIndexOf("."))]!;
      // Compressed once here: the page's code is ~50 KB gzipped instead of ~400 KB.
      assets.set(name, {
        body,
        gzipped: gzipSync(body, { level: 9 }),
        type,
        etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`,
      });
    }
  } else {
    o.log.warn("the dashboard is not built into this controller (no dashboard/index.html): / answers 404");
  }
  const serve = (name: string, req: FastifyRequest, reply: FastifyReply): FastifyReply => {
    const a = assets.get(name);
    if (!a)
      throw new StewardError(
        "not-found",
        name === "index.html"
          ? "the dashboard is not built into this controller (run npm run build)"
          : `no dashboard file ${name.slice(0, 100)}`,
      );
    reply.headers({ ...SECURITY_HEADERS, "cache-control": "no-cache", etag: a.etag, vary: "accept-encoding" });
    if (req.headers["if-none-match"] === a.etag) return reply.code(304).send();
    const gzip = /\bgzip\b/.test(String(req.headers["accept-encoding"] ?? ""));
    if (gzip) reply.header("content-encoding", "gzip");
    return reply.type(a.type).send(gzip ? a.gzipped : a.body);
  };
  const route = routeOn(app, o.cache);
  route(routes.dashboardPage, async ({ req, reply }) => serve("index.html", req, reply));
  route(routes.dashboardFile, async ({ req, reply, params: { file } }) =>
    serve(file === "index.html" ? "" : file, req, reply),
  );
}
