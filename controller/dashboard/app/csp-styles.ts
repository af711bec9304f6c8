/**
 * xterm.js writes its theme and cell sizes into `<style>` elements, which the dashboard's
 * Content-Security-Policy (`style-src 'self'`, nothing inline) refuses. Instead of weakening the
 * policy, the page hands xterm stand-ins whose text goes into constructable style sheets (CSSOM,
 * which the policy allows): same styles, nothing inline.
 */
export function routeStyleElementsToSheets(doc: Document = document): void {
  const create = doc.createElement.bind(doc);
  doc.createElement = ((tag: string, options?: ElementCreationOptions) =>
    tag.toLowerCase() === "style" ? styleStandIn(doc, create) : create(tag, options)) as Document["createElement"];
}

function styleStandIn(doc: Document, create: Document["createElement"]): HTMLElement {
  const el = create("steward-style");
  el.hidden = true;
  const sheet = new CSSStyleSheet();
  let text = "";
  doc.adoptedStyleSheets = [...doc.adoptedStyleSheets, sheet];
  Object.defineProperty(el, "textContent", {
    get: () => text,
    set: (v: string | null) => {
      text = v ?? "";
      sheet.replaceSync(text);
    },
  });
  Object.defineProperty(el, "innerText", {
    get: () => text,
    set: (v: string) => {
      text = v;
      sheet.replaceSync(text);
    },
  });
  const remove = el.remove.bind(el);
  el.remove = () => {
    doc.adoptedStyleSheets = doc.adoptedStyleSheets.filter((s) => s !== sheet);
    remove();
  };
  return el;
}
