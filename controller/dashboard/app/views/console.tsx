/**
 * The console shell of the CLI, in the page (xterm.js over `/v1/console`): it runs on the controller
 * as the logged-in user, with that user's permissions, for what the pages do not do yet.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { FitAddon } from "@xterm/addon-fit";
import { Terminal } from "@xterm/xterm";
import { CONSOLE_CLOSE_CODES } from "../../../../api/browser";

/** `model`: the model the page showed, which the console starts in (its prompt says so). */
export function ConsoleView({ model }: { model: string | undefined }) {
  const box = useRef<HTMLDivElement>(null);
  const [state, setState] = useState<"connecting" | "open" | "ended">("connecting");
  const [note, setNote] = useState("");
  const [generation, setGeneration] = useState(0);
  useEffect(() => {
    const term = new Terminal({
      cursorBlink: true,
      fontSize: 13,
      fontFamily: "ui-monospace, 'DejaVu Sans Mono', Menlo, monospace",
      theme: { background: "#0f172a", foreground: "#e2e8f0", cursor: "#38bdf8" },
    });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.open(box.current!);
    fit.fit();
    const query = model ? `?model=${encodeURIComponent(model)}` : "";
    const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/v1/console${query}`);
    const send = (msg: unknown): void => {
      if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(msg));
    };
    ws.onopen = () => {
      setState("open");
      send({ resize: { cols: term.cols, rows: term.rows } });
      term.focus();
    };
    ws.onmessage = (e: MessageEvent<string>) => {
      const msg = JSON.parse(e.data) as { output?: string; exit?: number; error?: { message: string } };
      if (msg.output !== undefined) term.write(msg.output);
      if (msg.error) setNote(msg.error.message);
      if (msg.exit !== undefined) setNote(`The console ended (exit ${msg.exit}).`);
    };
    ws.onclose = (e: CloseEvent) => {
      setState("ended");
      if (e.code === CONSOLE_CLOSE_CODES.tokenEnded)
        setNote("Your session ended (logged out, or the password changed): log in again for a console.");
      else if (e.reason) setNote(e.reason);
    };
    // A frame holds at most 64 KiB: a big paste goes in pieces (16,384 characters are at most 64 KiB of UTF-8).
    const input = term.onData((data) => {
      for (let i = 0; i < data.length; i += 16_384) send({ input: data.slice(i, i + 16_384) });
    });
    const resized = term.onResize(({ cols, rows }) => send({ resize: { cols, rows } }));
    const onWindowResize = (): void => fit.fit();
    window.addEventListener("resize", onWindowResize);
    return () => {
      window.removeEventListener("resize", onWindowResize);
      input.dispose();
      resized.dispose();
      ws.close();
      term.dispose();
    };
  }, [generation, model]);
  return (
    <div class="stack console-page">
      <div class="page-head">
        <h1>Console</h1>
        <p class="muted">
          The <code>steward</code> console, running on the controller as you: type <code>help</code>,{" "}
          <code>use MODEL</code>, any command; Tab completes; Ctrl-C cancels. Commands that read local files need the
          CLI on your own machine.
        </p>
      </div>
      <div class="terminal" ref={box} data-state={state} />
      {state === "ended" ? (
        <p class="muted">
          {note || "The console ended."}{" "}
          <button
            type="button"
            class="btn btn-plain"
            onClick={() => {
              setNote("");
              setState("connecting");
              setGeneration(generation + 1);
            }}
          >
            Start a new console
          </button>
        </p>
      ) : note ? (
        <p class="muted">{note}</p>
      ) : null}
    </div>
  );
}
