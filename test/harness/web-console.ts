/**
 * A client of the dashboard's console pane (`/v1/console`), as the page's xterm.js uses it: keys
 * in, output out, over a real WebSocket; for tests of the console on any controller.
 */
import WebSocket from "ws";
import type { ConsoleMessage } from "../../api";
import { CONTROLLER_TLS_NAME } from "../../api";
import { eventually } from "./eventually";
import { rawRequest } from "./http";

export interface WebConsole {
  ws: WebSocket;
  messages: ConsoleMessage[];
  /** The output so far as a screen shows it, escape sequences and carriage returns removed. */
  screen(): string;
  /** Where the screen ends now, to wait for what comes after. */
  mark(): number;
  type(keys: string): void;
  waitFor(what: RegExp, since?: number): Promise<void>;
  closed: Promise<{ code: number; reason: string }>;
}

/** A refused console: the HTTP status and error body of the upgrade's answer. */
export type ConsoleRefusal = Error & { status?: number; body?: { code: string; message: string } };

export async function loginToken(address: string, caCert: string, user: string, password: string): Promise<string> {
  const r = await rawRequest(address, caCert, "POST", "/v1/login", JSON.stringify({ user, password }));
  if (r.status !== 200) throw new Error(`login as ${user}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.token as string;
}

/**
 * Opens a console on the controller at `address`; rejects with a {@link ConsoleRefusal} when it is
 * refused. `onSocket` sees the socket at once (to close it whatever happens).
 */
export function openConsole(
  address: string,
  caCert: string,
  headers: Record<string, string>,
  o: { origin?: string; waitMs?: number; onSocket?: (ws: WebSocket) => void } = {},
): Promise<WebConsole> {
  const ws = new WebSocket(`wss://${address}/v1/console`, {
    ca: caCert,
    servername: CONTROLLER_TLS_NAME,
    headers,
    ...(o.origin ? { origin: o.origin } : {}),
  } as WebSocket.ClientOptions);
  o.onSocket?.(ws);
  const messages: ConsoleMessage[] = [];
  let out = "";
  ws.on("message", (data) => {
    const m = JSON.parse(data.toString()) as ConsoleMessage;
    messages.push(m);
    if ("output" in m) out += m.output;
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.once("close", (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  const screen = (): string => out.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, "").replace(/\r/g, "");
  const con: WebConsole = {
    ws,
    messages,
    screen,
    closed,
    mark: () => screen().length,
    type: (keys) => ws.send(JSON.stringify({ input: keys })),
    waitFor: (what, since = 0) =>
      eventually(`the console to show ${what}`, () => what.test(screen().slice(since)), o.waitMs ?? 45_000).then(
        () => undefined,
        (err: Error) => {
          throw new Error(`${err.message}; it shows ${JSON.stringify(screen().slice(since).slice(-600))}`);
        },
      ),
  };
  return new Promise((resolve, reject) => {
    ws.once("open", () => resolve(con));
    ws.once("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (d: Buffer) => {
        body += d.toString();
      });
      res.on("end", () => {
        let parsed: ConsoleRefusal["body"];
        try {
          parsed = JSON.parse(body) as ConsoleRefusal["body"];
        } catch {
          parsed = { code: "?", message: body };
        }
        reject(
          Object.assign(new Error(`console refused: ${res.statusCode} ${body}`), {
            status: res.statusCode,
            body: parsed,
          }),
        );
      });
    });
    ws.once("error", reject);
  });
}
