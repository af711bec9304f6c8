/** Where the page is, kept in the URL's hash so links, reloads and the back button work. */
export type Route =
  | { view: "models" }
  | { view: "model"; model: string }
  | { view: "application"; model: string; app: string }
  | { view: "unit"; model: string; unit: string }
  /** The model's secrets: metadata, and a value on an explicit reveal. */
  | { view: "secrets"; model: string }
  | { view: "controller" }
  /** The console starts in `model`, the one the page showed when it was opened. */
  | { view: "console"; model?: string };

export function parseRoute(hash: string): Route {
  const parts = hash
    .replace(/^#\/?/, "")
    .split("/")
    .filter(Boolean)
    .map((p) => {
      try {
        return decodeURIComponent(p);
      } catch {
        return p;
      }
    });
  const [first, model, kind, a, b] = parts;
  if (first === "controller") return { view: "controller" };
  if (first === "console") return model ? { view: "console", model } : { view: "console" };
  if (first === "models" && model) {
    if (kind === "applications" && a) return { view: "application", model, app: a };
    if (kind === "units" && a && b) return { view: "unit", model, unit: `${a}/${b}` };
    if (kind === "secrets") return { view: "secrets", model };
    return { view: "model", model };
  }
  return { view: "models" };
}

export function href(r: Route): string {
  const e = encodeURIComponent;
  switch (r.view) {
    case "models":
      return "#/";
    case "model":
      return `#/models/${e(r.model)}`;
    case "application":
      return `#/models/${e(r.model)}/applications/${e(r.app)}`;
    case "unit":
      return `#/models/${e(r.model)}/units/${r.unit.split("/").map(e).join("/")}`;
    case "secrets":
      return `#/models/${e(r.model)}/secrets`;
    case "controller":
      return "#/controller";
    case "console":
      return r.model ? `#/console/${e(r.model)}` : "#/console";
  }
}
