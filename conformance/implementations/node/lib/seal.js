// @ts-check
/**
 * Seal a run folder (as runtime/trainrecord/diary/seal.py write_seal): record.json pins the
 * record as it stands, and record.sig, with a signing key, is the detached Ed25519
 * signature over record.json's exact bytes, in base64 on one line.
 *
 * The record is verified first (chain, order, metrics; not its old seal): one that does not
 * verify is never sealed (rule `seal.verify`) and its folder is left as it was.
 * record.json is `json.dumps(seal, indent=2, sort_keys=True)` plus a newline; it and
 * record.sig are each written whole to a temporary file beside its name first (a full disk
 * fails there, before either file is touched), then renamed into place, record.json first;
 * should record.sig then fail to be put in place (or removed), the old record.json is put
 * back. A reseal keeps each old file's permission bits; a new file gets the umask's. As
 * runtime/trainrecord/diary/seal.py _write_seal_files.
 */
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const crypto = require("node:crypto");
const { dumpsIndented } = require("./pyjson");
const { verifyDiary } = require("./diary");
const { fingerprint, loadPrivateKey } = require("./keys");
const { fsyncDir, replace, writeTemp } = require("./files");
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
  const signature = key === null ? null : Buffer.from(`${crypto.sign(null, data, key).toString("base64")}\n`, "ascii");
  writeSealFiles(dir, data, signature);
  return seal;
}

/**
 * The permission bits of the regular file at `p` (a link is not followed), which a reseal
 * keeps; null when there is none.
 * @param {string} p
 * @returns {number | null}
 */
function oldMode(p) {
  try {
    const facts = fs.lstatSync(p);
    return facts.isFile() ? facts.mode & 0o7777 : null;
  } catch {
    return null;
  }
}

/**
 * The bytes and bits of record.json as it is, to put back should the new seal fail
 * half-way; null when there is none to put back (none, or no regular file of at most 1 MiB).
 * @param {string} p
 * @returns {{data: Buffer, mode: number} | null}
 */
function oldSeal(p) {
  let fd;
  try {
    fd = fs.openSync(p, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const facts = fs.fstatSync(fd);
    if (!facts.isFile() || facts.size > 1 << 20) return null;
    return { data: fs.readFileSync(fd), mode: facts.mode & 0o7777 };
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Put record.json (`data`) and record.sig (`signature`; null: none, an old one is removed)
 * in place, all or nothing as far as a failure goes (see the module's comment).
 * @param {string} dir
 * @param {Buffer} data
 * @param {Buffer | null} signature
 */
function writeSealFiles(dir, data, signature) {
  const sealPath = path.join(dir, "record.json");
  const sigPath = path.join(dir, "record.sig");
  const old = oldSeal(sealPath);
  const modes = [oldMode(sealPath), oldMode(sigPath)];
  /** @type {string[]} */
  const temps = [];
  let replaced = false;
  try {
    temps.push(writeTemp(sealPath, data));
    if (modes[0] !== null) fs.chmodSync(temps[0], modes[0]);
    if (signature !== null) {
      temps.push(writeTemp(sigPath, signature));
      if (modes[1] !== null) fs.chmodSync(temps[1], modes[1]);
    }
    fs.renameSync(temps[0], sealPath);
    replaced = true;
    if (signature === null) unlinkIfThere(sigPath);
    else fs.renameSync(temps[1], sigPath);
  } catch (e) {
    if (replaced) {
      try {
        putBack(sealPath, old);
      } catch {
        // the first failure is the one thrown
      }
    }
    throw e;
  } finally {
    for (const tmp of temps) fs.rmSync(tmp, { force: true });
  }
  fsyncDir(dir);
}

/**
 * Remove the file `p` when it is there (unlink: rmSync would report a file it may not
 * remove as "not a directory").
 * @param {string} p
 */
function unlinkIfThere(p) {
  try {
    fs.unlinkSync(p);
  } catch (e) {
    if (/** @type {NodeJS.ErrnoException} */ (e).code !== "ENOENT") throw e;
  }
}

/**
 * Put record.json back as it was (`old`: its bytes and bits; null: none was there).
 * @param {string} sealPath
 * @param {{data: Buffer, mode: number} | null} old
 */
function putBack(sealPath, old) {
  if (old === null) {
    unlinkIfThere(sealPath);
    return;
  }
  replace(sealPath, old.data, old.mode);
}

module.exports = { writeSeal };
