// @ts-check
/**
 * Report payloads (Reporting API v2 §5, as runtime/trainrecord/report/payload.py): the job
 * state, the builder and the checks.
 *
 * - JobState: the small, mutable state of one job (kind, identity, config, progress,
 *   validations, history, error); jobState() fills the defaults, snapshot() copies it.
 * - config(kind, values): a kind's report config with every §5 field (missing ones null),
 *   in schema order; fields §5 does not define are dropped by the caller, unknown names
 *   refused here (`report.config.fields.extra`); a lesion's units ascending without repeats.
 * - errorInfo(type, message, secrets): {type, message} with the message scrubbed (§7).
 * - buildReport(state, {event, status, seq, sentAt}): one complete report: progress with
 *   epochs_completed = the length of history, epoch, fraction (training 95 % / validation
 *   5 %; lesion 95 / 4 / 1) and eta_seconds as §5.2 and §5.3 define them.
 * - consistencyProblems (the cross-field guarantees `report.consistency.*`), checkReport
 *   (schema, then consistency and §7, throwing Refused) and encodeReport (checked, as the
 *   UTF-8 JSON body that is POSTed).
 * - localTime(t): ISO 8601 with the machine's UTC offset, to the second.
 *
 * Integers stay BigInt (as the JSON parser gives them) and floats number, so a report
 * spells its numbers as the Python client does.
 */
"use strict";

const os = require("node:os");
const { performance } = require("node:perf_hooks");
const spec = require("@trainrecord/spec");
const { dumpsCompact, dumpsWire } = require("./pyjson");
const { problems } = require("./validate");
const { roundInt, roundTo } = require("./pyround");
const { Secrets, scrubMessage, privacyProblems } = require("./privacy");
const { Refused } = require("./refused");

/** @typedef {import("./pyjson").PyValue} PyValue */
/** @typedef {import("./refused").Problem} Problem */
/** @typedef {Record<string, PyValue>} Obj */
/**
 * @typedef {{
 *   kind: string, run_id: PyValue, name: PyValue, group: PyValue, config: Obj, host: PyValue,
 *   started_at: PyValue, finished_at: PyValue, running: boolean, epochs_first: PyValue,
 *   epochs_total: PyValue, phase: PyValue, batch: PyValue, batches: PyValue,
 *   initial_validation: PyValue, history: PyValue[], words_done: PyValue, words_total: PyValue,
 *   work_started: number, words_at_start: number, error: Obj | null
 * }} JobState
 */

/** @type {import("@trainrecord/spec").SchemaId} */
const REPORT_SCHEMA = "https://trainrecord.dev/schemas/reporting/reporting.schema.json";
const SCHEMA_VERSION = 2n;
const STATUSES = ["in progress", "complete", "interrupted", "discarded", "failed", "stopped"];
/** §3 and §6: which status each event is sent with. @type {Record<string, string[]>} */
const EVENT_STATUS = {
  started: ["in progress"],
  progress: ["in progress"],
  epoch_end: ["in progress"],
  complete: ["complete"],
  interrupted: ["interrupted", "discarded"],
  failed: ["failed"],
  snapshot: STATUSES,
};
/** Share of an epoch done at the start of each phase, and the phase's weight (§5.2, §5.4). @type {Record<string, [number, number]>} */
const TRAINING_PHASES = { initial_validation: [0, 0], training: [0, 0.95], validation: [0.95, 0.05] };
/** @type {Record<string, [number, number]>} */
const LESION_PHASES = {
  intact_validation: [0, 0],
  intact_selectivity: [0, 0],
  initial_validation: [0, 0],
  initial_selectivity: [0, 0],
  training: [0, 0.95],
  validation: [0.95, 0.04],
  selectivity: [0.99, 0.01],
};

/** @param {PyValue | undefined} v @returns {v is Obj} */
const isObject = (v) => v !== null && v !== undefined && typeof v === "object" && !Array.isArray(v);
/** A JSON number as a JavaScript number (ints are BigInt), else null. @param {PyValue | undefined} v */
const num = (v) => (typeof v === "bigint" || typeof v === "number" ? Number(v) : null);
/** Python truthiness of a number or null. @param {PyValue | undefined} v */
const truthy = (v) => v !== null && v !== undefined && v !== false && v !== 0 && v !== 0n && v !== "";
/** @param {Obj} o @param {string} k @param {PyValue} v */
const put = (o, k, v) => Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });

/** @type {any} */
let schemaCache = null;
/**
 * The field names of one `$defs` object of reporting.schema.json, in schema order.
 * @param {string} definition
 * @returns {string[]}
 */
function fieldsOf(definition) {
  schemaCache ??= spec.loadSchema(REPORT_SCHEMA);
  const def = schemaCache.$defs?.[definition];
  if (def === undefined) throw new TypeError(`reporting.schema.json defines no ${definition}`);
  return Object.keys(def.properties);
}

/**
 * A kind's config with every field (missing ones null); a lesion's lesioned_units ascending
 * without repeats (when they are all ints), reset_outgoing false and silent_epochs 0 unless
 * given.
 * @param {string} kind
 * @param {Obj} values
 * @returns {Obj}
 */
function config(kind, values) {
  const names = fieldsOf(`${kind}_config`);
  const extra = Object.keys(values).filter((k) => !names.includes(k)).sort();
  if (extra.length > 0) {
    throw new Refused(extra.map((name) => ({ rule: "report.config.fields.extra", path: [name], message: `${name} is not a field of ${kind}_config; remove it` })));
  }
  /** @type {Obj} */
  const out = {};
  for (const name of names) put(out, name, Object.prototype.hasOwnProperty.call(values, name) ? /** @type {PyValue} */ (values[name]) : null);
  if (kind === "lesion") {
    const given = values.lesioned_units;
    /** @type {PyValue[]} */
    let units = [];
    if (Array.isArray(given)) units = [...given];
    else if (typeof given === "string") units = Array.from(given); // list() of a str, as Python
    else if (isObject(given)) units = Object.keys(given);
    else if (truthy(given ?? null)) throw new TypeError("lesioned_units must be a list of unit indices");
    if (units.every((u) => typeof u === "bigint")) {
      units = [...new Set(/** @type {bigint[]} */ (units))].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    }
    out.lesioned_units = units;
    if (out.reset_outgoing === null) out.reset_outgoing = false;
    if (out.silent_epochs === null) out.silent_epochs = 0n;
  }
  return out;
}

const IDENTIFIER = /^[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}]*$/u;

/**
 * Python's str() of a JSON value (an exception message may come as any value).
 * @param {PyValue | undefined} v
 * @returns {string}
 */
function pyStr(v) {
  if (typeof v === "string") return v;
  if (v === null || v === undefined) return "None";
  if (typeof v === "boolean") return v ? "True" : "False";
  if (typeof v === "bigint") return v.toString();
  return dumpsCompact(v);
}

/**
 * {type: the exception class name, message: scrubbed, at most 500 characters}.
 * @param {PyValue | undefined} type
 * @param {PyValue | undefined} message
 * @param {Secrets} [secrets]
 * @returns {Obj}
 */
function errorInfo(type, message, secrets) {
  const name = truthy(type ?? null) ? pyStr(type) : "Exception";
  const cls = IDENTIFIER.test(name) ? name : "Exception";
  return { type: Array.from(cls).slice(0, 200).join("") || "Exception", message: scrubMessage(pyStr(message), secrets) };
}

/**
 * ISO 8601 with the machine's UTC offset, to the second (datetime.isoformat()).
 * @param {number} [t] seconds since the epoch; default now
 */
function localTime(t) {
  const d = new Date(t === undefined ? Date.now() : Math.floor(t) * 1000);
  const two = (/** @type {number} */ n) => String(n).padStart(2, "0");
  const offset = -d.getTimezoneOffset();
  const sign = offset < 0 ? "-" : "+";
  const abs = Math.abs(offset);
  return `${String(d.getFullYear()).padStart(4, "0")}-${two(d.getMonth() + 1)}-${two(d.getDate())}T${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}${sign}${two(Math.floor(abs / 60))}:${two(abs % 60)}`;
}

/**
 * A job state with the defaults of the Python JobState for what `fields` does not give.
 * @param {Partial<JobState> & {kind: string, config: Obj}} fields
 * @returns {JobState}
 */
function jobState(fields) {
  return {
    run_id: null,
    name: null,
    group: null,
    host: os.hostname(),
    started_at: localTime(),
    finished_at: null,
    running: true,
    epochs_first: null,
    epochs_total: null,
    phase: null,
    batch: null,
    batches: null,
    initial_validation: null,
    words_done: null,
    words_total: null,
    work_started: performance.now() / 1000,
    words_at_start: 0,
    error: null,
    ...fields,
    history: [...(fields.history ?? [])],
  };
}

/** A copy later updates of `state` do not change (history entries are never mutated). @param {JobState} state */
const snapshot = (state) => ({ ...state, history: [...state.history] });

/**
 * The part of the current epoch done by the state's phase, batch and batches (§5.2, §5.4).
 * Only for a report that shows them (its `running`): any other report counts the finished
 * epochs alone.
 * @param {JobState} state
 */
function epochShare(state) {
  if (state.phase === null) return 0;
  const phases = state.kind === "lesion" ? LESION_PHASES : TRAINING_PHASES;
  const [start, weight] = phases[String(state.phase)] ?? [0, 0];
  let within = 0;
  const batch = num(state.batch);
  const batches = num(state.batches);
  if (batch !== null && batches) within = Math.min(1, Math.max(0, batch / batches));
  return start + weight * within;
}

/**
 * The share of the run done: a word set's words_done of words_total; a training or lesion
 * run's (epochs_completed + share) / epochs_total, with `share` the part of the current
 * epoch the report shows (epochShare, or 0 when it shows no phase), so a reader recomputes
 * it from the report's own progress fields.
 * @param {JobState} state
 * @param {number} share
 * @returns {number | null}
 */
function fraction(state, share) {
  if (state.kind === "wordset") {
    const done = num(state.words_done);
    const total = num(state.words_total);
    if (done === null || !total) return total === 0 && done !== null ? 0 : null;
    return roundTo(Math.min(1, done / total), 4);
  }
  const total = num(state.epochs_total);
  if (!total) return null;
  const done = state.history.length + share;
  return roundTo(Math.min(1, Math.max(0, done / total)), 4);
}

/**
 * Seconds left, for a report of the running process (the only one that shows an ETA);
 * `share` as for fraction, the part of the current epoch the report shows.
 * @param {JobState} state
 * @param {number} share
 * @param {number} now monotonic seconds
 * @returns {bigint | null}
 */
function eta(state, share, now) {
  if (state.kind === "wordset") {
    const wordsDone = num(state.words_done);
    const total = num(state.words_total);
    const done = (wordsDone ?? 0) - state.words_at_start;
    if (wordsDone === null || total === null || done <= 0) return null;
    const perWord = Math.max(0, now - state.work_started) / done;
    const left = roundInt(perWord * Math.max(0, total - wordsDone));
    return left > 0n ? left : 0n;
  }
  const durations = [];
  for (const entry of state.history) {
    const d = isObject(entry) ? entry.duration_seconds : undefined;
    const value = typeof d === "boolean" ? Number(d) : num(d);
    if (value !== null && Number.isFinite(value)) durations.push(value);
  }
  const total = num(state.epochs_total);
  if (durations.length === 0 || total === null) return null;
  const left = total - state.history.length - share;
  const mean = durations.reduce((a, b) => a + b, 0) / durations.length;
  const seconds = roundInt(left * mean);
  return seconds > 0n ? seconds : 0n;
}

/**
 * One complete report (all of §5.1 plus the kind's shapes) from a job state.
 * @param {JobState} state
 * @param {{event: string, status: string, seq: bigint, sentAt: string, now?: number}} args
 * @returns {Obj}
 */
function buildReport(state, { event, status, seq, sentAt, now = performance.now() / 1000 }) {
  const running = state.running && status === "in progress" && event !== "snapshot";
  // fraction and eta_seconds count the current epoch's share only where the report shows its
  // phase, batch and batches (`running`): a reader recomputes them from the report
  const share = running && state.kind !== "wordset" ? epochShare(state) : 0;
  /** @type {Obj} */
  let progress;
  /** @type {PyValue} */
  let initial = null;
  /** @type {PyValue} */
  let history = null;
  if (state.kind === "wordset") {
    // §5.3: words_done is "null in a snapshot of an unfinished set" (and so is fraction, its
    // share of words_total)
    const unfinished = event === "snapshot" && status !== "complete";
    progress = { words_done: unfinished ? null : state.words_done, words_total: state.words_total, fraction: unfinished ? null : fraction(state, share) };
  } else {
    const completed = BigInt(state.history.length);
    const first = state.epochs_first;
    // epoch is the one running now (§5.2): in the training process's own reports, and in a
    // snapshot of a run recorded as in progress (another process).
    const inProgress = running || (event === "snapshot" && status === "in progress");
    const epoch = inProgress && first !== null ? (typeof first === "bigint" ? first + completed : Number(first) + Number(completed)) : null;
    progress = {
      epochs_first: state.epochs_first,
      epochs_total: state.epochs_total,
      epochs_completed: completed,
      epoch,
      phase: running ? state.phase : null,
      batch: running ? state.batch : null,
      batches: running ? state.batches : null,
      fraction: fraction(state, share),
    };
    initial = state.initial_validation;
    history = [...state.history];
  }
  return {
    schema: SCHEMA_VERSION,
    seq,
    sent_at: sentAt,
    run_id: state.run_id,
    kind: state.kind,
    name: state.name,
    group: state.group,
    host: state.host,
    event,
    status,
    started_at: state.started_at,
    finished_at: status === "complete" ? state.finished_at : null,
    config: state.config,
    progress,
    eta_seconds: running ? eta(state, share, now) : null,
    initial_validation: initial,
    history,
    error: status === "failed" ? state.error : null,
  };
}

/**
 * @param {PyValue | undefined} a
 * @param {PyValue | undefined} b
 */
const greater = (a, b) => {
  const x = typeof a === "bigint" || typeof a === "number" ? a : 0n;
  const y = typeof b === "bigint" || typeof b === "number" ? b : 0n;
  return x > y;
};

/**
 * The cross-field guarantees of a report the client sends (`report.consistency.*`).
 * @param {Obj} payload
 * @returns {Problem[]}
 */
function consistencyProblems(payload) {
  /** @type {Problem[]} */
  const out = [];
  const add = (/** @type {string} */ rule, /** @type {string[]} */ where, /** @type {string} */ message) => out.push({ rule, path: where, message });
  const event = payload.event;
  const status = payload.status;
  const allowed = EVENT_STATUS[String(event)] ?? [];
  if (typeof status !== "string" || !allowed.includes(status) || (status === "stopped" && event !== "snapshot")) {
    add("report.consistency.event_status", ["status"], `event ${String(event)} is sent with status ${allowed.join(" or ")}`);
  }
  const present = (/** @type {string} */ k) => payload[k] !== null && payload[k] !== undefined;
  if (present("error") !== (status === "failed")) add("report.consistency.error", ["error"], "error is an object exactly when status is failed");
  if (present("finished_at") !== (status === "complete")) add("report.consistency.finished_at", ["finished_at"], "finished_at is set exactly when status is complete");
  const progress = isObject(payload.progress) ? payload.progress : {};
  const history = payload.history;
  if (payload.kind === "training" || payload.kind === "lesion") {
    if (Array.isArray(history) && progress.epochs_completed !== BigInt(history.length)) {
      add("report.consistency.epochs_completed", ["progress", "epochs_completed"], "epochs_completed equals the length of history");
    }
    if (present("eta_seconds") && !(Array.isArray(history) && history.length > 0)) {
      add("report.consistency.eta", ["eta_seconds"], "eta_seconds is null until the first epoch has finished");
    }
  }
  if (payload.kind === "wordset" && event === "snapshot" && status !== "complete") {
    for (const name of ["words_done", "fraction"]) {
      if (progress[name] !== null && progress[name] !== undefined) {
        add("report.consistency.words_done", ["progress", name], `${name} is null in a snapshot of an unfinished word set (§5.3)`);
      }
    }
  }
  if (present("eta_seconds") && status !== "in progress") add("report.consistency.eta", ["eta_seconds"], "eta_seconds is null unless status is in progress");
  else if (present("eta_seconds") && event === "snapshot") add("report.consistency.eta", ["eta_seconds"], "eta_seconds is null in every snapshot (only the training process knows it)");
  if (payload.kind === "lesion") {
    const cfg = isObject(payload.config) ? payload.config : {};
    const units = Array.isArray(cfg.lesioned_units) ? cfg.lesioned_units : [];
    if (units.some((u, k) => k > 0 && !greater(u, units[k - 1]))) {
      add("report.consistency.lesioned_units", ["config", "lesioned_units"], "units are strictly ascending");
    }
    const channel = cfg.word_channel;
    if (isObject(channel) && greater(channel.first, channel.last)) {
      add("report.consistency.lesioned_units", ["config", "word_channel"], "word_channel.first is at most word_channel.last");
    }
  }
  return [...out, ...fieldRuleProblems(payload)];
}

/** §5.2: "*_words is null for pre and illit, which have no words". */
const NO_WORDS_MODES = ["pre", "illit"];

/**
 * What breaks, in one validation result or history entry of a run with config `cfg`, the
 * rules that tie its fields to the run's config (no_words, mean_word_activation_lesioned,
 * word_selective_lesioned), as Python's `entry_problems`.
 * @param {PyValue | undefined} kind
 * @param {Obj} cfg
 * @param {Obj} entry
 * @param {(string | number)[]} path
 * @returns {Problem[]}
 */
function entryProblems(kind, cfg, entry, path) {
  /** @type {Problem[]} */
  const out = [];
  if (kind === "training" && NO_WORDS_MODES.includes(/** @type {string} */ (cfg.mode))) {
    for (const name of Object.keys(entry)) {
      if (name.endsWith("_words") && entry[name] !== null && entry[name] !== undefined) {
        out.push({ rule: "report.consistency.no_words", path: [...path, name], message: `${name} is null for a ${String(cfg.mode)} run, which has no words (§5.2)` });
      }
    }
  }
  if (kind === "lesion") {
    const units = cfg.lesioned_units;
    const count = Array.isArray(units) ? BigInt(units.length) : null;
    const mean = entry.mean_word_activation_lesioned;
    if (count === 0n && mean !== null && mean !== undefined) {
      out.push({ rule: "report.consistency.mean_word_activation_lesioned", path: [...path, "mean_word_activation_lesioned"], message: "mean_word_activation_lesioned is null without lesioned units (§5.4)" });
    }
    const selective = entry.word_selective_lesioned;
    if (count !== null && typeof selective === "bigint" && selective > count) {
      out.push({ rule: "report.consistency.word_selective_lesioned", path: [...path, "word_selective_lesioned"], message: `word_selective_lesioned counts lesioned units, so it is at most the ${count} of config.lesioned_units (§5.4)` });
    }
  }
  return out;
}

/**
 * The consistency rules between a report's config and its other fields (§5.2, §5.4):
 * pre_name, word_channel, the entries' rules and history_order, in Python's order.
 * @param {Obj} payload
 * @returns {Problem[]}
 */
function fieldRuleProblems(payload) {
  const kind = payload.kind;
  if ((kind !== "training" && kind !== "lesion") || !isObject(payload.config)) return [];
  const cfg = payload.config;
  /** @type {Problem[]} */
  const out = [];
  if (kind === "training" && cfg.mode === "pre" && cfg.pre_name !== null && cfg.pre_name !== undefined) {
    out.push({ rule: "report.consistency.pre_name", path: ["config", "pre_name"], message: "pre_name is null for a pre run (§5.2)" });
  }
  if (kind === "lesion" && cfg.source_mode === "lit_no_bias" && cfg.word_channel !== null && cfg.word_channel !== undefined) {
    out.push({ rule: "report.consistency.word_channel", path: ["config", "word_channel"], message: "word_channel is null for the unbiased model (§5.4)" });
  }
  /** @type {[(string | number)[], Obj][]} */
  const entries = [];
  const initial = payload.initial_validation;
  if (kind === "lesion" && isObject(initial)) {
    for (const which of ["intact", "lesioned"]) {
      const e = initial[which];
      if (isObject(e)) entries.push([["initial_validation", which], e]);
    }
  } else if (isObject(initial)) {
    entries.push([["initial_validation"], initial]);
  }
  const history = payload.history;
  if (Array.isArray(history)) history.forEach((e, n) => { if (isObject(e)) entries.push([["history", n], e]); });
  for (const [path, entry] of entries) out.push(...entryProblems(kind, cfg, entry, path));
  if (Array.isArray(history)) {
    const epochs = history.map((e) => (isObject(e) ? e.epoch : null));
    for (let n = 1; n < epochs.length; n++) {
      const a = epochs[n - 1];
      const b = epochs[n];
      if (typeof a === "bigint" && typeof b === "bigint" && b <= a) {
        out.push({ rule: "report.consistency.history_order", path: ["history", n, "epoch"], message: `history is one entry per finished epoch, oldest first (§5.2): epoch ${b} comes after epoch ${a}` });
      }
    }
  }
  return out;
}

/**
 * Throw Refused unless the report is one the client may send: the schema first (judged on
 * the branch its kind selects), then consistency and §7.
 * @param {PyValue} payload
 * @param {Secrets} [secrets]
 */
function checkReport(payload, secrets) {
  let found = problems(payload, REPORT_SCHEMA);
  if (found.length === 0) found = [...consistencyProblems(/** @type {Obj} */ (payload)), ...privacyProblems(payload, secrets)];
  if (found.length > 0) throw new Refused(found);
}

/**
 * Check a report and write it as the body that is POSTed: compact UTF-8 JSON, text outside
 * ASCII as it is, byte for byte what the Python client sends (spec/README.md, Transport).
 * @param {PyValue} payload
 * @param {Secrets} [secrets]
 * @returns {Buffer}
 */
function encodeReport(payload, secrets) {
  checkReport(payload, secrets);
  let text;
  try {
    text = dumpsWire(payload);
  } catch {
    throw Refused.one("report.transport.body", [], "a number in the report is NaN or infinite; send null");
  }
  return Buffer.from(text, "utf8");
}

module.exports = {
  REPORT_SCHEMA,
  EVENT_STATUS,
  Secrets,
  fieldsOf,
  config,
  errorInfo,
  localTime,
  jobState,
  snapshot,
  buildReport,
  consistencyProblems,
  checkReport,
  encodeReport,
};
