/**
 * Files pushed into and pulled from a workload container by its supervisor: absolute paths only,
 * regular files only, at most MAX_FILE_BYTES; a push is atomic (written beside, then renamed), so a
 * service never reads half a configuration file.
 */
import { randomBytes } from "node:crypto";
import { chmod, mkdir, open, rename, rm, stat } from "node:fs/promises";
import { dirname, isAbsolute } from "node:path";
import type { PullResult } from "./protocol";
import { MAX_FILE_BYTES } from "./protocol";

export class FileError extends Error {
  constructor(
    readonly code: "bad-request" | "not-found" | "too-large" | "failed",
    message: string,
  ) {
    super(message);
  }
}

function checkPath(path: unknown): string {
  if (typeof path !== "string" || !isAbsolute(path) || path.includes("\0") || path.length > 4096)
    throw new FileError("bad-request", `the path must be absolute (got ${JSON.stringify(path)?.slice(0, 200)})`);
  return path;
}

export async function pushFile(path: unknown, content: Buffer, mode: number, makeDirs: boolean): Promise<void> {
  const dest = checkPath(path);
  if (content.length > MAX_FILE_BYTES)
    throw new FileError(
      "too-large",
      `the file is ${content.length} bytes; at most ${MAX_FILE_BYTES} bytes may be pushed`,
    );
  if (makeDirs) await mkdir(dirname(dest), { recursive: true });
  const tmp = `${dest}.steward-${randomBytes(4).toString("hex")}`;
  try {
    const fh = await open(tmp, "wx", mode);
    try {
      await fh.writeFile(content);
    } finally {
      await fh.close();
    }
    await chmod(tmp, mode); // the umask does not decide what the operator asked for
    await rename(tmp, dest);
  } catch (err) {
    await rm(tmp, { force: true });
    const e = err as NodeJS.ErrnoException;
    throw new FileError(
      e.code === "ENOENT" ? "not-found" : "failed",
      `cannot write ${dest}: ${e.code === "ENOENT" ? `its directory ${dirname(dest)} does not exist (push with make-dirs)` : e.message}`,
    );
  }
}

export async function pullFile(path: unknown): Promise<PullResult> {
  const src = checkPath(path);
  const st = await stat(src).catch((err: NodeJS.ErrnoException) => {
    throw new FileError(
      err.code === "ENOENT" ? "not-found" : "failed",
      err.code === "ENOENT" ? `${src} does not exist` : `cannot read ${src}: ${err.message}`,
    );
  });
  if (!st.isFile()) throw new FileError("bad-request", `${src} is not a regular file`);
  if (st.size > MAX_FILE_BYTES)
    throw new FileError("too-large", `${src} is ${st.size} bytes; at most ${MAX_FILE_BYTES} bytes may be pulled`);
  const fh = await open(src, "r");
  try {
    const buf = Buffer.alloc(MAX_FILE_BYTES + 1);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    if (bytesRead > MAX_FILE_BYTES)
      throw new FileError("too-large", `${src} grew past ${MAX_FILE_BYTES} bytes while read`);
    return { content: buf.subarray(0, bytesRead).toString("base64"), mode: st.mode & 0o7777 };
  } finally {
    await fh.close();
  }
}
