// @ts-check
/**
 * The harness operations, implemented with this package's modules (as
 * conformance/trainrecord_conformance/operations.py does with the Python runtime): one
 * function per operation of the exec harness protocol (spec/schemas/harness/run.schema.json),
 * taking the run's `input` object and returning its `output` object.
 */
"use strict";

const fs = require("node:fs");
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

/** @typedef {import("./pyjson").PyValue} PyValue */
/** @typedef {import("@trainrecord/spec").HarnessRunRequest["op"]} Operation */

/** @param {PyValue | undefined} v */
const text = (v) => (typeof v === "string" ? v : null);
/** @param {Iterable<{rule: string}>} found */
const ruleIds = (found) => [...new Set([...found].map((p) => p.rule))];

/**
 * Every operation of the protocol: each takes the run's input and returns its output (or a
 * promise of it), or throws Refused. An operation missing here would be answered
 * `unsupported`.
 * @type {Partial<Record<Operation, (input: Record<string, PyValue>) => any>>}
 */
const OPERATIONS = {
  validate: (input) => {
    const found = problems(input.instance ?? null, String(input.schema));
    return { valid: found.length === 0, rules: ruleIds(found).sort() };
  },
  line_hash: (input) => {
    const body = input.body ?? null;
    return { canonical: canonicalLine(body), hash: lineHash(String(input.prev), body) };
  },
  config_hash: (input) => ({ canonical: canonicalConfig(input.config ?? null), config_sha: configSha(input.config ?? null) }),
  write_witness: (input) => ({
    path: writeWitness({ dir: String(input.dir), env: input.env ?? null, config: input.config ?? null, device: input.device ?? null, wall_seconds: input.wall_seconds ?? null }),
  }),
  write_metrics: (input) => ({ path: writeMetrics({ dir: String(input.dir), rows: input.rows ?? null }) }),
  read_witness: (input) => ({ witness: readWitness({ path: String(input.path) }) }),
  write_diary: (input) => ({ path: writeDiary({ dir: String(input.dir), events: input.events ?? null }) }),
  verify_diary: (input) => {
    const keyFile = text(input.key);
    const result = verifyDiary(String(input.dir), { publicKey: keyFile ? loadPublicKey(keyFile) : null });
    const failure = result.failure;
    if (failure === null && result.status === "torn") {
      return { ok: false, rules: ["diary.file.torn"], line: result.lines }; // the torn line's index
    }
    const line = failure !== null && failure.file === "diary.jsonl" && failure.line > 0 ? failure.line - 1 : null;
    return { ok: result.status === "ok", rules: failure === null ? [] : [failure.rule], line };
  },
  append_diary: (input) => ({
    path: appendDiary({ dir: String(input.dir), events: input.events ?? null, fsyncPolicy: input.fsync_policy ?? null }),
  }),
  architecture: (input) => ({ text: architectureText(input.parameters ?? null), sha256: architectureSha256(input.parameters ?? null) }),
  read_metrics: (input) => ({ rows: readMetrics({ path: String(input.path) }) }),
  keygen: (input) => ({ fingerprint: generateKeypair(String(input.private), text(input.public)).fingerprint }),
  load_key: (input) => ({
    fingerprint: fingerprint(input.kind === "private" ? loadPrivateKey(String(input.path)) : loadPublicKey(String(input.path))),
  }),
  seal: (input) => ({ seal: writeSeal(String(input.dir), { signingKey: text(input.key) || null }) }),
  send_report: async (input) => {
    const caFile = text(input.ca_file);
    const got = await sendReport({ url: input.url ?? null, token: input.token ?? null, report: input.report ?? null, ca: caFile === null ? null : fs.readFileSync(caFile, "utf8") });
    return { delivered: got.outcome === "accepted", status: got.status };
  },
};


module.exports = { OPERATIONS };
