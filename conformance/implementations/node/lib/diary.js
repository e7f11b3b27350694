// @ts-check
/**
 * Verify a training record folder (diary.jsonl, metrics.jsonl, record.json, record.sig) in
 * Node, with the rule ids of spec/rules/diary.json and the verdict of the Python verifier
 * (runtime/trainrecord/diary/verify.py): the first failing line and the one rule it breaks.
 *
 * Per line, in this order: strict JSON object, the event's schema, time a float rounded to
 * milliseconds (diary.time.precision), seq (contiguous from 0),
 * prev (64 zeros first, then the hash of the line before), only a run_start may follow a
 * run_end (a resumed run), the canonical body can be written, and the hash, then the
 * fields of a repair or run_end that a schema cannot relate (relationProblem). The first
 * line is run_start. A last line without a newline is a torn tail (a crash), not a failure.
 * Then metrics.jsonl (strict JSON rows, the row schema, steps increasing in one session's
 * rows; the last run_end of a complete record hashes the whole file, earlier ones a prefix
 * of it after the previous one's; a run_end alone in its session has one row per check),
 * then the seal, when present.
 */
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const crypto = require("node:crypto");
const { parse, canonicalLine, floatRepr } = require("./pyjson");
const { problems } = require("./validate");
const { fingerprint } = require("./keys");

/** @typedef {import("./pyjson").PyValue} PyValue */
/** @typedef {{file: string, line: number, seq: bigint | null, rule: string, message: string}} Failure */

const GENESIS = "0".repeat(64);
const BASE = "https://trainrecord.dev/schemas/diary/";
/** @typedef {import("@trainrecord/spec").SchemaId} SchemaId */
/** @type {SchemaId} */
const LINE_SCHEMA = `${BASE}line.schema.json`;
/** @type {SchemaId} */
const METRICS_ROW_SCHEMA = `${BASE}metrics-row.schema.json`;
/** @type {SchemaId} */
const SEAL_SCHEMA = `${BASE}record.schema.json`;
/** @typedef {keyof import("@trainrecord/spec").DiaryKnownLineByEvent} EventType */
/** @type {EventType} */
const RUN_START = "run_start";
/** @type {EventType} */
const RUN_END = "run_end";
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
 * What is wrong with a line's time (diary.time.precision), or null: the seed's time is a
 * float rounded to milliseconds, so an integer token (a BigInt from pyjson.parse) or a float
 * with more than three decimals in Python's repr (its shortest form) is refused. As the
 * Python verifier (runtime/trainrecord/diary/chain.py, time_problem).
 * @param {PyValue} t
 * @returns {string | null}
 */
function timeProblem(t) {
  if (typeof t === "bigint") {
    return `time: ${t} is an integer token; time is a float (Unix seconds rounded to milliseconds): write it as a float, ${t}.0, as round(time.time(), 3) gives it`;
  }
  if (typeof t !== "number") return null; // not a number: the schema (diary.time.type) says so
  const repr = floatRepr(t);
  const m = /^-?\d+(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(repr);
  const digits = (m?.[1] ?? "").replace(/0+$/, "").length;
  if (Math.max(0, digits - Number(m?.[2] ?? 0)) <= 3) return null;
  return `time: ${repr} has more than three decimals; time is Unix seconds rounded to milliseconds: write round(time.time(), 3)`;
}

/**
 * diary.file.regular when `file` exists and is not a regular file (a folder, a FIFO, a
 * socket, a device: reading one throws or blocks); null otherwise. A link to a regular file
 * counts as one. As the Python verifier (runtime/trainrecord/diary/chain.py, irregular).
 * @param {string} file
 * @param {string} name
 * @returns {Failure | null}
 */
function irregular(file, name) {
  let st;
  try {
    st = fs.statSync(file);
  } catch {
    return null; // missing (or a dangling link): the caller's own rule
  }
  if (st.isFile()) return null;
  const kind = st.isDirectory() ? "a folder" : st.isFIFO() ? "a FIFO (named pipe)" : st.isSocket() ? "a socket" : "a device";
  return fail(name, 0, null, "diary.file.regular", `${name} is ${kind}, not a regular file; a record's ${name} is a file: move that away and put the record's ${name} there`);
}

/** @param {import("./refused").Problem} p the field and what is wrong (the rule is shown apart) */
const problemText = (p) => `${p.path.join(".")}: ${p.message}`;

/** @param {Buffer} data */
const sha256 = (data) => crypto.createHash("sha256").update(data).digest("hex");

/** What to do about a record whose files were converted to CRLF line ends (chain.py's CRLF_FIX). */
const CRLF_FIX =
  "a Windows checkout (git's core.autocrlf) or an editor converted the record's line ends: " +
  "convert its files back (dos2unix diary.jsonl metrics.jsonl record.json record.sig) and keep " +
  "git from converting them (`*.jsonl -text` and `record.* -text` in .gitattributes)";

/**
 * The bytes with each CR LF made LF (Python's `bytes.replace(b"\r\n", b"\n")`).
 * @param {Buffer} data
 * @returns {Buffer}
 */
function lfOnly(data) {
  return Buffer.from(data.toString("latin1").replaceAll("\r\n", "\n"), "latin1");
}

/**
 * "" unless `file` holds a CR LF; then "; NAME has CRLF line ends ...", to follow a digest or
 * signature failure of that file: whether the file with LF line ends has SHA-256 `sha` (null:
 * not known) and what to do (chain.py's crlf_note). The verdict stays the rule's.
 * @param {string} file
 * @param {string | null} [sha]
 * @returns {string}
 */
function crlfNote(file, sha = null) {
  let data;
  try {
    data = fs.readFileSync(file);
  } catch {
    return "";
  }
  if (data.indexOf("\r\n") < 0) return "";
  const name = path.basename(file);
  if (sha === null) return `; ${name} has CRLF line ends: ${CRLF_FIX}`;
  if (sha256(lfOnly(data)) === sha) return `; ${name} has CRLF line ends, and with LF line ends it matches: ${CRLF_FIX}`;
  return `; ${name} has CRLF line ends, and with LF line ends it does not match either: more than its line ends was changed`;
}

/**
 * What to add to a signature that does not hold when record.json has CRLF line ends: whether
 * it holds over the LF bytes (the ones signed), and what to do; "" otherwise (seal.py's
 * _crlf_signed).
 * @param {crypto.KeyObject} key
 * @param {Buffer} signature
 * @param {Buffer} data
 * @returns {string}
 */
function crlfSigned(key, signature, data) {
  if (data.indexOf("\r\n") < 0) return "";
  if (!crypto.verify(null, lfOnly(data), key, signature)) {
    return "; record.json has CRLF line ends, and with LF line ends the signature does not hold either: more than its line ends was changed";
  }
  return `; record.json has CRLF line ends, and with LF line ends it matches: ${CRLF_FIX}`;
}

/**
 * @param {Buffer} raw
 * @returns {PyValue}
 */
function parseStrict(raw) {
  let text;
  try {
    text = utf8.decode(raw);
  } catch {
    throw new Error("the line is not UTF-8");
  }
  return parse(text);
}

/** @param {PyValue} v @returns {v is Record<string, PyValue>} */
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * @param {string} file
 * @param {number} line
 * @param {bigint | null} seq
 * @param {string} rule
 * @param {string} message
 * @returns {Failure}
 */
const fail = (file, line, seq, rule, message) => ({ file, line, seq, rule, message });

/**
 * Verify the record in `folder`.
 * @param {string} folder
 * @param {{publicKey?: crypto.KeyObject | null, checkSeal?: boolean}} [options] the signer's
 *   public key (keys.loadPublicKey); checkSeal false leaves record.json and record.sig aside
 *   (the seal writer verifies a record before it replaces its seal)
 */
function verifyDiary(folder, options = {}) {
  const file = path.join(folder, "diary.jsonl");
  /** @type {{status: string, lines: number, head_seq: bigint | null, head_hash: string | null, failure: Failure | null, torn_bytes: number, complete: boolean, sealed: boolean, signed: boolean, signature: string | null, sealed_at: number | bigint | null, sealed_lines: bigint | null, warnings: string[]}} */
  const result = {
    status: "ok", lines: 0, head_seq: null, head_hash: null, failure: null, torn_bytes: 0, complete: false, sealed: false, signed: false,
    signature: null, sealed_at: null, sealed_lines: null, warnings: [],
  };
  const done = (/** @type {Failure | null} */ failure) => {
    if (failure !== null) {
      result.status = "failed";
      result.failure = failure;
    }
    return result;
  };
  const odd = irregular(file, "diary.jsonl");
  if (odd !== null) return done(odd);
  let raw;
  try {
    raw = fs.readFileSync(file);
  } catch {
    return done(fail("diary.jsonl", 0, null, "diary.file.empty", "diary.jsonl does not exist"));
  }
  if (raw.length === 0) return done(fail("diary.jsonl", 0, null, "diary.file.empty", "diary.jsonl is empty"));
  const completeEnd = raw.lastIndexOf(0x0a) + 1;
  const torn = raw.length - completeEnd;
  let prevHash = GENESIS;
  /** @type {string | null} */
  let prevEvent = null;
  /** @type {RunEnd[]} */
  const runEnds = [];
  let starts = 0; // run_start lines since the last run_end
  let lineNo = 0;
  let pos = 0;
  while (pos < completeEnd) {
    const nl = raw.indexOf(0x0a, pos);
    const bytes = raw.subarray(pos, nl);
    pos = nl + 1;
    lineNo += 1;
    let value;
    try {
      value = parseStrict(bytes);
    } catch (e) {
      return done(fail("diary.jsonl", lineNo, null, "diary.file.json", /** @type {Error} */ (e).message));
    }
    if (!isObject(value)) return done(fail("diary.jsonl", lineNo, null, "diary.file.json", "the line is not a JSON object"));
    const seq = typeof value.seq === "bigint" ? value.seq : null;
    const found = problems(value, LINE_SCHEMA);
    if (found.length > 0) {
      const p = /** @type {import("./refused").Problem} */ (found[0]);
      return done(fail("diary.jsonl", lineNo, seq, p.rule, problemText(p)));
    }
    const badTime = timeProblem(value.time);
    if (badTime !== null) return done(fail("diary.jsonl", lineNo, seq, "diary.time.precision", badTime));
    const expected = BigInt(lineNo - 1);
    if (seq !== expected) return done(fail("diary.jsonl", lineNo, seq, "diary.chain.seq", `seq is ${seq}, expected ${expected}`));
    if (value.prev !== prevHash) {
      return done(fail("diary.jsonl", lineNo, seq, "diary.chain.prev", lineNo === 1 ? "the first line's prev is not 64 zeros"
        : "prev is not the hash of the line before (a line was removed, inserted, reordered or changed)"));
    }
    const event = /** @type {string} */ (value.event);
    if (lineNo === 1 && event !== RUN_START) {
      return done(fail("diary.jsonl", 1, seq, "diary.order.run_start", `the first line is ${event}, not run_start`));
    }
    if (prevEvent === RUN_END && event !== RUN_START) {
      return done(fail("diary.jsonl", lineNo, seq, "diary.order.run_end", `a ${event} line follows run_end; only a run_start (a resumed run) may`));
    }
    /** @type {Record<string, PyValue>} */
    const body = {};
    for (const [k, v] of Object.entries(value)) {
      if (k !== "prev" && k !== "hash") Object.defineProperty(body, k, { value: v, enumerable: true, writable: true, configurable: true });
    }
    let digest;
    try {
      digest = lineHash(/** @type {string} */ (value.prev), body);
    } catch {
      return done(fail("diary.jsonl", lineNo, seq, "diary.file.json", "the line holds a value canonical JSON cannot write"));
    }
    if (digest !== value.hash) {
      return done(fail("diary.jsonl", lineNo, seq, "diary.chain.hash", "hash does not match the line's content: the line was changed after it was written"));
    }
    const broken = relationProblem(event, value);
    if (broken !== null) return done(fail("diary.jsonl", lineNo, seq, broken[0], broken[1]));
    if (event === RUN_END) {
      const error = value.error;
      runEnds.push({ line: lineNo, sha: /** @type {string} */ (value.metrics_sha256), checks: Number(value.checks), errored: error !== undefined && error !== null, sessions: starts });
      starts = 0;
    } else if (event === RUN_START) {
      starts += 1;
    }
    prevHash = digest;
    prevEvent = event;
    result.lines = lineNo;
    result.head_seq = seq;
    result.head_hash = digest;
  }
  result.complete = prevEvent === RUN_END;
  // no complete line and no torn one is no record; a lone torn line is a torn tail (a crash
  // while the first line was written): status torn, as in Python
  if (result.lines === 0 && !torn) return done(fail("diary.jsonl", 1, null, "diary.file.empty", "the diary has no complete line"));
  const metricsFailure = checkMetrics(folder, runEnds, starts, result.complete);
  if (metricsFailure !== null) return done(metricsFailure);
  if (options.checkSeal ?? true) {
    const sealFailure = checkSeal(folder, result, torn, options.publicKey ?? null);
    if (sealFailure !== null) return done(sealFailure);
  }
  if (torn) {
    result.status = "torn";
    result.torn_bytes = torn;
  }
  return result;
}

const RELATIVE_TOLERANCE = 1e-6;
/** @typedef {{line: number, sha: string, checks: number, errored: boolean, sessions: number}} RunEnd */

/**
 * A JSON number as a double (an integer token is a BigInt; beyond a double: Infinity).
 * @param {PyValue} v
 * @returns {number}
 */
const toNumber = (v) => (typeof v === "bigint" ? Number(v) : /** @type {number} */ (v));

/**
 * (rule, message, field) of a schema-valid line whose fields break a relation, or null: a repair's
 * relative_change is delta_norm / weight_norm_before within a relative 1e-6, null exactly
 * when weight_norm_before is 0; a run_end's checks are at most its steps. As the Python
 * verifier (runtime/trainrecord/diary/relations.py). The verifier fails such a line; the
 * writer (diary-writer.js) refuses it, naming the field.
 * @param {string} event
 * @param {Record<string, PyValue>} value
 * @returns {[string, string, string] | null}
 */
function relationProblem(event, value) {
  if (event === "repair") {
    const rule = "diary.repair.relative_change.value";
    const before = toNumber(value.weight_norm_before);
    const given = value.relative_change;
    if (before === 0) {
      return given === null ? null : [rule, "relative_change: not null where weight_norm_before is 0; it is null when the weight norm before the repair was 0", "relative_change"];
    }
    const expected = toNumber(value.delta_norm) / before;
    if (given === null) return [rule, `relative_change: null, but weight_norm_before is not 0; it is delta_norm / weight_norm_before = ${expected}`, "relative_change"];
    const g = toNumber(given);
    if (Number.isFinite(g) && Number.isFinite(expected) && Math.abs(g - expected) <= RELATIVE_TOLERANCE * Math.max(Math.abs(g), Math.abs(expected))) return null;
    return [rule, `relative_change: ${g} is not delta_norm / weight_norm_before = ${expected} (within a relative 1e-06)`, "relative_change"];
  }
  if (event === RUN_END) {
    const checks = /** @type {bigint} */ (value.checks);
    const steps = /** @type {bigint} */ (value.steps);
    if (checks > steps) return ["diary.run_end.checks", `checks: ${checks} checks in ${steps} steps; a check runs at a step of its session, at most one per step`, "checks"];
  }
  return null;
}

/**
 * metrics.jsonl against the run_ends: rows (strict JSON, the row schema); each run_end's
 * digest names a prefix after the previous one's (a complete record's last: the whole file);
 * the rows between two run_ends with one run_start between them are one session's: steps
 * increase (diary.metrics.order) and there is one per check (diary.metrics.rows; at most
 * one when the run_end names an error). As runtime/trainrecord/diary/verifier.py.
 * @param {string} folder
 * @param {RunEnd[]} runEnds
 * @param {number} trailingStarts run_start lines after the last run_end
 * @param {boolean} complete
 * @returns {Failure | null}
 */
function checkMetrics(folder, runEnds, trailingStarts, complete) {
  const file = path.join(folder, "metrics.jsonl");
  const odd = irregular(file, "metrics.jsonl");
  if (odd !== null) return odd;
  if (!fs.existsSync(file)) {
    if (runEnds.length > 0) return fail("diary.jsonl", /** @type {RunEnd} */ (runEnds[0]).line, null, "diary.metrics.sha256", "run_end names metrics_sha256 but metrics.jsonl is missing");
    return null;
  }
  const data = fs.readFileSync(file);
  const prefixes = runEnds.length - (complete && runEnds.length > 0 ? 1 : 0);
  let next = 0; // the run_end whose prefix comes next
  let begun = 0; // rows before the open segment
  /** @type {bigint | null} */
  let lastStep = null;
  /** @type {Failure | null} */
  let related = null; // the first diary.metrics.order or .rows: said once the digests hold
  const oneSession = () => (next < runEnds.length ? /** @type {RunEnd} */ (runEnds[next]).sessions : trailingStarts) === 1;
  /** @param {number} rows */
  const close = (rows) => {
    const end = /** @type {RunEnd} */ (runEnds[next]);
    const count = rows - begun;
    if (end.sessions === 1 && related === null && (count > end.checks || (count < end.checks && !end.errored))) {
      related = fail("diary.jsonl", end.line, null, "diary.metrics.rows", `run_end: ${end.checks} checks, but metrics.jsonl holds ${count} rows for its session; one row per check`);
    }
    next += 1;
    begun = rows;
    lastStep = null;
  };
  /** @param {string} hex @param {number} rows */
  const atPrefix = (hex, rows) => {
    while (next < prefixes && /** @type {RunEnd} */ (runEnds[next]).sha === hex) close(rows);
  };
  // a digest failure says whether CRLF line ends explain it (against the last run_end's digest)
  const lastNote = () => crlfNote(file, complete && runEnds.length > 0 ? /** @type {RunEnd} */ (runEnds[runEnds.length - 1]).sha : null);
  const digest = crypto.createHash("sha256");
  atPrefix(digest.copy().digest("hex"), 0);
  let pos = 0;
  let row = 0;
  while (pos < data.length) {
    const nl = data.indexOf(0x0a, pos);
    if (nl < 0) break; // a torn last row: a warning in the Python verifier
    row += 1;
    let value;
    try {
      value = parseStrict(data.subarray(pos, nl));
    } catch (e) {
      return fail("metrics.jsonl", row, null, "diary.metrics.json", /** @type {Error} */ (e).message);
    }
    const found = problems(value, METRICS_ROW_SCHEMA);
    if (found.length > 0) {
      const p = /** @type {import("./refused").Problem} */ (found[0]);
      return fail("metrics.jsonl", row, null, p.rule, problemText(p));
    }
    const step = /** @type {bigint} */ (/** @type {Record<string, PyValue>} */ (value).step);
    const last = lastStep;
    lastStep = step;
    if (last !== null && step <= last && related === null && oneSession()) {
      related = fail("metrics.jsonl", row, null, "diary.metrics.order", `step: ${step} after step ${last} in one session's rows; a session's checks run at increasing steps`);
    }
    digest.update(data.subarray(pos, nl + 1));
    if (next < prefixes) atPrefix(digest.copy().digest("hex"), row);
    pos = nl + 1;
  }
  if (next < prefixes) {
    return fail("diary.jsonl", /** @type {RunEnd} */ (runEnds[next]).line, null, "diary.metrics.sha256", "run_end.metrics_sha256 does not match metrics.jsonl (any prefix of it after the previous run_end's)" + lastNote());
  }
  if (prefixes < runEnds.length) {
    const final = /** @type {RunEnd} */ (runEnds[runEnds.length - 1]);
    if (final.sha !== sha256(data)) return fail("diary.jsonl", final.line, null, "diary.metrics.sha256", "run_end.metrics_sha256 does not match metrics.jsonl (the whole file)" + lastNote());
    close(row);
  }
  return related;
}

/**
 * (sha256, bytes, lines) of a file.
 * @param {string} file
 * @returns {[string, number, number]}
 */
function fileFacts(file) {
  const data = fs.readFileSync(file);
  let lines = 0;
  for (const b of data) if (b === 0x0a) lines++;
  return [sha256(data), data.length, lines];
}

/**
 * record.json and record.sig against the files (runtime/trainrecord/diary/seal.py).
 * @param {string} folder
 * @param {any} result
 * @param {number} torn
 * @param {crypto.KeyObject | null} publicKey
 * @returns {Failure | null}
 */
function checkSeal(folder, result, torn, publicKey) {
  const sealPath = path.join(folder, "record.json");
  const sigPath = path.join(folder, "record.sig");
  const sealFail = (/** @type {string} */ rule, /** @type {string} */ message, f = "record.json") => fail(f, 0, null, rule, message);
  const odd = irregular(sealPath, "record.json") ?? irregular(sigPath, "record.sig");
  if (odd !== null) return odd;
  if (!fs.existsSync(sealPath)) {
    if (fs.existsSync(sigPath)) return sealFail("seal.missing", "record.sig is present but record.json is missing");
    if (publicKey !== null) return sealFail("seal.missing", "a public key was given but the record is not sealed (no record.json)");
    result.warnings.push("not sealed: no record.json (a cut tail cannot be detected)");
    return null;
  }
  const data = fs.readFileSync(sealPath);
  let seal;
  try {
    seal = parseStrict(data);
  } catch (e) {
    return sealFail("seal.file.json", `record.json is not strict JSON: ${/** @type {Error} */ (e).message}`);
  }
  const found = problems(seal, SEAL_SCHEMA);
  if (found.length > 0) return sealFail(/** @type {any} */ (found[0]).rule, problemText(/** @type {any} */ (found[0])));
  const s = /** @type {any} */ (seal);
  const [sha, size, lines] = fileFacts(path.join(folder, "diary.jsonl"));
  if (BigInt(lines) !== s.diary.lines || torn) {
    const cause = linesCause(path.join(folder, "diary.jsonl"), s.diary.lines, s.diary.head_hash, BigInt(lines));
    return sealFail("seal.diary.lines", `the seal pins ${s.diary.lines} lines but diary.jsonl has ${lines}${torn ? " and a torn tail" : ""}: ${cause}`);
  }
  if (s.diary.head_seq !== result.head_seq || s.diary.head_hash !== result.head_hash) {
    return sealFail("seal.diary.head", "the seal's head (last seq and hash) is not the diary's: record.json is another record's seal, or the diary was rewritten after sealing");
  }
  if (sha !== s.diary.sha256 || BigInt(size) !== s.diary.bytes) return sealFail("seal.diary.sha256", "diary.jsonl's SHA-256 differs from the sealed one" + crlfNote(path.join(folder, "diary.jsonl"), s.diary.sha256));
  const mpath = path.join(folder, "metrics.jsonl");
  if (s.metrics === null) {
    if (fs.existsSync(mpath)) return sealFail("seal.metrics.sha256", "metrics.jsonl exists but the seal has none");
  } else {
    if (!fs.existsSync(mpath)) return sealFail("seal.metrics.sha256", "the seal names metrics.jsonl but it is missing");
    const [msha, msize, mrows] = fileFacts(mpath);
    if (msha !== s.metrics.sha256 || BigInt(msize) !== s.metrics.bytes || BigInt(mrows) !== s.metrics.rows) {
      return sealFail("seal.metrics.sha256", "metrics.jsonl differs from the sealed one" + crlfNote(mpath, s.metrics.sha256));
    }
  }
  result.sealed = true;
  result.sealed_at = s.sealed_at;
  result.sealed_lines = s.diary.lines;
  if (s.signature === null) {
    if (fs.existsSync(sigPath)) return sealFail("seal.signature.unexpected", "record.sig is present but record.json names no signature", "record.sig");
    if (publicKey !== null) {
      return sealFail("seal.signature.missing", "a public key was given but the record is not signed: record.json names no signature and there is no record.sig (an unsigned seal can be written by anyone)");
    }
    result.signature = "absent";
    return null;
  }
  if (!fs.existsSync(sigPath)) return sealFail("seal.signature.missing", "record.json names a signature but record.sig is missing", "record.sig");
  const sigRaw = fs.readFileSync(sigPath);
  const text = sigRaw.toString("latin1");
  let signature = null;
  if (/^[\x00-\x7f]*$/.test(text) && text.endsWith("\n") && text.split("\n").length === 2) {
    const b64 = text.slice(0, -1); // nothing around it: no CR, no spaces or tabs (as Python)
    if (/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(b64)) {
      const bytes = Buffer.from(b64, "base64");
      if (bytes.length === 64 && bytes.toString("base64") === b64) signature = bytes; // canonical: zero padding bits
    }
  }
  if (signature === null) return sealFail("seal.signature.format", "record.sig is not one line of base64 holding a 64-byte Ed25519 signature" + crlfNote(sigPath), "record.sig");
  if (publicKey === null) {
    result.signature = "not checked";
    result.warnings.push("signature not checked: record.sig is there; pass the signer's public key (--key PUBLIC_KEY) to check it");
    return null;
  }
  const key = publicKey;
  if (fingerprint(key) !== s.signature.public_key_sha256) {
    return sealFail("seal.signature.key", "the record was signed with another key (the fingerprint in record.json is not the given key's)");
  }
  if (!crypto.verify(null, data, key, signature)) {
    return sealFail("seal.signature.invalid", "record.sig is not a valid signature of record.json by the given key" + crlfSigned(key, signature, data), "record.sig");
  }
  result.signed = true;
  result.signature = "valid";
  return null;
}

/**
 * The hash field of line `number` (1-based) of `file`, null when there is no such line or
 * it is not a JSON object (seal.py's _hash_of_line).
 * @param {string} file
 * @param {bigint} number
 * @returns {unknown}
 */
function hashOfLine(file, number) {
  const data = fs.readFileSync(file);
  let start = 0;
  for (let at = 1n; start <= data.length; at++) {
    const nl = data.indexOf(0x0a, start);
    const end = nl < 0 ? data.length : nl;
    if (at === number) {
      if (nl < 0 && end === start) return null;
      try {
        const line = parseStrict(data.subarray(start, end));
        return isObject(line) ? line.hash ?? null : null;
      } catch {
        return null;
      }
    }
    if (nl < 0) return null;
    start = nl + 1;
  }
  return null;
}

/**
 * What a line count unlike the seal's shows, and only that (seal.py's _lines_cause).
 * @param {string} file
 * @param {bigint} sealed
 * @param {string} headHash
 * @param {bigint} lines
 * @returns {string}
 */
function linesCause(file, sealed, headHash, lines) {
  if (lines >= sealed && hashOfLine(file, sealed) === headHash) {
    return "its first lines end at the sealed head, so the diary was appended to after sealing";
  }
  if (lines < sealed) return "the diary was cut after sealing, or record.json is another record's seal";
  return `its line ${sealed} is not the sealed head, so record.json is another record's seal, or the diary was rewritten after sealing`;
}

module.exports = { verifyDiary, lineHash, relationProblem, GENESIS };
