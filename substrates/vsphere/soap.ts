/**
 * A minimal client for the vSphere Web Services API (vim25, SOAP over HTTPS at `/sdk`): what the
 * vsphere substrate calls, nothing more. No dependency: requests are written with {@link toXml}
 * (every value escaped) and answers read with {@link parseXml}, a small non-validating parser for
 * the documents vCenter (and its simulator, vcsim) answer with: elements, attributes, namespaces
 * (for `xsi:type`, whatever the prefix: vcsim writes `XMLSchema-instance:type`), character
 * references and CDATA; a DOCTYPE (and so any entity definition) is refused.
 *
 * The session is a cookie (`vmware_soap_session`) from `SessionManager.Login`, made on first use;
 * a call answered `NotAuthenticated` (the session expired, vCenter restarted) logs in again once
 * and is retried. SOAP faults, and tasks that end in error, become {@link VsphereFault}s whose
 * message names the method and the fault (`vSphere Login failed: InvalidLogin: Login failure`).
 */
import { createHash } from "node:crypto";
import { Agent as HttpAgent, request as httpRequest } from "node:http";
import type { IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";

export interface VsphereConnectionOptions {
  /** The SDK endpoint, e.g. `https://vcenter.example.com/sdk` (http only with `insecure`). */
  url: string;
  user: string;
  password: string;
  /** The CA (PEM) that signs the endpoint's certificate, trusted instead of the system's. */
  caCert?: string;
  /** Accept any certificate (and plain http): for a self-signed test simulator only. */
  insecure?: boolean;
  /**
   * Per HTTP request, in ms.
   * @default 60000
   */
  timeoutMs?: number;
}

/** A managed object reference: `<obj type="VirtualMachine">vm-42</obj>`. */
export class MoRef {
  constructor(
    readonly type: string,
    readonly value: string,
  ) {}
  toString(): string {
    return `${this.type}:${this.value}`;
  }
}

/** A value sent with its `xsi:type` (OptionValue.value is `xsd:anyType`; a selectSet entry is a TraversalSpec). */
export class Typed {
  constructor(
    readonly xsiType: string,
    readonly value: XmlValue,
  ) {}
}

/** What {@link toXml} writes: an object's keys become child elements in order, an array repeats its element. */
export type XmlValue = string | number | boolean | MoRef | Typed | undefined | XmlValue[] | { [key: string]: XmlValue };

/** A SOAP fault, or a task's error: `fault` is the vim25 fault type (`InvalidLogin`, `InvalidPowerState`, …). */
export class VsphereFault extends Error {
  constructor(
    readonly fault: string,
    readonly method: string,
    readonly faultMessage: string,
    readonly detail?: XmlNode,
  ) {
    super(`vSphere ${method} failed: ${fault}${faultMessage ? `: ${faultMessage}` : ""}`);
    this.name = "VsphereFault";
  }
}

export const isFault = (err: unknown, ...faults: string[]): err is VsphereFault =>
  err instanceof VsphereFault && faults.includes(err.fault);

// ---- writing XML ----

const NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
// XML 1.0 cannot carry these at all, escaped or not.
const NOT_XML = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/;

export function escapeXml(s: string): string {
  if (NOT_XML.test(s))
    throw new Error(`cannot send ${JSON.stringify(s.slice(0, 40))} to vSphere: it holds characters XML cannot carry`);
  return s
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&apos;");
}

/** `<name>…</name>` for a value (nothing for undefined). */
export function toXml(name: string, v: XmlValue, xsiType?: string): string {
  if (!NAME.test(name)) throw new Error(`not an XML element name: ${JSON.stringify(name)}`);
  if (v === undefined) return "";
  if (Array.isArray(v)) return v.map((x) => toXml(name, x, xsiType)).join("");
  if (v instanceof Typed) return toXml(name, v.value, v.xsiType);
  const typeAttr = xsiType ? ` xsi:type="${escapeXml(xsiType)}"` : "";
  if (v instanceof MoRef) return `<${name}${typeAttr} type="${escapeXml(v.type)}">${escapeXml(v.value)}</${name}>`;
  if (typeof v === "object")
    return `<${name}${typeAttr}>${Object.entries(v)
      .map(([k, x]) => toXml(k, x))
      .join("")}</${name}>`;
  return `<${name}${typeAttr}>${escapeXml(String(v))}</${name}>`;
}

/** A string sent as `xsd:string` (an extraConfig value). */
export const xsdString = (s: string): Typed => new Typed("xsd:string", s);

// ---- reading XML ----

export interface XmlNode {
  /** The local name (no prefix). */
  name: string;
  /** Attributes as written (`type`, `xmlns:x`, …). */
  attrs: Record<string, string>;
  /** The `xsi:type`, its prefix dropped (`VirtualMachinePowerState`, `string`). */
  xsiType?: string;
  children: XmlNode[];
  /** The text directly inside the element, references resolved. */
  text: string;
}

const XSI = "http://www.w3.org/2001/XMLSchema-instance";
const MAX_DEPTH = 256;
const START = /<([A-Za-z_][\w.:-]*)/y;
const ATTRIBUTE = /\s*([A-Za-z_][\w.:-]*)\s*=\s*("([^"]*)"|'([^']*)')/y;
const END_OF_TAG = /\s*(\/?)>/y;
const ENTITIES: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"', apos: "'" };

function decodeEntities(s: string): string {
  if (!s.includes("&")) return s;
  return s.replace(/&([^;&\s]{1,10});/g, (whole, ref: string) => {
    if (ref.startsWith("#")) {
      const code = ref[1] === "x" || ref[1] === "X" ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      if (!Number.isInteger(code) || code < 0 || code > 0x10ffff)
        throw new Error(`bad XML character reference ${whole}`);
      return String.fromCodePoint(code);
    }
    const e = ENTITIES[ref];
    if (e === undefined) throw new Error(`unknown XML entity ${whole}`);
    return e;
  });
}

/** Parses a document into its root element (see the module comment for what is understood). */
export function parseXml(doc: string): XmlNode {
  let i = 0;
  const stack: { node: XmlNode; qname: string; ns: Map<string, string> }[] = [];
  let root: XmlNode | undefined;
  const fail = (why: string): never => {
    throw new Error(`malformed XML at offset ${i}: ${why}`);
  };
  const addText = (t: string): void => {
    const top = stack[stack.length - 1];
    if (top) top.node.text += t;
    else if (t.trim()) fail("text outside the root element");
  };
  while (i < doc.length) {
    const lt = doc.indexOf("<", i);
    if (lt < 0) {
      addText(decodeEntities(doc.slice(i)));
      break;
    }
    if (lt > i) addText(decodeEntities(doc.slice(i, lt)));
    i = lt;
    if (doc.startsWith("<?", i)) {
      const end = doc.indexOf("?>", i);
      if (end < 0) fail("unterminated processing instruction");
      i = end + 2;
      continue;
    }
    if (doc.startsWith("<!--", i)) {
      const end = doc.indexOf("-->", i);
      if (end < 0) fail("unterminated comment");
      i = end + 3;
      continue;
    }
    if (doc.startsWith("<![CDATA[", i)) {
      const end = doc.indexOf("]]>", i);
      if (end < 0) fail("unterminated CDATA");
      addText(doc.slice(i + 9, end));
      i = end + 3;
      continue;
    }
    if (doc.startsWith("<!", i)) fail("DOCTYPE and other declarations are not accepted");
    if (doc.startsWith("</", i)) {
      const end = doc.indexOf(">", i);
      if (end < 0) fail("unterminated end tag");
      const qname = doc.slice(i + 2, end).trim();
      const top = stack.pop();
      if (!top || top.qname !== qname) fail(`</${qname}> does not close <${top?.qname ?? "nothing"}>`);
      i = end + 1;
      continue;
    }
    // A start tag: name, attributes, then > or />.
    START.lastIndex = i;
    const m = START.exec(doc);
    if (!m) fail("bad start tag");
    const qname = m![1]!;
    i = START.lastIndex;
    const attrs: Record<string, string> = {};
    for (;;) {
      ATTRIBUTE.lastIndex = i;
      const a = ATTRIBUTE.exec(doc);
      if (!a) break;
      if (Object.hasOwn(attrs, a[1]!)) fail(`attribute ${a[1]} given twice`);
      attrs[a[1]!] = decodeEntities(a[3] ?? a[4] ?? "");
      i = ATTRIBUTE.lastIndex;
    }
    END_OF_TAG.lastIndex = i;
    const close = END_OF_TAG.exec(doc);
    if (!close) fail(`bad start tag <${qname}>`);
    i = END_OF_TAG.lastIndex;
    const ns = new Map(stack[stack.length - 1]?.ns ?? []);
    for (const [k, v] of Object.entries(attrs)) {
      if (k === "xmlns") ns.set("", v);
      else if (k.startsWith("xmlns:")) ns.set(k.slice(6), v);
    }
    const node: XmlNode = { name: qname.slice(qname.indexOf(":") + 1), attrs, children: [], text: "" };
    for (const [k, v] of Object.entries(attrs)) {
      const colon = k.indexOf(":");
      if (colon > 0 && k.slice(colon + 1) === "type" && ns.get(k.slice(0, colon)) === XSI)
        node.xsiType = v.slice(v.indexOf(":") + 1);
    }
    const parent = stack[stack.length - 1];
    if (parent) parent.node.children.push(node);
    else if (root) fail("a second root element");
    else root = node;
    if (!close![1]) {
      if (stack.length >= MAX_DEPTH) fail("elements nested too deep");
      stack.push({ node, qname, ns });
    }
  }
  if (stack.length) throw new Error(`malformed XML: <${stack[stack.length - 1]!.qname}> is not closed`);
  if (!root) throw new Error("malformed XML: no element");
  return root;
}

export const child = (n: XmlNode | undefined, name: string): XmlNode | undefined =>
  n?.children.find((c) => c.name === name);
export const children = (n: XmlNode | undefined, name: string): XmlNode[] =>
  n?.children.filter((c) => c.name === name) ?? [];
/** The node's text, or the text of its descendant at `path` (`a/b`). */
export function textAt(n: XmlNode | undefined, path?: string): string | undefined {
  let cur = n;
  for (const p of path ? path.split("/") : []) cur = child(cur, p);
  return cur?.text;
}
export function moRefOf(n: XmlNode | undefined): MoRef | undefined {
  return n && n.attrs.type ? new MoRef(n.attrs.type, n.text) : undefined;
}

/** An extraConfig answer (ArrayOfOptionValue) as key → value; a key given twice keeps its last value. */
export function optionValues(n: XmlNode | undefined): Map<string, string> {
  const out = new Map<string, string>();
  for (const o of n?.children ?? []) {
    const key = textAt(o, "key");
    if (key !== undefined) out.set(key, textAt(o, "value") ?? "");
  }
  return out;
}

/** One object of a property read: its reference and the properties asked for that are set (unset ones are absent). */
export interface ObjectContent {
  obj: MoRef;
  props: Map<string, XmlNode>;
}

// ---- the client ----

const SOAP_ACTION = "urn:vim25/6.5";
const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

export interface ServiceContent {
  rootFolder: MoRef;
  propertyCollector: MoRef;
  viewManager: MoRef;
  sessionManager: MoRef;
  searchIndex: MoRef;
  apiVersion: string;
}

export class VimClient {
  private readonly endpoint: URL;
  private readonly agent: HttpAgent | HttpsAgent;
  private cookie = "";
  private content?: Promise<ServiceContent>;
  /** The login under way or done; reset when the session is found gone. */
  private session?: Promise<void>;
  private closed = false;

  constructor(private readonly o: VsphereConnectionOptions) {
    let u: URL;
    try {
      u = new URL(o.url);
    } catch {
      throw new Error(`vSphere url ${JSON.stringify(o.url)} is not a URL (e.g. https://vcenter.example.com/sdk)`);
    }
    if (u.protocol !== "https:" && !(u.protocol === "http:" && o.insecure))
      throw new Error(`vSphere url ${o.url} must be https:// (http only with insecure, for a test simulator)`);
    if (u.username || u.password)
      throw new Error("give the vSphere user and password as the credential, not in the url");
    if (u.pathname === "/" || u.pathname === "") u.pathname = "/sdk";
    this.endpoint = u;
    this.agent =
      u.protocol === "https:"
        ? new HttpsAgent({
            keepAlive: true,
            maxSockets: 4,
            ...(o.insecure ? { rejectUnauthorized: false } : o.caCert ? { ca: o.caCert } : {}),
          })
        : new HttpAgent({ keepAlive: true, maxSockets: 4 });
  }

  /** Where this client connects (its url, without credentials). */
  get url(): string {
    return this.endpoint.href;
  }

  /** A key for this endpoint and identity (clients are shared per key). */
  static keyOf(o: VsphereConnectionOptions): string {
    return createHash("sha256")
      .update(JSON.stringify([o.url, o.user, o.password, o.caCert ?? "", !!o.insecure]))
      .digest("hex");
  }

  serviceContent(): Promise<ServiceContent> {
    if (!this.content) {
      this.content = this.send("RetrieveServiceContent", new MoRef("ServiceInstance", "ServiceInstance"), {}).then(
        (r) => {
          const rv = r[0];
          const ref = (name: string): MoRef => {
            const m = moRefOf(child(rv, name));
            if (!m)
              throw new Error(
                `vSphere at ${this.url} did not name its ${name}: is this a vCenter or ESXi SDK endpoint?`,
              );
            return m;
          };
          return {
            rootFolder: ref("rootFolder"),
            propertyCollector: ref("propertyCollector"),
            viewManager: ref("viewManager"),
            sessionManager: ref("sessionManager"),
            searchIndex: ref("searchIndex"),
            apiVersion: textAt(rv, "about/apiVersion") ?? "",
          };
        },
      );
      this.content.catch(() => {
        this.content = undefined;
      });
    }
    return this.content;
  }

  /** Logs in (once; later calls share the session). */
  login(): Promise<void> {
    if (!this.session) {
      const s = (async () => {
        const sc = await this.serviceContent();
        await this.send("Login", sc.sessionManager, { userName: this.o.user, password: this.o.password });
      })();
      this.session = s;
      s.catch(() => {
        if (this.session === s) this.session = undefined;
      });
    }
    return this.session;
  }

  /**
   * Calls `method` on `self` with `params` (in the order the WSDL lists them) and answers its
   * `returnval` elements. Logs in first if needed, and again once if the session is gone.
   */
  async call(method: string, self: MoRef, params: Record<string, XmlValue> = {}): Promise<XmlNode[]> {
    if (this.closed) throw new Error(`vSphere ${method}: the client is closed`);
    for (let attempt = 0; ; attempt++) {
      const session = this.login();
      await session;
      try {
        return await this.send(method, self, params);
      } catch (err) {
        if (attempt === 0 && isFault(err, "NotAuthenticated")) {
          if (this.session === session) {
            this.session = undefined;
            this.cookie = "";
          }
          continue;
        }
        throw err;
      }
    }
  }

  async logout(): Promise<void> {
    if (!this.session) return;
    const sc = await this.serviceContent();
    await this.send("Logout", sc.sessionManager, {}).catch(() => undefined);
    this.session = undefined;
    this.cookie = "";
  }

  /** Logs out (in the background) and closes the connections. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    const done = (): void => this.agent.destroy();
    if (this.session) this.logout().then(done, done);
    else done();
  }

  // ---- conveniences ----

  /** The object at an inventory path (`DC0/vm/folder/name`), or undefined. */
  async findByInventoryPath(path: string): Promise<MoRef | undefined> {
    const sc = await this.serviceContent();
    return moRefOf((await this.call("FindByInventoryPath", sc.searchIndex, { inventoryPath: path }))[0]);
  }

  /** Properties `paths` of the objects `objs` (all of one type). */
  async properties(objs: MoRef[], paths: string[]): Promise<ObjectContent[]> {
    if (objs.length === 0) return [];
    const type = objs[0]!.type;
    return this.retrieve({ propSet: { type, pathSet: paths }, objectSet: objs.map((obj) => ({ obj })) });
  }

  /** Properties of one object (undefined if it is gone). */
  async propertiesOf(obj: MoRef, paths: string[]): Promise<Map<string, XmlNode> | undefined> {
    try {
      return (await this.properties([obj], paths))[0]?.props ?? new Map();
    } catch (err) {
      if (isFault(err, "ManagedObjectNotFound")) return undefined;
      throw err;
    }
  }

  /** Properties `paths` of every object of `type` under `container` (a folder, a datacenter), through a container view. */
  async propertiesUnder(container: MoRef, type: string, paths: string[]): Promise<ObjectContent[]> {
    const sc = await this.serviceContent();
    const view = moRefOf(
      (await this.call("CreateContainerView", sc.viewManager, { container, type, recursive: true }))[0],
    );
    if (!view) throw new Error(`vSphere CreateContainerView on ${container.toString()} answered no view`);
    try {
      return await this.retrieve({
        propSet: { type, pathSet: paths },
        objectSet: {
          obj: view,
          skip: true,
          selectSet: new Typed("TraversalSpec", { name: "view", type: "ContainerView", path: "view", skip: false }),
        },
      });
    } finally {
      await this.call("DestroyView", view).catch(() => undefined);
    }
  }

  private async retrieve(specSet: Record<string, XmlValue>): Promise<ObjectContent[]> {
    const sc = await this.serviceContent();
    const out: ObjectContent[] = [];
    let res = (
      await this.call("RetrievePropertiesEx", sc.propertyCollector, { specSet, options: { maxObjects: 500 } })
    )[0];
    for (;;) {
      for (const o of children(res, "objects")) {
        const obj = moRefOf(child(o, "obj"));
        if (!obj) continue;
        const props = new Map<string, XmlNode>();
        for (const p of children(o, "propSet")) {
          const name = textAt(p, "name"),
            val = child(p, "val");
          if (name !== undefined && val) props.set(name, val);
        }
        out.push({ obj, props });
      }
      const token = textAt(res, "token");
      if (!token) return out;
      res = (await this.call("ContinueRetrievePropertiesEx", sc.propertyCollector, { token }))[0];
    }
  }

  /**
   * Starts a task (a `…_Task` method) and waits for it to end: answers its result, or throws the
   * task's fault as a {@link VsphereFault} naming `method` and the object.
   */
  async runTask(
    method: string,
    self: MoRef,
    params: Record<string, XmlValue> = {},
    opts: { signal?: AbortSignal; timeoutMs?: number } = {},
  ): Promise<XmlNode | undefined> {
    const task = moRefOf((await this.call(method, self, params))[0]);
    if (!task) throw new Error(`vSphere ${method} on ${self.value} answered no task`);
    return this.waitForTask(task, `${method} on ${self.value}`, opts);
  }

  /** Polls the task until it succeeds (answers `info.result`) or fails (throws its fault). */
  async waitForTask(
    task: MoRef,
    what: string,
    opts: { signal?: AbortSignal; timeoutMs?: number } = {},
  ): Promise<XmlNode | undefined> {
    const deadline = Date.now() + (opts.timeoutMs ?? 30 * 60_000);
    for (let delay = 20; ; delay = Math.min(delay * 2, 2000)) {
      const props = await this.propertiesOf(task, ["info.state", "info.error", "info.result"]);
      if (!props) throw new Error(`vSphere ${what}: task ${task.value} vanished before it ended`);
      const state = props.get("info.state")?.text;
      if (state === "success") return props.get("info.result");
      if (state === "error") {
        const e = props.get("info.error");
        const fault = child(e, "fault");
        throw new VsphereFault(fault?.xsiType ?? "TaskError", what, textAt(e, "localizedMessage") ?? "", fault);
      }
      if (Date.now() > deadline)
        throw new Error(
          `vSphere ${what}: task ${task.value} still ${state ?? "unknown"} after ${opts.timeoutMs ?? 1_800_000} ms`,
        );
      opts.signal?.throwIfAborted();
      await new Promise((r) => setTimeout(r, delay));
    }
  }

  // ---- the wire ----

  private async send(method: string, self: MoRef, params: Record<string, XmlValue>): Promise<XmlNode[]> {
    if (!NAME.test(method)) throw new Error(`not a vSphere method name: ${JSON.stringify(method)}`);
    const body =
      `<?xml version="1.0" encoding="UTF-8"?>\n<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="${XSI}"><soapenv:Body>` +
      `<${method} xmlns="urn:vim25">${toXml("_this", self)}${Object.entries(params)
        .map(([k, v]) => toXml(k, v))
        .join("")}</${method}></soapenv:Body></soapenv:Envelope>`;
    const { status, text } = await this.post(method, body);
    let doc: XmlNode;
    try {
      doc = parseXml(text);
    } catch (err) {
      throw new Error(
        `vSphere ${method}: HTTP ${status}, not a SOAP answer (${(err as Error).message}): ${text.slice(0, 200)}`,
      );
    }
    const soapBody = child(doc, "Body");
    const fault = child(soapBody, "Fault");
    if (fault) {
      const detail = child(fault, "detail")?.children[0];
      const name = detail?.xsiType ?? detail?.name.replace(/Fault$/, "") ?? textAt(fault, "faultcode") ?? "SoapFault";
      throw new VsphereFault(name, method, textAt(fault, "faultstring") ?? "", detail);
    }
    if (status !== 200) throw new Error(`vSphere ${method}: HTTP ${status}: ${text.slice(0, 200)}`);
    const response = soapBody?.children[0];
    if (!response || response.name !== `${method}Response`)
      throw new Error(`vSphere ${method}: unexpected answer <${response?.name ?? "nothing"}>`);
    return children(response, "returnval");
  }

  private post(method: string, body: string): Promise<{ status: number; text: string }> {
    const u = this.endpoint;
    const request = u.protocol === "https:" ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: u.hostname.replace(/^\[|\]$/g, ""),
          port: u.port || (u.protocol === "https:" ? 443 : 80),
          path: u.pathname + u.search,
          method: "POST",
          agent: this.agent,
          timeout: this.o.timeoutMs ?? 60_000,
          headers: {
            "content-type": "text/xml; charset=utf-8",
            soapaction: `"${SOAP_ACTION}"`,
            "content-length": Buffer.byteLength(body),
            ...(this.cookie ? { cookie: this.cookie } : {}),
          },
        },
        (res: IncomingMessage) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on("data", (d: Buffer) => {
            size += d.length;
            if (size > MAX_RESPONSE_BYTES) {
              req.destroy(new Error(`answer over ${MAX_RESPONSE_BYTES} bytes`));
              return;
            }
            chunks.push(d);
          });
          res.on("end", () => {
            const set = res.headers["set-cookie"]?.find((c) => c.startsWith("vmware_soap_session="));
            if (set) this.cookie = set.split(";")[0]!;
            resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") });
          });
          res.on("error", reject);
        },
      );
      req.on("timeout", () => req.destroy(new Error(`no answer in ${this.o.timeoutMs ?? 60_000} ms`)));
      req.on("error", (err) => reject(new Error(`vSphere ${method} at ${u.host}: ${err.message}`)));
      req.end(body);
    });
  }
}
