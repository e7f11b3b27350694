// @ts-check
/**
 * The harness operations, implemented with this package's modules (as
 * conformance/trainrecord_conformance/operations.py does with the Python runtime): one
 * function per operation of the exec harness protocol (spec/schemas/harness/run.schema.json),
 * taking the run's `input` object and returning its `output` object.
 */
"use strict";

const path = require("node:path");
const { canonicalLine, canonicalConfig } = require("./pyjson");
const { problems } = require("./validate");
const { configSha, writeWitness, writeMetrics, readWitness } = require("./foundry");
const { readMetrics } = require("./metrics-reader");
const { verifyDiary, lineHash } = require("./diary");
const { writeDiary, appendDiary } = require("./diary-writer");
const { architectureText, architectureSha256 } = require("./architecture");
const { fingerprint, generateKeypair, loadPrivateKey, loadPublicKey } = require("./keys");
const { writeSeal } = require("./seal");
const { sendReport } = require("./report");
const { loadSettings, reportSettings } = require("./settings");
const { Secrets, buildReport, checkReport, config, errorInfo, fieldsOf, jobState } = require("./payload");
const { Reporter, ReportNotDelivered, reportStatus } = require("./reporter");
const { SeqClock, SEQ_FILE } = require("./seq");
const { openRun } = require("./run-folder");
const receiver = require("./receiver");

/** @typedef {import("./pyjson").PyValue} PyValue */
/** @typedef {import("@trainrecord/spec").HarnessRunRequest["op"]} Operation */
/** @typedef {import("./payload").JobState} JobState */

/** @param {PyValue | undefined} v @returns {Record<string, PyValue>} */
const obj = (v) => (v !== null && v !== undefined && typeof v === "object" && !Array.isArray(v) ? v : {});
/**
 * A string field of the input; a missing or non-string one is an error of the run (as a
 * KeyError is in the Python harness), never a file named "undefined".
 * @param {Record<string, PyValue>} input
 * @param {string} name
 * @returns {string}
 */
function need(input, name) {
  const v = input[name];
  if (typeof v !== "string") throw new TypeError(`input.${name} must be a string`);
  return v;
}
/** @param {number} ms */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The job-state fields an input state may give (the Python runtime's JobState). */
const STATE_FIELDS = [
  "run_id", "name", "group", "host", "started_at", "finished_at", "running", "epochs_first", "epochs_total",
  "phase", "batch", "batches", "initial_validation", "history", "words_done", "words_total",
];

/**
 * A job state from an input state: the job's whole config cut to the kind's report config
 * (§5: the rest stays home), and the raw error ({type, message}) turned into the scrubbed
 * error a report carries (§7).
 * @param {PyValue | undefined} input
 * @param {Secrets} secrets
 * @returns {JobState}
 */
function stateFrom(input, secrets) {
  const state = obj(input);
  const kind = String(state.kind);
  const allowed = fieldsOf(`${kind}_config`);
  /** @type {Record<string, PyValue>} */
  const cut = {};
  for (const [k, v] of Object.entries(obj(state.config))) {
    if (allowed.includes(k)) Object.defineProperty(cut, k, { value: v, enumerable: true, writable: true, configurable: true });
  }
  const raw = state.error;
  const error = raw === null || raw === undefined ? null : errorInfo(obj(raw).type, obj(raw).message ?? "", secrets);
  /** @type {Partial<JobState> & {kind: string, config: Record<string, PyValue>}} */
  const fields = { kind, config: config(kind, cut), error };
  for (const k of STATE_FIELDS) {
    if (Object.prototype.hasOwnProperty.call(state, k)) /** @type {any} */ (fields)[k] = state[k];
  }
  const history = state.history;
  fields.history = Array.isArray(history) ? history : [];
  fields.running = state.running === undefined ? true : !!state.running;
  return jobState(fields);
}

/** @param {PyValue | undefined} secrets */
function secretsFrom(secrets) {
  if (secrets === null || secrets === undefined) return new Secrets();
  const s = obj(secrets);
  return new Secrets({ token: text(s.token), home: text(s.home), user: text(s.user), pid: typeof s.pid === "bigint" ? s.pid : null });
}

/** @param {PyValue | undefined} v */
const bigint = (v) => (typeof v === "bigint" ? v : typeof v === "number" && Number.isInteger(v) ? BigInt(v) : 0n);

/** @param {PyValue | undefined} v */
const text = (v) => (typeof v === "string" ? v : null);
/** @param {Iterable<{rule: string}>} found */
const ruleIds = (found) => [...new Set([...found].map((p) => p.rule))];

/**
 * Every operation of the protocol: each takes the run's input and returns its output (or a
 * promise of it), or throws Refused. An operation missing here would be answered
 * `unsupported`.
 * @type {Record<Operation, (input: Record<string, PyValue>) => any>}
 */
const OPERATIONS = {
  validate: (input) => {
    const found = problems(input.instance ?? null, need(input, "schema"));
    return { valid: found.length === 0, rules: ruleIds(found).sort() };
  },
  line_hash: (input) => {
    const body = input.body ?? null;
    return { canonical: canonicalLine(body), hash: lineHash(need(input, "prev"), body) };
  },
  config_hash: (input) => ({ canonical: canonicalConfig(input.config ?? null), config_sha: configSha(input.config ?? null) }),
  write_witness: (input) => ({
    path: writeWitness({ dir: need(input, "dir"), env: input.env ?? null, config: input.config ?? null, device: input.device ?? null, wall_seconds: input.wall_seconds ?? null }),
  }),
  write_metrics: (input) => ({ path: writeMetrics({ dir: need(input, "dir"), rows: input.rows ?? null }) }),
  read_witness: (input) => ({ witness: readWitness({ path: need(input, "path") }) }),
  write_diary: (input) => ({ path: writeDiary({ dir: need(input, "dir"), events: input.events ?? null }) }),
  verify_diary: (input) => {
    const keyFile = text(input.key);
    const result = verifyDiary(need(input, "dir"), { publicKey: keyFile ? loadPublicKey(keyFile) : null });
    const failure = result.failure;
    if (failure === null && result.status === "torn") {
      return { ok: false, status: "torn", rules: ["diary.file.torn"], line: BigInt(result.lines) }; // the torn line's index
    }
    const line = failure !== null && failure.file === "diary.jsonl" && failure.line > 0 ? BigInt(failure.line - 1) : null;
    return { ok: result.status === "ok", status: result.status, rules: failure === null ? [] : [failure.rule], line };
  },
  append_diary: (input) => ({
    path: appendDiary({ dir: need(input, "dir"), events: input.events ?? null, fsyncPolicy: input.fsync_policy ?? null }),
  }),
  architecture: (input) => ({ text: architectureText(input.parameters ?? null), sha256: architectureSha256(input.parameters ?? null) }),
  read_metrics: (input) => ({ rows: readMetrics({ path: need(input, "path") }) }),
  keygen: (input) => ({ fingerprint: generateKeypair(need(input, "private"), text(input.public)).fingerprint }),
  load_key: (input) => ({
    fingerprint: fingerprint(input.kind === "private" ? loadPrivateKey(need(input, "path")) : loadPublicKey(need(input, "path"))),
  }),
  seal: (input) => ({ seal: writeSeal(need(input, "dir"), { signingKey: text(input.key) || null }) }),
  send_report: async (input) => {
    const got = await sendReport({ url: input.url ?? null, token: input.token ?? null, report: input.report ?? null, caFile: text(input.ca_file) });
    return { delivered: got.ok, status: got.status === null ? null : BigInt(got.status) };
  },
  load_settings: (input) => {
    const settings = loadSettings(need(input, "path"), obj(input.env));
    return { url: settings.url, every: settings.every, ca_bundle: settings.caBundle !== null };
  },
  build_report: (input) => {
    const secrets = secretsFrom(input.secrets);
    const report = buildReport(stateFrom(input.state, secrets), {
      event: need(input, "event"), status: need(input, "status"), seq: bigint(input.seq), sentAt: need(input, "sent_at"),
    });
    checkReport(report, secrets);
    return { report };
  },
  report_status: async (input) => {
    const settings = reportSettings({ url: input.url, every: 60n, token: input.token, caBundle: text(input.ca_file) });
    const state = stateFrom(input.state, new Secrets());
    try {
      const seq = await reportStatus(settings, state, need(input, "status"));
      return { raised: false, message: "", seq };
    } catch (e) {
      if (e instanceof ReportNotDelivered) return { raised: true, message: e.message, seq: null };
      throw e;
    }
  },
  report_job: async (input) => {
    // each progress() call is due: progress goes out at most once every `every` seconds (§3)
    const settings = reportSettings({ url: input.url, every: 1e-9, token: input.token });
    const clock = new SeqClock(path.join(need(input, "seq_dir"), SEQ_FILE), bigint(input.last_seq ?? 0n));
    const state = stateFrom(input.state, new Secrets());
    state.running = true;
    state.finished_at = null;
    let warnings = 0;
    const reporter = new Reporter(settings, state, { seq: clock, flushTimeoutMs: 5000, warn: () => { warnings += 1; } });
    const pause = Math.max(0, Number(input.pause ?? 0) || 0) * 1000;
    reporter.started();
    for (let k = 0n; k < bigint(input.progress); k++) {
      await sleep(pause);
      reporter.progress();
    }
    await sleep(pause);
    if (input.end === "complete") reporter.complete();
    else reporter.interrupted();
    const closed = await reporter.close(5000);
    return { closed, warnings: BigInt(warnings) };
  },
  open_run: (input) => {
    const run = openRun(need(input, "dir"), input.metadata ?? null);
    return { run_id: run.runId, created: run.created };
  },
  serve: async (input) => {
    need(input, "dir"); // the store is in memory: nothing is written there
    const { url } = await receiver.serve({ token: need(input, "token") });
    return { url: `${url}/api/runs`, read_url: `${url}/api/runs` };
  },
};

module.exports = { OPERATIONS };
