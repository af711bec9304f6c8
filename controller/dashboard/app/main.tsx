/**
 * The dashboard: a single page served by every controller replica. It logs in with a Steward user
 * (the session in an HttpOnly cookie), follows what the current view shows over one WebSocket, and
 * reads the rest through the same REST API as the CLI.
 */
import { render } from "preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import type { SessionInfo } from "../../../api/browser";
import { routeStyleElementsToSheets } from "./csp-styles";
import { ApiError, currentSession, logOut, whenSessionEnds } from "./http";
import { LiveClient } from "./live";
import type { Route } from "./router";
import { href, parseRoute } from "./router";
import { ApplicationView } from "./views/application";
import { ControllerView } from "./views/controller";
import { LoginView } from "./views/login";
import { ModelView } from "./views/model";
import { ModelsView } from "./views/models";
import { SecretsView } from "./views/secrets";
import { UnitView } from "./views/unit";
import { ControllerSwitcher } from "./switcher";

routeStyleElementsToSheets();

function topicsOf(r: Route): string[] {
  switch (r.view) {
    case "models":
      return ["models"];
    case "model":
      return ["models", `model:${r.model}`, `storage:${r.model}`];
    case "application":
      return ["models", `model:${r.model}`];
    case "unit":
      return ["models", `unit:${r.model}/${r.unit}`, `storage:${r.model}`];
    case "secrets":
      return ["models", `secrets:${r.model}`];
    case "controller":
      return ["models", "controller"];
    case "console":
      return ["models"];
  }
}

/** xterm.js is most of the page's code: it loads only when the console is opened. */
function LazyConsole({ model }: { model: string | undefined }) {
  const [View, setView] = useState<((p: { model: string | undefined }) => preact.JSX.Element) | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  useEffect(() => {
    import("./views/console").then(
      (m) => setView(() => m.ConsoleView),
      (err: unknown) => setError(String(err)),
    );
  }, []);
  if (error) return <p class="error-note">The console could not load: {error}</p>;
  return View ? <View model={model} /> : <p class="loading">Loading the console…</p>;
}

function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const f = (): void => setRoute(parseRoute(location.hash));
    window.addEventListener("hashchange", f);
    return () => window.removeEventListener("hashchange", f);
  }, []);
  return route;
}

function Dashboard({ session, onEnded }: { session: SessionInfo; onEnded: () => void }) {
  const route = useRoute();
  const live = useMemo(() => new LiveClient(onEnded), []);
  const [, setTick] = useState(0);
  useEffect(() => live.subscribe(() => setTick((t) => t + 1)), [live]);
  useEffect(() => () => live.close(), [live]);
  useEffect(() => live.follow(topicsOf(route)), [route]);
  const s = live.state;
  const modelName = "model" in route ? route.model : undefined;
  const inConsole = route.view === "console";
  const access = modelName ? s.models?.find((m) => m.name === modelName)?.access : undefined;
  const canWrite = access === "write" || access === "admin";
  const modelError = modelName ? s.errors.get(`model:${modelName}`) : undefined;
  let body;
  switch (route.view) {
    case "models":
      body = <ModelsView models={s.models} />;
      break;
    case "model":
      body = modelError ? (
        <p class="error-note">{modelError.message}</p>
      ) : (
        <ModelView name={route.model} status={s.status.get(route.model)} storage={s.storage.get(route.model)} />
      );
      break;
    case "application":
      body = modelError ? (
        <p class="error-note">{modelError.message}</p>
      ) : (
        <ApplicationView model={route.model} app={route.app} status={s.status.get(route.model)} canWrite={canWrite} />
      );
      break;
    case "unit":
      body = (
        <UnitView
          model={route.model}
          unit={route.unit}
          details={s.units.get(`${route.model}/${route.unit}`)}
          storage={s.storage.get(route.model)?.filter((x) => x.unit === route.unit)}
          error={s.errors.get(`unit:${route.model}/${route.unit}`)}
          canWrite={canWrite}
        />
      );
      break;
    case "secrets":
      body = (
        <SecretsView
          model={route.model}
          secrets={s.secrets.get(route.model)}
          error={s.errors.get(`secrets:${route.model}`)}
        />
      );
      break;
    case "controller":
      body = <ControllerView info={s.controller} />;
      break;
    case "console":
      body = <LazyConsole model={route.model} />;
      break;
  }
  const nav = (r: Route, label: string, on: boolean) => (
    <a class={`nav-link${on ? " nav-on" : ""}`} href={href(r)}>
      {label}
    </a>
  );
  return (
    <div class="shell">
      <header class="topbar">
        <a class="brand" href="#/">
          Steward
        </a>
        <ControllerSwitcher current={session.controller} />
        <nav class="nav">
          {nav(
            { view: "models" },
            "Models",
            ["models", "model", "application", "unit", "secrets"].includes(route.view),
          )}
          {nav({ view: "controller" }, "Controller", route.view === "controller")}
          {nav({ view: "console", ...(modelName ? { model: modelName } : {}) }, "Console", inConsole)}
        </nav>
        {modelName && s.models ? (
          <select
            class="model-pick"
            aria-label="Model"
            value={modelName}
            onChange={(e) => {
              const model = (e.target as HTMLSelectElement).value;
              // In the console, another model is a new console in it.
              location.hash = href(inConsole ? { view: "console", model } : { view: "model", model });
            }}
          >
            {s.models.map((m) => (
              <option key={m.uuid} value={m.name}>
                {m.name}
              </option>
            ))}
          </select>
        ) : null}
        <span
          class={`live-dot${s.connected ? " live-on" : ""}`}
          title={s.connected ? "live: changes appear as they happen" : "reconnecting…"}
        >
          {s.connected ? "live" : "reconnecting"}
        </span>
        <span class="who">
          {session.user}
          {session.superuser ? " (superuser)" : access ? ` (${access})` : ""}
        </span>
        <button type="button" class="btn btn-plain" onClick={() => void logOut().then(onEnded)}>
          Log out
        </button>
      </header>
      <main class="content">{body}</main>
    </div>
  );
}

function App() {
  const [session, setSession] = useState<SessionInfo | undefined | null>(undefined);
  const [notice, setNotice] = useState<string | undefined>(undefined);
  useEffect(() => {
    whenSessionEnds(() => {
      setNotice("Your session ended: log in again.");
      setSession(null);
    });
    currentSession().then(
      (s) => setSession(s ?? null),
      (err: unknown) => {
        setNotice(err instanceof ApiError ? err.message : String(err));
        setSession(null);
      },
    );
  }, []);
  if (session === undefined) return <p class="boot">Loading…</p>;
  if (session === null)
    return (
      <LoginView
        notice={notice}
        onLogin={(s) => {
          setNotice(undefined);
          setSession(s);
        }}
      />
    );
  return <Dashboard key={session.csrf} session={session} onEnded={() => setSession(null)} />;
}

render(<App />, document.getElementById("root")!);
