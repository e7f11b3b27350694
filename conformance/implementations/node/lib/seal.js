// @ts-check
/**
 * Seal a run folder (as runtime/trainrecord/diary/seal.py write_seal): record.json pins the
 * record as it stands, and record.sig, with a signing key, is the detached Ed25519
 * signature over record.json's exact bytes, in base64 on one line.
 *
 * The record is verified first (chain, order, metrics; not its old seal): one that does not
 * verify is never sealed (rule `seal.verify`) and its folder is left as it was.
 * record.json is `json.dumps(seal, indent=2, sort_keys=True)` plus a newline; it and
 * record.sig are each written to a temporary file, fsynced and renamed into place.
 */
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const crypto = require("node:crypto");
const { dumpsIndented } = require("./pyjson");
const { verifyDiary } = require("./diary");
const { fingerprint, loadPrivateKey } = require("./keys");
const { replace } = require("./files");
const { Refused } = require("./refused");

/** @typedef {import("./pyjson").PyValue} PyValue */

const SEALED_BY = "trainrecord-node 0.1.0";

/** round(time.time(), 3), a float. */
const now = () => Math.round(Date.now()) / 1000;

/**
 * (sha256, bytes, newline count) of a file.
 * @param {string} file
 * @returns {[string, bigint, bigint]}
 */
function facts(file) {
  const data = fs.readFileSync(file);
  let lines = 0n;
  for (const b of data) if (b === 0x0a) lines++;
  return [crypto.createHash("sha256").update(data).digest("hex"), BigInt(data.length), lines];
}

/**
 * Seal `dir`; return the seal (record.json's content).
 * @param {string} dir
 * @param {{signingKey?: string | Buffer | crypto.KeyObject | null}} [options] the private
 *   key file (or PEM bytes, or key) that signs record.json; none: unsigned, and an old
 *   record.sig is removed
 * @returns {Record<string, PyValue>}
 */
function writeSeal(dir, options = {}) {
  const source = options.signingKey ?? null;
  const key = source === null ? null : source instanceof crypto.KeyObject ? source : loadPrivateKey(source);
  const result = verifyDiary(dir, { checkSeal: false });
  if (result.status !== "ok") {
    const reason = result.failure === null ? "a torn last line" : `${result.failure.rule}: ${result.failure.message}`;
    throw Refused.one("seal.verify", ["diary.jsonl"], `the record does not verify and is not sealed (${reason})`);
  }
  const [sha, size, lines] = facts(path.join(dir, "diary.jsonl"));
  const mpath = path.join(dir, "metrics.jsonl");
  let metrics = null;
  if (fs.existsSync(mpath)) {
    const [msha, msize, mrows] = facts(mpath);
    metrics = { file: "metrics.jsonl", sha256: msha, bytes: msize, rows: mrows };
  }
  /** @type {Record<string, PyValue>} */
  const seal = {
    record_version: 1n,
    sealed_by: SEALED_BY,
    sealed_at: now(),
    diary: { file: "diary.jsonl", sha256: sha, bytes: size, lines, head_seq: result.head_seq, head_hash: result.head_hash },
    metrics,
    signature: key === null ? null : { algorithm: "ed25519", file: "record.sig", public_key_sha256: fingerprint(key) },
  };
  const data = Buffer.from(`${dumpsIndented(seal, 2, { sortKeys: true, ensureAscii: true })}\n`, "ascii");
  const sigPath = path.join(dir, "record.sig");
  if (key === null) fs.rmSync(sigPath, { force: true });
  replace(path.join(dir, "record.json"), data);
  if (key !== null) replace(sigPath, Buffer.from(`${crypto.sign(null, data, key).toString("base64")}\n`, "ascii"));
  return seal;
}

module.exports = { writeSeal };
