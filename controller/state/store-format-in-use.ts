/**
 * The format of the store this process's controller runs on (api STORE_FORMAT), which decides
 * whether documents whose shape changed are still written in the previous shape too (registry.ts
 * `encodeBefore`). A process runs one replica on one store: the replica sets it from the controller
 * document as it starts and whenever that document changes (the leader's migration bumps it).
 * Until then it is the oldest format this build reads, so nothing is written that a replica of the
 * previous build, still running during a rolling upgrade, could misread.
 */
import { OLDEST_STORE_FORMAT } from "../../api";

let inUse = OLDEST_STORE_FORMAT;

export const storeFormatInUse = (): number => inUse;

export function useStoreFormat(format: number): void {
  inUse = format;
}
