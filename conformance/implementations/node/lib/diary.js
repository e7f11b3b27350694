// @ts-check
/**
 * Verify a training diary folder (diary.jsonl, metrics.jsonl) in Node, with the rule ids of
 * spec/rules/diary.json: strict JSON lines, the schema of each line, seq from 0 without gaps,
 * the prev/hash chain over Python's canonical JSON, run_start first and only first, run_end
 * last, and run_end.metrics_sha256 against metrics.jsonl.
 */
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const crypto = require("node:crypto");
const { parse, canonicalLine } = require("./pyjson");
const { problems } = require("./validate");

/** @typedef {import("./pyjson").PyValue} PyValue */
/** @typedef {{rule: string, path: (string|number)[], message: string, line?: number}} LineProblem */

const GENESIS = "0".repeat(64);
const LINE_SCHEMA = "https://trainrecord.dev/schemas/diary/line.schema.json";
const METRICS_ROW_SCHEMA = "https://trainrecord.dev/schemas/diary/metrics-row.schema.json";
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * sha256(prev + canonical JSON of the line without prev and hash).
 * @param {string} prev
 * @param {PyValue} body
 */
function lineHash(prev, body) {
  return crypto.createHash("sha256").update(prev + canonicalLine(body), "utf8").digest("hex");
}

/**
 * The lines of a JSONL file: [text of each complete line, the unterminated tail or null].
 * @param {Buffer} raw
 * @returns {[Buffer[], Buffer | null]}
 */
function splitLines(raw) {
  /** @type {Buffer[]} */
  const lines = [];
  let start = 0;
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] === 0x0a) {
      lines.push(raw.subarray(start, i));
      start = i + 1;
    }
  }
  return [lines, start < raw.length ? raw.subarray(start) : null];
}

/**
 * Parse one line as a strict JSON object, or return why it is not one.
 * @param {Buffer} bytes
 * @returns {[Record<string, PyValue> | null, string | null]}
 */
function parseLine(bytes) {
  try {
    const value = parse(utf8.decode(bytes));
    if (value === null || typeof value !== "object" || Array.isArray(value)) return [null, "not a JSON object"];
    return [value, null];
  } catch (e) {
    return [null, /** @type {Error} */ (e).message];
  }
}

/**
 * Verify the diary in `folder`. Returns every problem found; an empty list means it verifies.
 * @param {string} folder
 * @returns {{problems: LineProblem[], lines: number, torn: boolean}}
 */
function verifyDiary(folder) {
  /** @type {LineProblem[]} */
  const found = [];
  const file = path.join(folder, "diary.jsonl");
  let raw;
  try {
    raw = fs.readFileSync(file);
  } catch {
    return { problems: [{ rule: "diary.file.empty", path: [], message: "diary.jsonl is missing: not a record" }], lines: 0, torn: false };
  }
  if (raw.length === 0) {
    return { problems: [{ rule: "diary.file.empty", path: [], message: "diary.jsonl is empty: not a record" }], lines: 0, torn: false };
  }
  const [chunks, tail] = splitLines(raw);
  let torn = false;
  if (tail !== null) {
    const [value] = parseLine(tail);
    if (value === null) {
      torn = true;
      found.push({ rule: "diary.file.torn", path: [], line: chunks.length,
        message: `the last line (${chunks.length}) is incomplete: a torn tail from a crash, not tampering; the lines before it verify` });
    } else chunks.push(tail);
  }
  let prevHash = GENESIS;
  /** @type {Record<string, PyValue> | null} */
  let runEnd = null;
  chunks.forEach((bytes, i) => {
    const [line, why] = parseLine(bytes);
    if (line === null) {
      found.push({ rule: "diary.file.json", path: [], line: i, message: `line ${i} is not one strict JSON object: ${why}` });
      prevHash = "";
      return;
    }
    for (const p of problems(line, LINE_SCHEMA)) found.push({ ...p, line: i, message: `line ${i}: ${p.message}` });
    if (line.seq !== BigInt(i)) {
      found.push({ rule: "diary.chain.seq", path: ["seq"], line: i, message: `line ${i} has seq ${String(line.seq)}; seq runs from 0 with no gap or repeat` });
    }
    if (i === 0 && line.prev !== GENESIS) {
      found.push({ rule: "diary.chain.prev", path: ["prev"], line: i, message: "the first line's prev is not 64 zeros" });
    } else if (i > 0 && prevHash !== "" && line.prev !== prevHash) {
      found.push({ rule: "diary.chain.prev", path: ["prev"], line: i, message: `line ${i}'s prev is not the hash of line ${i - 1}` });
    }
    /** @type {Record<string, PyValue>} */
    const body = {};
    for (const [k, v] of Object.entries(line)) {
      if (k !== "prev" && k !== "hash") Object.defineProperty(body, k, { value: v, enumerable: true, writable: true, configurable: true });
    }
    let expected = "";
    try {
      expected = lineHash(typeof line.prev === "string" ? line.prev : "", body);
    } catch (e) {
      found.push({ rule: "diary.file.json", path: [], line: i, message: `line ${i} cannot be written as canonical JSON: ${/** @type {Error} */ (e).message}` });
    }
    if (line.hash !== expected) {
      found.push({ rule: "diary.chain.hash", path: ["hash"], line: i, message: `line ${i}'s hash does not match sha256(prev + canonical JSON of the line)` });
    }
    prevHash = typeof line.hash === "string" ? line.hash : "";
    if (line.event === "run_start" && i !== 0) {
      found.push({ rule: "diary.order.run_start", path: ["event"], line: i, message: `line ${i} is a second run_start` });
    }
    if (i === 0 && line.event !== "run_start") {
      found.push({ rule: "diary.order.run_start", path: ["event"], line: 0, message: "the first line is not run_start" });
    }
    if (line.event === "run_end") {
      if (i !== chunks.length - 1) found.push({ rule: "diary.order.run_end", path: ["event"], line: i, message: `run_end on line ${i} is not the last line` });
      runEnd = line;
    }
  });
  found.push(...verifyMetrics(folder, runEnd));
  return { problems: found, lines: chunks.length, torn };
}

/**
 * metrics.jsonl: strict JSON rows valid against the row schema, and the run_end hash.
 * @param {string} folder
 * @param {Record<string, PyValue> | null} runEnd
 * @returns {LineProblem[]}
 */
function verifyMetrics(folder, runEnd) {
  /** @type {LineProblem[]} */
  const found = [];
  const file = path.join(folder, "metrics.jsonl");
  /** @type {Buffer | null} */
  let raw = null;
  try {
    raw = fs.readFileSync(file);
  } catch {
    raw = null;
  }
  if (raw !== null) {
    const [rows, tail] = splitLines(raw);
    if (tail !== null) rows.push(tail);
    rows.forEach((bytes, i) => {
      const [row, why] = parseLine(bytes);
      if (row === null) {
        found.push({ rule: "diary.metrics.json", path: [i], message: `metrics.jsonl row ${i} is not one strict JSON object: ${why}` });
        return;
      }
      for (const p of problems(row, METRICS_ROW_SCHEMA)) {
        found.push({ rule: "diary.metrics.json", path: [i, ...p.path], message: `metrics.jsonl row ${i}: ${p.message} (${p.rule})` });
      }
    });
  }
  if (runEnd !== null && typeof runEnd.metrics_sha256 === "string") {
    const actual = raw === null ? null : crypto.createHash("sha256").update(raw).digest("hex");
    if (actual !== runEnd.metrics_sha256) {
      found.push({ rule: "diary.metrics.sha256", path: ["metrics_sha256"],
        message: raw === null ? "run_end names a metrics_sha256 but metrics.jsonl is missing" : "run_end.metrics_sha256 is not the SHA-256 of metrics.jsonl" });
    }
  }
  return found;
}

module.exports = { verifyDiary, lineHash, GENESIS };
