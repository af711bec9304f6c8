/**
 * Serves the dashboard (a single page, built by esbuild into `dashboard/` beside the controller's
 * code) at `/`, with a strict Content-Security-Policy: scripts, styles and connections from this
 * controller only, nothing inline, no frames. The files are read once, at start-up.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { FastifyInstance, FastifyReply } from "fastify";
import type { Logger } from "../../api";
import { StewardError } from "../../api";

/** What the page may load: its own script and styles, and connections back to this controller. */
export const DASHBOARD_CSP = [
  "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "font-src 'self'",
  "connect-src 'self'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
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
  "index.html": "text/html; charset=utf-8",
  "app.js": "text/javascript; charset=utf-8",
  "app.css": "text/css; charset=utf-8",
};

interface Asset { body: Buffer; type: string; etag: string }

/** Where the built page is: beside the bundle (dist/controller-bundle) or the compiled tree (dist/controller/dashboard). */
export function dashboardDir(): string | undefined {
  return [join(__dirname, "..", "dashboard"), join(__dirname, "..", "..", "dashboard")].find((d) => existsSync(join(d, "index.html")));
}

export function registerDashboard(app: FastifyInstance, o: { log: Logger; dir?: string }): void {
  const dir = o.dir ?? dashboardDir();
  const assets = new Map<string, Asset>();
  if (dir) {
    for (const [name, type] of Object.entries(TYPES)) {
      const body = readFileSync(join(dir, name));
      assets.set(name, { body, type, etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"` });
    }
  } else {
    o.log.warn("the dashboard is not built into this controller (no dashboard/index.html): / answers 404");
  }
  const serve = (name: string, ifNoneMatch: string | undefined, reply: FastifyReply): FastifyReply => {
    const a = assets.get(name);
    if (!a) throw new StewardError("not-found", name === "index.html" ? "the dashboard is not built into this controller (run npm run build)" : `no dashboard file ${name}`);
    reply.headers({ ...SECURITY_HEADERS, "cache-control": "no-cache", etag: a.etag });
    if (ifNoneMatch === a.etag) return reply.code(304).send();
    return reply.type(a.type).send(a.body);
  };
  app.get("/", async (req, reply) => serve("index.html", req.headers["if-none-match"], reply));
  app.get("/dashboard/:file", async (req, reply) => {
    const file = (req.params as { file: string }).file;
    if (file === "index.html" || !TYPES[file]) throw new StewardError("not-found", `no dashboard file ${file.slice(0, 100)}`);
    return serve(file, req.headers["if-none-match"], reply);
  });
}
