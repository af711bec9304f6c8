/** Signed releases: keys, manifests and their verification (and the publisher's tool, release-tool.ts). */
export { generateReleaseKey, releaseKeyProblem, signManifest, signatureProblem } from "./release-keys";
export type { ReleaseKeyPair, ReleaseSignature } from "./release-keys";
export { MANIFEST, MANIFEST_FORMAT, ReleaseRefused, SIGNATURE, signRelease, verifyRelease } from "./release-manifest";
export type { ReleaseFile, ReleaseManifest, VerifiedRelease } from "./release-manifest";
