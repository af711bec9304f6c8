/**
 * Secrets in transfer (controller/security/transfer-sealing.ts): sealed to a migration target's
 * X25519 key or to an export's passphrase, a value opens for that reader only, under its own
 * purpose only, and a wrong passphrase or another controller's key is refused as such.
 */
import { generateKeyPairSync } from "node:crypto";
import test from "ava";
import {
  TransferSealer,
  migrationKeyPair,
  sealerForPassphrase,
  sealerFromPassphrase,
  sealerFromPrivateKey,
  sealerToPublicKey,
} from "../controller";

const caKey = (): string =>
  generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
const VALUE = "hunter2-distinctive-5f1c";

test("a value sealed to a migration's public key opens with the target's key for that migration only", (t) => {
  const target = caKey();
  const pair = migrationKeyPair(target, "mig-1");
  t.is(migrationKeyPair(target, "mig-1").publicKey, pair.publicKey, "every replica of the target derives the same key");
  t.not(migrationKeyPair(target, "mig-2").publicKey, pair.publicKey, "another migration gets another key");
  t.not(migrationKeyPair(caKey(), "mig-1").publicKey, pair.publicKey, "another controller gets another key");

  const { sealer, sealing } = sealerToPublicKey(pair.publicKey);
  const sealed = sealer.seal("secret/abc/1", VALUE);
  t.false(sealed.includes(VALUE));
  t.false(sealed.includes(Buffer.from(VALUE).toString("base64")));
  t.false(JSON.stringify(sealing).includes(VALUE));

  const opener = sealerFromPrivateKey(migrationKeyPair(target, "mig-1").privateKey, sealing);
  t.is(opener.open("secret/abc/1", sealed), VALUE);
  t.throws(() => opener.open("secret/abc/2", sealed), { message: /does not open/ }, "moved to another revision");
  t.throws(() => sealerFromPrivateKey(migrationKeyPair(target, "mig-2").privateKey, sealing), {
    message: /another controller's key/,
  });
  // The ephemeral key is fresh per export: the same value seals differently each time.
  const again = sealerToPublicKey(pair.publicKey);
  t.not(again.sealing.kind === "x25519" && again.sealing.ephemeral, sealing.kind === "x25519" && sealing.ephemeral);
});

test("an altered sealed value or a bad public key is refused", (t) => {
  const pair = migrationKeyPair(caKey(), "m");
  const { sealer, sealing } = sealerToPublicKey(pair.publicKey);
  const sealed = sealer.seal("secret/x/1", VALUE);
  const raw = Buffer.from(sealed.slice(3), "base64url");
  raw[raw.length - 20]! ^= 1;
  const opener = sealerFromPrivateKey(pair.privateKey, sealing);
  t.throws(() => opener.open("secret/x/1", `t1.${raw.toString("base64url")}`), { message: /does not open/ });
  t.throws(() => opener.open("secret/x/1", "v1.abc"), { message: /not in a format/ });
  t.throws(() => sealerToPublicKey("not-a-key"), { message: /not an X25519 public key/ });
  // The all-zero point is of low order: every sender would share the same key with it.
  t.throws(() => sealerToPublicKey(Buffer.alloc(32).toString("base64url")), { message: /low order/ });
});

test("a value sealed to a passphrase opens with it, and a wrong one is told as such", async (t) => {
  const { sealer, sealing } = await sealerForPassphrase("correct horse battery");
  t.is(sealing.kind, "passphrase");
  const sealed = sealer.seal("secret/abc/3", VALUE);
  t.false(JSON.stringify({ sealing, sealed }).includes(VALUE));
  t.is((await sealerFromPassphrase("correct horse battery", sealing)).open("secret/abc/3", sealed), VALUE);
  await t.throwsAsync(sealerFromPassphrase("wrong horse battery", sealing), { message: /wrong passphrase/ });
  await t.throwsAsync(sealerForPassphrase("short"), { message: /at least 8 characters/ });
  if (sealing.kind !== "passphrase") return;
  await t.throwsAsync(
    sealerFromPassphrase("correct horse battery", { ...sealing, kdf: { ...sealing.kdf, N: 1 << 24 } }),
    { message: /more than Steward writes/ },
    "a forged cost is refused before any work",
  );
  t.throws(() => new TransferSealer(Buffer.alloc(32)).open("secret/abc/3", sealed), { message: /does not open/ });
});
