// @ts-check
/**
 * Write a training diary in Node, as the Python DiaryWriter does
 * (runtime/trainrecord/diary/writer.py): each event gets seq, time (Unix seconds rounded to
 * milliseconds, a float), prev and hash; the line is checked against its event's schema
 * and the verifier's cross-field relations (relationProblem in diary.js: a run_end's checks,
 * a repair's relative_change) before anything is written (a refused event writes nothing);
 * each line is the canonical JSON of the whole line plus a newline, written in one write()
 * and fsynced for run_start, run_end and critical events. An existing diary is verified first and continued; one that
 * fails verification is never appended to. Closing seals the record (record.json).
 *
 * fsync_policy (the writer option, runtime/trainrecord/diary/durability.py): "always"
 * fsyncs every line; "interval" fsyncs a line when a second has passed since the last
 * fsync; "critical" only the lines above. Every policy fsyncs on close; any other value is
 * refused (`diary.writer.fsync_policy`) before the diary is opened.
 */
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { canonicalLine } = require("./pyjson");
const { problems } = require("./validate");
const { verifyDiary, lineHash, relationProblem, GENESIS } = require("./diary");
const { writeSeal } = require("./seal");
const { Refused } = require("./refused");

/** @typedef {import("./pyjson").PyValue} PyValue */

const RESERVED = ["hash", "prev", "seq", "time"];
const SYNC_EVENTS = new Set(["run_start", "run_end"]);
const FSYNC_POLICIES = ["always", "interval", "critical"];
const FSYNC_INTERVAL_MS = 1000;
/** lastEvent of a writer that resumed a diary without run_end (a crashed session). */
const RESUMED = "(resumed)";
/** @type {import("@trainrecord/spec").SchemaId} */
const LINE_SCHEMA = "https://trainrecord.dev/schemas/diary/line.schema.json";

/** @param {PyValue} v @returns {v is Record<string, PyValue>} */
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * `text` with each lone surrogate as its escape (`\ud800`), as Python's backslashreplace.
 * @param {string} text
 */
const shown = (text) => Array.from(text, (ch) => (ch.length === 1 && ch.charCodeAt(0) >= 0xd800 && ch.charCodeAt(0) <= 0xdfff ? `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}` : ch)).join("");

/**
 * The `diary.text.surrogate` refusal of the first string in `value` (an object key or a
 * value, at any depth) that holds a lone surrogate, which is not Unicode text (UTF-8
 * cannot encode it), or null; as surrogate_problem in runtime/trainrecord/diary/writer.py.
 * (A JS string holds a character beyond U+FFFF as a surrogate pair: that one is text.)
 * @param {PyValue} value
 * @param {(string|number)[]} at
 * @returns {Refused | null}
 */
function surrogateRefusal(value, at) {
  /** @param {(string|number)[]} where @param {string} text @param {string} kind */
  const refuse = (where, text, kind) => {
    const lone = Array.from(text).find((ch) => ch.length === 1 && ch.charCodeAt(0) >= 0xd800 && ch.charCodeAt(0) <= 0xdfff) ?? "";
    const point = lone.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0");
    return Refused.one("diary.text.surrogate", where,
      `${kind} holds the surrogate code point U+${point}, which is not Unicode text (UTF-8 cannot encode it; JSON readers read a high and a low surrogate back as one character, so the line would not verify): give valid Unicode text (decode bytes with their real encoding, not surrogateescape; a character beyond U+FFFF as itself, not as two surrogates)`);
  };
  if (typeof value === "string") return value.isWellFormed() ? null : refuse(at, value, "the text");
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = surrogateRefusal(/** @type {PyValue} */ (value[i]), [...at, i]);
      if (found !== null) return found;
    }
    return null;
  }
  if (isObject(value)) {
    for (const key of Object.keys(value)) if (!key.isWellFormed()) return refuse([...at, shown(key)], key, "the key");
    for (const [key, item] of Object.entries(value)) {
      const found = surrogateRefusal(item, [...at, key]);
      if (found !== null) return found;
    }
  }
  return null;
}

/** round(time.time(), 3) as a float. */
const now = () => Math.round(Date.now()) / 1000;

/**
 * Write `events` (each {event, ...fields}) into a new dir/diary.jsonl, then seal; return
 * the path. A diary already there is continued (as append_diary does).
 * @param {{dir: string, events: PyValue}} args
 * @returns {string}
 */
function writeDiary({ dir, events }) {
  return appendDiary({ dir, events, fsyncPolicy: "critical" });
}

/**
 * Open the diary in `dir` (verifying an existing one first), append `events` (each
 * {event, ...fields}), close and seal it; return the path.
 * @param {{dir: string, events: PyValue, fsyncPolicy: PyValue}} args
 * @returns {string}
 */
function appendDiary({ dir, events, fsyncPolicy }) {
  if (!Array.isArray(events)) throw Refused.one("diary.event.type", ["events"], "events must be a list of event objects");
  events.forEach((item, i) => {
    if (!isObject(item) || typeof item.event !== "string") {
      throw Refused.one("diary.event.type", ["events", i, "event"], "each event needs its type in the field event");
    }
  });
  if (typeof fsyncPolicy !== "string" || !FSYNC_POLICIES.includes(fsyncPolicy)) {
    throw Refused.one("diary.writer.fsync_policy", ["fsync_policy"], `fsync_policy must be one of ${FSYNC_POLICIES.join(", ")}`);
  }
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, "diary.jsonl");
  let seq = 0n;
  let head = GENESIS;
  /** @type {string | null} */
  let lastEvent = null;
  if (fs.existsSync(file) && fs.statSync(file).size > 0) {
    const result = verifyDiary(dir);
    if (result.status !== "ok") {
      const reason = result.failure === null ? `a torn last line (${result.torn_bytes} bytes, a crash while writing)` : `${result.failure.rule}: ${result.failure.message}`;
      throw Refused.one("diary.writer.resume", ["diary.jsonl"], `the diary fails verification and is never appended to: ${reason}`);
    }
    seq = BigInt(result.lines);
    head = result.head_hash ?? GENESIS;
    lastEvent = result.complete ? "run_end" : RESUMED;
    // The seal pins the old head; appending outdates it.
    for (const name of ["record.json", "record.sig"]) fs.rmSync(path.join(dir, name), { force: true });
  }
  const fd = fs.openSync(file, "a", 0o644);
  let lastSync = Date.now();
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
      if (lastEvent === RESUMED && event !== "run_start") {
        throw Refused.one("diary.writer.resume", ["event"], `a resumed diary continues with the new session's run_start: write it first (got ${JSON.stringify(event)})`);
      }
      if (lastEvent === "run_end" && event !== "run_start") throw Refused.one("diary.order.run_end", ["event"], "after run_end only a run_start (a resumed run) may follow");
      /** @type {Record<string, PyValue>} */
      const body = { seq, time: now(), event };
      for (const [k, v] of Object.entries(item)) {
        if (k !== "event") Object.defineProperty(body, k, { value: v, enumerable: true, writable: true, configurable: true });
      }
      const found = problems({ ...body, prev: head, hash: GENESIS }, LINE_SCHEMA);
      if (found.length > 0) throw new Refused(found);
      const related = relationProblem(event, body); // the verifier's cross-field rules
      if (related !== null) throw Refused.one(related[0], [related[2]], related[1]);
      const notText = surrogateRefusal(body, []);
      if (notText !== null) throw notText;
      let digest;
      try {
        digest = lineHash(head, body);
      } catch (e) {
        throw Refused.one("diary.file.json", ["fields"], `a field cannot be written as JSON: ${/** @type {Error} */ (e).message}`);
      }
      const line = { ...body, prev: head, hash: digest };
      fs.writeSync(fd, Buffer.from(`${canonicalLine(line)}\n`, "utf8"));
      const critical = SYNC_EVENTS.has(event) || item.severity === "critical";
      if (critical || fsyncPolicy === "always" || (fsyncPolicy === "interval" && Date.now() - lastSync >= FSYNC_INTERVAL_MS)) {
        fs.fsyncSync(fd);
        lastSync = Date.now();
      }
      seq += 1n;
      head = digest;
      lastEvent = event;
    }
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
    // DiaryWriter.close() seals whenever the diary has lines, also after a refused event.
    if (seq > 0n) writeSeal(dir);
  }
  return file;
}

module.exports = { writeDiary, appendDiary, FSYNC_POLICIES };
