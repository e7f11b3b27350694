// @ts-check
/**
 * Write a training diary in Node, as the Python DiaryWriter does
 * (runtime/trainrecord/diary/writer.py): each event gets seq, time (Unix seconds rounded to
 * milliseconds, a float), prev and hash; the line is checked against its event's schema
 * before anything is written (a refused event writes nothing); each line is the canonical
 * JSON of the whole line plus a newline, written in one write() and fsynced for run_start,
 * run_end and critical events. An existing diary is verified first and continued; one that
 * fails verification is never appended to. Closing seals the record (record.json).
 */
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const crypto = require("node:crypto");
const { canonicalLine, dumpsIndented } = require("./pyjson");
const { problems } = require("./validate");
const { verifyDiary, lineHash, GENESIS } = require("./diary");
const { Refused } = require("./refused");

/** @typedef {import("./pyjson").PyValue} PyValue */

const RESERVED = ["hash", "prev", "seq", "time"];
const SYNC_EVENTS = new Set(["run_start", "run_end"]);
/** @type {import("@trainrecord/spec").SchemaId} */
const LINE_SCHEMA = "https://trainrecord.dev/schemas/diary/line.schema.json";

/** @param {PyValue} v @returns {v is Record<string, PyValue>} */
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

/** round(time.time(), 3) as a float. */
const now = () => Math.round(Date.now()) / 1000;

/**
 * Write `events` (each {event, ...fields}) into dir/diary.jsonl, then seal; return the path.
 * @param {{dir: string, events: PyValue}} args
 * @returns {string}
 */
function writeDiary({ dir, events }) {
  if (!Array.isArray(events)) throw Refused.one("diary.event.type", ["events"], "events must be a list of event objects");
  events.forEach((item, i) => {
    if (!isObject(item) || typeof item.event !== "string") {
      throw Refused.one("diary.event.type", ["events", i, "event"], "each event needs its type in the field event");
    }
  });
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, "diary.jsonl");
  let seq = 0n;
  let head = GENESIS;
  /** @type {string | null} */
  let lastEvent = null;
  if (fs.existsSync(file) && fs.statSync(file).size > 0) {
    const result = verifyDiary(dir);
    if (result.status !== "ok") {
      throw Refused.one("diary.writer.resume", ["diary.jsonl"], `the diary fails verification and is never appended to: ${result.failure?.rule ?? "torn tail"}`);
    }
    seq = BigInt(result.lines);
    head = result.head_hash ?? GENESIS;
    lastEvent = result.complete ? "run_end" : "?";
    for (const name of ["record.json", "record.sig"]) fs.rmSync(path.join(dir, name), { force: true });
  }
  const fd = fs.openSync(file, "a", 0o644);
  try {
    for (const item of events) {
      if (!isObject(item)) throw Refused.one("diary.event.type", ["fields"], "each event must be an object of the event's fields");
      const event = item.event;
      if (typeof event !== "string" || event === "") throw Refused.one("diary.event.format", ["event"], "event must be a non-empty string");
      const reserved = RESERVED.filter((k) => Object.prototype.hasOwnProperty.call(item, k));
      if (reserved.length > 0) {
        throw Refused.one("diary.writer.reserved", [/** @type {string} */ (reserved[0])], "the writer sets seq, time, event, prev and hash; remove them from fields");
      }
      if (seq === 0n && event !== "run_start") throw Refused.one("diary.order.run_start", ["event"], "the first line of a diary must be run_start");
      if (lastEvent === "run_end" && event !== "run_start") throw Refused.one("diary.order.run_end", ["event"], "after run_end only a run_start (a resumed run) may follow");
      /** @type {Record<string, PyValue>} */
      const body = { seq, time: now(), event };
      for (const [k, v] of Object.entries(item)) {
        if (k !== "event") Object.defineProperty(body, k, { value: v, enumerable: true, writable: true, configurable: true });
      }
      const found = problems({ ...body, prev: head, hash: GENESIS }, LINE_SCHEMA);
      if (found.length > 0) throw new Refused(found);
      let digest;
      try {
        digest = lineHash(head, body);
      } catch (e) {
        throw Refused.one("diary.file.json", ["fields"], `a field cannot be written as JSON: ${/** @type {Error} */ (e).message}`);
      }
      const line = { ...body, prev: head, hash: digest };
      fs.writeSync(fd, Buffer.from(`${canonicalLine(line)}\n`, "utf8"));
      if (SYNC_EVENTS.has(event) || item.severity === "critical") fs.fsyncSync(fd);
      seq += 1n;
      head = digest;
      lastEvent = event;
    }
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
    // DiaryWriter.close() seals whenever the diary has lines, also after a refused event.
    if (seq > 0n) seal(dir);
  }
  return file;
}

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
 * Seal a verified record: record.json pins the lines, head, and file hashes (unsigned).
 * @param {string} dir
 */
function seal(dir) {
  const result = verifyDiary(dir);
  if (result.status !== "ok") throw Refused.one("seal.verify", ["diary.jsonl"], "the record does not verify and is not sealed");
  const [sha, size, lines] = facts(path.join(dir, "diary.jsonl"));
  const mpath = path.join(dir, "metrics.jsonl");
  let metrics = null;
  if (fs.existsSync(mpath)) {
    const [msha, msize, mrows] = facts(mpath);
    metrics = { file: "metrics.jsonl", sha256: msha, bytes: msize, rows: mrows };
  }
  const record = {
    record_version: 1n,
    sealed_by: "trainrecord-node 0.1.0",
    sealed_at: now(),
    diary: { file: "diary.jsonl", sha256: sha, bytes: size, lines, head_seq: result.head_seq, head_hash: result.head_hash },
    metrics,
    signature: null,
  };
  const tmp = path.join(dir, `.record.json.${process.pid}.tmp`);
  fs.writeFileSync(tmp, `${dumpsIndented(record, 2, { sortKeys: true, ensureAscii: true })}\n`);
  const fd = fs.openSync(tmp, "r");
  fs.fsyncSync(fd);
  fs.closeSync(fd);
  fs.renameSync(tmp, path.join(dir, "record.json"));
}

module.exports = { writeDiary };
