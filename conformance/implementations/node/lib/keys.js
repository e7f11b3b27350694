// @ts-check
/**
 * Ed25519 keys for signing a sealed record: generate, load, fingerprint
 * (as runtime/trainrecord/diary/keys.py).
 *
 * A private key is a PKCS#8 PEM file written with mode 0600; a public key is a
 * SubjectPublicKeyInfo PEM file. The fingerprint of a public key is the SHA-256 (hex) of its
 * raw 32 bytes; record.json names it. A refusal (rule `seal.key.exists` or
 * `seal.key.format`) names the file, never its content.
 */
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const crypto = require("node:crypto");
const { Refused } = require("./refused");

/**
 * SHA-256 (hex) of the raw 32-byte Ed25519 public key.
 * @param {crypto.KeyObject} key a public (or private) Ed25519 key
 */
function fingerprint(key) {
  const pub = key.type === "private" ? crypto.createPublicKey(key) : key;
  const jwk = pub.export({ format: "jwk" });
  const raw = Buffer.from(/** @type {string} */ (jwk.x), "base64url");
  return crypto.createHash("sha256").update(raw).digest("hex");
}

/**
 * Write a new key pair, never over an existing file; return the fingerprint.
 * @param {string} privatePath
 * @param {string | null} [publicPath] default: the private path plus `.pub`
 * @returns {{privatePath: string, publicPath: string, fingerprint: string}}
 */
function generateKeypair(privatePath, publicPath = null) {
  const pubPath = publicPath || `${privatePath}.pub`;
  for (const file of [privatePath, pubPath]) {
    if (fs.existsSync(file)) {
      throw Refused.one("seal.key.exists", [file], "the key file exists; choose another path or remove it");
    }
  }
  const { privateKey, publicKey } = crypto.generateKeyPairSync("ed25519");
  const privatePem = String(privateKey.export({ type: "pkcs8", format: "pem" }));
  const publicPem = String(publicKey.export({ type: "spki", format: "pem" }));
  fs.mkdirSync(path.dirname(privatePath), { recursive: true });
  fs.mkdirSync(path.dirname(pubPath), { recursive: true });
  // "wx": created here or not at all, so a file that appeared since the check is kept.
  writeNew(privatePath, privatePem, 0o600);
  fs.chmodSync(privatePath, 0o600);
  try {
    writeNew(pubPath, publicPem, 0o644);
  } catch (e) {
    fs.rmSync(privatePath, { force: true });
    throw e;
  }
  return { privatePath, publicPath: pubPath, fingerprint: fingerprint(publicKey) };
}

/**
 * @param {string} file
 * @param {string} data
 * @param {number} mode
 */
function writeNew(file, data, mode) {
  let fd;
  try {
    fd = fs.openSync(file, "wx", mode);
  } catch (e) {
    if (/** @type {NodeJS.ErrnoException} */ (e).code === "EEXIST") {
      throw Refused.one("seal.key.exists", [file], "the key file exists; choose another path or remove it");
    }
    throw e;
  }
  try {
    fs.writeSync(fd, data);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** The label of the first PEM block (`PRIVATE KEY`, `PUBLIC KEY`, ...), or null. @param {Buffer} data */
function pemLabel(data) {
  const m = /-----BEGIN ([A-Z0-9 ]+)-----/.exec(data.toString("latin1"));
  return m ? /** @type {string} */ (m[1]) : null;
}

/**
 * The Ed25519 private key in a PEM file (unencrypted; PKCS#8 as keygen writes it).
 * @param {string | Buffer} source a file path, or the PEM bytes
 * @returns {crypto.KeyObject}
 */
function loadPrivateKey(source) {
  const [data, name] = read(source);
  let key;
  try {
    const label = pemLabel(data);
    if (label === null || !label.endsWith("PRIVATE KEY") || label.startsWith("ENCRYPTED")) throw new Error("no PEM private key");
    key = crypto.createPrivateKey({ key: data, format: "pem" });
  } catch {
    throw Refused.one("seal.key.format", [name], "not an unencrypted PEM private key; make one with trainrecord keygen");
  }
  if (key.asymmetricKeyType !== "ed25519") throw Refused.one("seal.key.format", [name], "the private key is not Ed25519");
  return key;
}

/**
 * The Ed25519 public key in a PEM file; a private key file gives its public half.
 * @param {string | Buffer} source a file path, or the PEM bytes
 * @returns {crypto.KeyObject}
 */
function loadPublicKey(source) {
  const [data, name] = read(source);
  let key;
  try {
    const label = pemLabel(data);
    // A certificate holds a public key too, but it is not a key file (Python refuses it).
    if (label === null || !label.endsWith("KEY") || label.startsWith("ENCRYPTED")) throw new Error("no PEM key");
    key = crypto.createPublicKey({ key: data, format: "pem" });
  } catch {
    throw Refused.one("seal.key.format", [name], "not a PEM public key; pass the .pub file that trainrecord keygen wrote");
  }
  if (key.asymmetricKeyType !== "ed25519") throw Refused.one("seal.key.format", [name], "the public key is not Ed25519");
  return key;
}

/**
 * @param {string | Buffer} source
 * @returns {[Buffer, string]}
 */
function read(source) {
  if (Buffer.isBuffer(source)) return [source, "the given key"];
  return [fs.readFileSync(source), source];
}

module.exports = { fingerprint, generateKeypair, loadPrivateKey, loadPublicKey };
