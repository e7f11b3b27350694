// @ts-check
/**
 * A run's identity from its run folder (Reporting API v2 §3, §4, as
 * runtime/trainrecord/report/run_folder.py). openRun(folder, metadata) is the one call a job
 * makes at every start:
 *
 * - fresh folder: creates the folder and metadata.json holding a new UUID4 run_id,
 *   started_at (now, the run's first start) and the job's own metadata fields, atomically and
 *   exclusively (temporary file, fsync, hard link: files.createNew), so of several processes
 *   starting one folder at once exactly one run_id is written and every process uses it;
 * - resume: reads metadata.json (strict JSON, one object: `report.metadata.json`) and
 *   returns its run_id (a UUID in canonical lowercase form: `report.metadata.run_id`)
 *   unchanged; a refused file is never replaced;
 * - metadata.json without run_id (the job wrote its metadata first): a run_id and started_at
 *   are added, every other field kept, under an exclusive lock (lockfile.js) and with an
 *   atomic replace, so again exactly one run_id is ever written.
 */
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const crypto = require("node:crypto");
const { parse, dumpsIndented } = require("./pyjson");
const { createNew, inFolder, replace } = require("./files");
const { withLock } = require("./lockfile");
const { localTime } = require("./payload");
const { Refused } = require("./refused");

/** @typedef {import("./pyjson").PyValue} PyValue */
/** @typedef {Record<string, PyValue>} Obj */

const METADATA = "metadata.json";
const LOCK = ".metadata.json.node-lock";
const RESERVED = ["run_id", "started_at"];
const RULE_JSON = "report.metadata.json";
const RULE_RUN_ID = "report.metadata.run_id";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Whether `value` is a UUID string in canonical lowercase 8-4-4-4-12 form. @param {PyValue | undefined} value */
const isRunId = (value) => typeof value === "string" && UUID.test(value);

/**
 * metadata.json as one strict JSON object, or Refused; a missing file throws ENOENT.
 * @param {string} target
 * @returns {Obj}
 */
function read(target) {
  const raw = fs.readFileSync(target);
  let value;
  try {
    value = parse(utf8.decode(raw));
  } catch (e) {
    throw Refused.one(RULE_JSON, [], `${METADATA} is not strict JSON text (RFC 8259, UTF-8): ${String(/** @type {Error} */ (e).message).slice(0, 160)}; restore the run's metadata`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw Refused.one(RULE_JSON, [], `${METADATA} must hold one JSON object, not ${Array.isArray(value) ? "an array" : value === null ? "null" : typeof value}; restore the run's metadata`);
  }
  return value;
}

/** @param {Obj} record @returns {Buffer} */
function encode(record) {
  let text;
  try {
    text = `${dumpsIndented(record, 2)}\n`;
  } catch (e) {
    throw Refused.one(RULE_JSON, [], `the metadata for ${METADATA} must be strict JSON (no NaN or Infinity): ${String(/** @type {Error} */ (e).message).slice(0, 120)}`);
  }
  if (!text.isWellFormed()) throw Refused.one(RULE_JSON, [], `the metadata for ${METADATA} holds text that is not Unicode (a lone surrogate)`);
  return Buffer.from(text, "utf8");
}

/** A new record: run_id, started_at, then the given fields. @param {Obj} fields @returns {Obj} */
const fresh = (fields) => ({ run_id: crypto.randomUUID(), started_at: localTime(), ...fields });

/**
 * @param {Obj} stored
 * @returns {{runId: string, created: boolean, metadata: Obj}}
 */
function resumed(stored) {
  const runId = stored.run_id;
  if (!isRunId(runId)) {
    throw Refused.one(RULE_RUN_ID, ["run_id"], `the run_id in ${METADATA} must be a UUID in lowercase 8-4-4-4-12 form; restore the run's own run_id (a new one would make it another run)`);
  }
  return { runId: /** @type {string} */ (runId), created: false, metadata: stored };
}

/**
 * Start or resume the run in `folder`.
 * @param {string} folder
 * @param {PyValue} [metadata] the job's own fields, written with the new run_id at the first start
 * @returns {{runId: string, created: boolean, metadata: Obj}}
 */
function openRun(folder, metadata = null) {
  const dir = path.resolve(folder);
  /** @type {Obj} */
  const fields = metadata !== null && typeof metadata === "object" && !Array.isArray(metadata) ? metadata : {};
  for (const name of RESERVED) {
    if (Object.prototype.hasOwnProperty.call(fields, name)) throw new TypeError(`${name} is chosen by open_run; remove it from metadata`);
  }
  const target = path.join(dir, METADATA);
  for (let attempt = 0; attempt < 10; attempt++) {
    const record = fresh(fields);
    const data = encode(record);
    // a resume only reads metadata.json: no write, so a run in a read-only folder resumes
    if (!fs.existsSync(target)) {
      try {
        // a failed write removes the folders made for it: the next start is a new run
        inFolder(dir, () => createNew(target, data));
        return { runId: /** @type {string} */ (record.run_id), created: true, metadata: record };
      } catch (e) {
        if (/** @type {NodeJS.ErrnoException} */ (e).code !== "EEXIST") throw e;
      }
    }
    let stored;
    try {
      stored = read(target);
    } catch (e) {
      if (/** @type {NodeJS.ErrnoException} */ (e).code !== "ENOENT") throw e;
      continue; // deleted (discarded) meanwhile: start afresh
    }
    if (Object.prototype.hasOwnProperty.call(stored, "run_id")) return resumed(stored);
    return withLock(path.join(dir, LOCK), () => {
      const now = read(target);
      if (Object.prototype.hasOwnProperty.call(now, "run_id")) return resumed(now);
      const added = fresh(now);
      replace(target, encode(added));
      return { runId: /** @type {string} */ (added.run_id), created: true, metadata: added };
    });
  }
  throw new Error(`${METADATA} kept appearing and disappearing; is the folder shared?`);
}

module.exports = { openRun, isRunId, METADATA };
