// @ts-check
/**
 * Foundry run records v1 in Node: the configuration hash, the witness writer and the
 * metrics writer, with the seed's refusal rules and the rule ids of spec/rules/foundry.json.
 *
 * Environment integers are spelled as spec/README.md fixes them: surrounding ASCII white
 * space stripped, then an optional sign and ASCII digits only, within the signed 64-bit range.
 */
"use strict";

const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const crypto = require("node:crypto");
const { canonicalConfig, dumpsCompact, dumpsIndented, floatRepr, parse } = require("./pyjson");
const { problems, isBlank } = require("./validate");
const files = require("./files");
const { Refused } = require("./refused");

/** @typedef {import("./pyjson").PyValue} PyValue */
/** @typedef {import("./refused").Problem} Problem */
/** @typedef {import("@trainrecord/spec").SchemaId} SchemaId */
/** @typedef {import("@trainrecord/spec").FoundryMetricsRow} FoundryMetricsRow */

/** @type {SchemaId} */
const WITNESS_SCHEMA = "https://trainrecord.dev/schemas/foundry/witness.schema.json";
/** @type {SchemaId} */
const METRICS_SCHEMA = "https://trainrecord.dev/schemas/foundry/metrics.schema.json";
/** @type {(keyof FoundryMetricsRow)[]} The row fields, in the order the writer puts them. */
const FIELDS = ["benchmark", "metric", "horizon", "seed", "value"];
const ASCII_SPACE = /^[ \t\n\r\f\v]+|[ \t\n\r\f\v]+$/g;
const MAX_INT_DIGITS = 4300;
/** Whether `v` is an integer of more than MAX_INT_DIGITS digits (no Python json reads one).
 * @param {PyValue} v */
const tooLong = (v) => typeof v === "bigint" && (v < 0n ? -v : v).toString().length > MAX_INT_DIGITS;
/**
 * The `<kind>.<field>.type` problem of each of `fields` of `obj` holding a too long integer.
 * @param {PyValue} obj @param {string[]} fields @param {string} kind @param {(string|number)[]} at
 * @returns {import("./refused").Problem[]}
 */
function longIntProblems(obj, fields, kind, at = []) {
  if (!isObject(obj)) return [];
  return fields.filter((f) => Object.prototype.hasOwnProperty.call(obj, f) && tooLong(obj[f])).map((f) => ({
    rule: `${kind}.${f}.type`,
    path: [...at, f],
    message: `an integer of more than ${MAX_INT_DIGITS} digits; the records hold integers of at most ${MAX_INT_DIGITS} digits (no JSON reader of Python takes a longer one)`,
  }));
}
/** Whether parsed JSON holds a too long integer. @param {PyValue} v @returns {boolean} */
function longIntIn(v) {
  if (Array.isArray(v)) return v.some(longIntIn);
  if (isObject(v)) return Object.values(v).some(longIntIn);
  return tooLong(v);
}
const LONG_INT_FILE = `an integer token of more than ${MAX_INT_DIGITS} digits, which the records never hold (no JSON reader of Python takes one)`;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * First 16 hex characters of sha256 over json.dumps(config, sort_keys=True), NaN and
 * infinities written as json.dumps writes them (NaN, Infinity, -Infinity).
 * @param {PyValue} config
 */
function configSha(config) {
  let text;
  try {
    text = canonicalConfig(config);
  } catch (e) {
    throw Refused.one("witness.config.serializable", ["config"],
      `json.dumps(config, sort_keys=True) cannot serialize the configuration (${/** @type {Error} */ (e).message}); pass only JSON values`);
  }
  return crypto.createHash("sha256").update(text, "utf8").digest("hex").slice(0, 16);
}

/**
 * @typedef {{name: string, minimum: bigint | null, below: string}} EnvInteger
 */
const RUN_ID = { name: "FOUNDRY_RUN_ID", minimum: null, below: "range" };
const RANK = { name: "RANK", minimum: 0n, below: "negative" };
const SLURM_PROCID = { name: "SLURM_PROCID", minimum: 0n, below: "negative" };
const RESTART_COUNT = { name: "SLURM_RESTART_COUNT", minimum: 0n, below: "negative" };
const OMP_NUM_THREADS = { name: "OMP_NUM_THREADS", minimum: 1n, below: "range" };

/**
 * @param {EnvInteger} v
 * @param {string} rule
 * @param {string} message
 * @returns {Problem}
 */
const envProblem = (v, rule, message) => ({ rule: `witness.env.${v.name.toLowerCase()}.${rule}`, path: [v.name], message });

/**
 * Read one integer variable: [is it set, its value, its problem].
 * @param {Record<string, PyValue>} env
 * @param {EnvInteger} v
 * @returns {[boolean, bigint | null, Problem | null]}
 */
function readInteger(env, v) {
  if (!Object.prototype.hasOwnProperty.call(env, v.name)) return [false, null, null];
  const raw = env[v.name];
  if (typeof raw !== "string") {
    return [true, null, { rule: "witness.env.type", path: [v.name], message: `${v.name} must be text, as environment variables are` }];
  }
  const text = raw.replace(ASCII_SPACE, "");
  if (!/^[+-]?[0-9]+$/.test(text)) {
    return [true, null, envProblem(v, "integer", `${v.name} must be an integer: ASCII digits with an optional sign; fix or unset it`)];
  }
  const value = BigInt(text);
  if (value < INT64_MIN || value > INT64_MAX) {
    return [true, null, envProblem(v, "integer", `${v.name} is outside the signed 64-bit integer range`)];
  }
  if (v.minimum !== null && value < v.minimum) {
    return [true, null, envProblem(v, v.below, `${v.name} must be at least ${v.minimum}; fix or unset it`)];
  }
  return [true, value, null];
}

/**
 * The rank: RANK when set, else SLURM_PROCID when set, else 0.
 * @param {Record<string, PyValue>} env
 * @returns {[bigint | null, Problem | null]}
 */
function readRank(env) {
  for (const v of [RANK, SLURM_PROCID]) {
    const [present, value, problem] = readInteger(env, v);
    if (present) return [value, problem];
  }
  return [0n, null];
}

/**
 * FOUNDRY_RUN_ID: required, not blank, an integer.
 * @param {Record<string, PyValue>} env
 * @returns {[bigint | null, Problem | null]}
 */
function readRunId(env) {
  if (!Object.prototype.hasOwnProperty.call(env, RUN_ID.name)) {
    return [null, envProblem(RUN_ID, "unset", "FOUNDRY_RUN_ID is not set; the launcher must export the integer run id")];
  }
  const raw = env[RUN_ID.name];
  if (typeof raw === "string" && isBlank(raw)) { // white space as Unicode (Python's str.isspace) has it
    return [null, envProblem(RUN_ID, "blank", "FOUNDRY_RUN_ID is blank; set it to the integer run id")];
  }
  const [, value, problem] = readInteger(env, RUN_ID);
  return [value, problem];
}

/** The CPU count this process may run on (its affinity). */
const cpuCount = () => BigInt(os.availableParallelism());

/** datetime.now(timezone.utc).isoformat(): microseconds only when not zero, offset +00:00. */
function capturedAt() {
  const micros = BigInt(Math.floor((performance.timeOrigin + performance.now()) * 1000));
  const date = new Date(Number(micros / 1000n));
  const base = date.toISOString().slice(0, 19);
  const frac = Number(micros % 1000000n);
  return `${base}${frac === 0 ? "" : `.${String(frac).padStart(6, "0")}`}+00:00`;
}

/** @param {PyValue} v @returns {v is Record<string, PyValue>} */
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * Write observed.attempt<N>.json into `dir`; return its path, or null on a nonzero rank.
 * Every input is checked before anything is created; a refusal throws Refused with every
 * problem and leaves the filesystem as it was. An existing witness is never replaced.
 * @param {{dir: string, env: PyValue, config: PyValue, device: PyValue, wall_seconds: PyValue}} args
 * @returns {string | null}
 */
function writeWitness({ dir, env, config, device, wall_seconds }) {
  if (!isObject(env)) throw Refused.one("witness.env.type", ["env"], "env must be a mapping from variable name to text");
  /** @type {Problem[]} */
  const found = [];
  const [rank, rankProblem] = readRank(env);
  if (rankProblem) found.push(rankProblem);
  if (found.length === 0 && rank !== 0n) return null;
  const [runId, runIdProblem] = readRunId(env);
  if (runIdProblem) found.push(runIdProblem);
  const [attemptSet, attempt, attemptProblem] = readInteger(env, RESTART_COUNT);
  if (attemptProblem) found.push(attemptProblem);
  const [threadsSet, threads, threadsProblem] = readInteger(env, OMP_NUM_THREADS);
  if (threadsProblem) found.push(threadsProblem);
  let deviceText = "cpu";
  if (typeof device !== "string") {
    found.push({ rule: "witness.device.type", path: ["device"], message: "device must be text such as 'cpu', 'cuda', 'cuda:1' or 'mps'" });
  } else {
    const notText = fieldTextProblems({ device }, ["device"], "witness");
    if (notText.length > 0) found.push(...notText);
    else deviceText = device;
  }
  let sha = "0".repeat(16);
  try {
    sha = configSha(config);
  } catch (e) {
    if (!(e instanceof Refused)) throw e;
    found.push(...e.problems);
  }
  /** @type {Record<string, PyValue>} */
  const witness = {
    attempt: attemptSet && attempt !== null ? attempt : 0n,
    captured_at: capturedAt(),
    config_sha: sha,
    cpu_threads: threadsSet ? (threads ?? 1n) : cpuCount(),
    device: deviceText,
    device_name: null,
    experiment_id: runId ?? 0n,
    peak_vram_mb: null,
    run_record_format: 1n,
    wall_seconds,
  };
  found.push(...problems(witness, WITNESS_SCHEMA).filter((p) => p.path[0] === "wall_seconds" || p.path[0] === "device"));
  found.push(...longIntProblems(witness, ["wall_seconds"], "witness"));
  if (found.length > 0) throw new Refused(found);
  files.checkFolder(dir, "witness.path.results_dir");
  const target = path.join(dir, `observed.attempt${witness.attempt}.json`);
  const exists = () => Refused.one("witness.path.exists", [path.basename(target)],
    `the witness ${target} already exists and is never replaced; use a new SLURM_RESTART_COUNT or another results directory`);
  if (fs.existsSync(target) || isSymlink(target)) throw exists();
  // No PyTorch here: device_name and peak_vram_mb stay null, as on the CPU.
  const guarantee = problems(witness, WITNESS_SCHEMA);
  if (guarantee.length > 0) throw new Refused(guarantee);
  const data = Buffer.from(`${dumpsIndented(witness, 2)}\n`, "utf8");
  try {
    files.inFolder(dir, () => files.createNew(target, data));
  } catch (e) {
    if (/** @type {NodeJS.ErrnoException} */ (e).code === "EEXIST") throw exists();
    throw e;
  }
  return target;
}

/** @param {string} p */
function isSymlink(p) {
  try {
    return fs.lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * Validate every row, then atomically write `dir/metrics.json`; return its path. Nothing is
 * created unless every row is valid.
 * @param {{dir: string, rows: PyValue}} args
 * @returns {string}
 */
function writeMetrics({ dir, rows }) {
  let plain = rows;
  if (Array.isArray(rows)) {
    plain = rows.map((row) => {
      if (!isObject(row)) return row;
      /** @type {Record<string, PyValue>} */
      const ordered = {};
      for (const k of [...FIELDS.filter((f) => f in row), ...Object.keys(row).filter((k) => !(/** @type {string[]} */ (FIELDS)).includes(k))]) {
        Object.defineProperty(ordered, k, { value: row[k], writable: true, enumerable: true, configurable: true });
      }
      return ordered;
    });
  }
  const found = [...problems(plain, METRICS_SCHEMA), ...textProblems(plain)];
  if (Array.isArray(plain)) plain.forEach((row, i) => found.push(...longIntProblems(row, ["horizon", "seed"], "metrics", [i])));
  if (found.length > 0) throw new Refused(found);
  const data = Buffer.from(`${dumpsIndented(plain, 2)}\n`, "utf8");
  files.checkFolder(dir, "metrics.path.results_dir");
  const target = path.join(dir, "metrics.json");
  files.inFolder(dir, () => files.replace(target, data));
  return target;
}

/**
 * A `<prefix>.<field>.type` problem for each of `fields` of the object `doc` that is text
 * with a lone surrogate (which JSON can carry but UTF-8 cannot: not text). Anything else
 * is left to the schema.
 * @param {PyValue} doc
 * @param {string[]} fields
 * @param {string} prefix
 * @param {(string|number)[]} [at] the object's own path
 * @returns {import("./refused").Problem[]}
 */
function fieldTextProblems(doc, fields, prefix, at = []) {
  /** @type {import("./refused").Problem[]} */
  const found = [];
  if (!isObject(doc)) return found;
  for (const key of fields) {
    const v = doc[key];
    if (typeof v === "string" && !v.isWellFormed()) {
      found.push({ rule: `${prefix}.${key}.type`, path: [...at, key],
        message: `${key} is not valid Unicode text: it has a lone surrogate, which UTF-8 cannot encode; give it as text without unpaired surrogates` });
    }
  }
  return found;
}

/**
 * Rows whose benchmark or metric is not valid Unicode text (a lone surrogate).
 * @param {PyValue} rows
 * @returns {import("./refused").Problem[]}
 */
function textProblems(rows) {
  if (!Array.isArray(rows)) return [];
  return rows.flatMap((row, i) => fieldTextProblems(row, ["benchmark", "metric"], "metrics", [i]));
}

/**
 * A version found, shown as the Python reader shows it (its repr, at most 80 characters).
 * @param {PyValue} v
 */
function shownVersion(v) {
  let text;
  if (typeof v === "bigint") text = v.toString();
  else if (typeof v === "number") text = floatRepr(v);
  else if (typeof v === "boolean") text = v ? "True" : "False";
  else if (v === null) text = "None";
  else if (typeof v === "string") text = `'${v.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
  else text = dumpsCompact(v);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

const WITNESS_NAME = /^observed\.attempt(0|[1-9][0-9]*)\.json$/;

/**
 * Read and check a witness file: strict JSON, run_record_format first (a version other than
 * the integer 1 is the only problem reported), then the schema, then the attempt against the
 * file name. Returns the witness.
 * @param {{path: string}} args
 * @returns {Record<string, PyValue>}
 */
function readWitness({ path: file }) {
  let value;
  const raw = files.readRegular(file, "witness");
  try {
    // ignoreBOM keeps a BOM in the text, where the strict parser refuses it (as Python does)
    value = parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(raw));
  } catch (e) {
    throw Refused.one("witness.file.json", [], `${path.basename(file)} is not strict JSON text (RFC 8259, UTF-8): ${/** @type {Error} */ (e).message}`);
  }
  if (longIntIn(value)) throw Refused.one("witness.file.json", [], `${path.basename(file)} is not strict JSON text (RFC 8259, UTF-8): ${LONG_INT_FILE}`);
  if (isObject(value) && Object.prototype.hasOwnProperty.call(value, "run_record_format") && value.run_record_format !== 1n) {
    const shown = shownVersion(value.run_record_format);
    throw Refused.one("witness.run_record_format.unsupported", ["run_record_format"],
      `run_record_format ${shown} is not supported: this reader understands version 1 only; read the file with a reader for that version (got ${shown})`);
  }
  const found = [...problems(value, WITNESS_SCHEMA), ...fieldTextProblems(value, ["device", "device_name"], "witness")];
  const match = WITNESS_NAME.exec(path.basename(file));
  if (match && isObject(value) && typeof value.attempt === "bigint" && value.attempt !== BigInt(/** @type {string} */ (match[1]))) {
    found.push({ rule: "witness.attempt.filename", path: ["attempt"], message: `the file is the witness of attempt ${match[1]} but its attempt field says ${value.attempt}` });
  }
  if (found.length > 0) throw new Refused(found);
  return /** @type {Record<string, PyValue>} */ (value);
}

module.exports = { longIntIn, LONG_INT_FILE, configSha, writeWitness, writeMetrics, readWitness, textProblems, WITNESS_SCHEMA, METRICS_SCHEMA };
