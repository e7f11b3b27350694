#!/usr/bin/env node
// @ts-check
/**
 * The Node implementation of trainrecord, speaking the conformance suite's exec harness
 * protocol version 1 (spec/schemas/harness/, docs/harness-guide.md): newline-delimited JSON
 * on stdin/stdout, `start` -> any number of `run` -> `stop`.
 *
 *   make conformance TARGET=node
 *   trainrecord-conformance run --target "exec:node conformance/implementations/node/harness.js"
 *
 * Every request line is parsed with pyjson.parse, so ints stay exact (BigInt) and `2.0`
 * stays a float: the canonical forms and the integer rules depend on it. Answers are
 * written with Python's json.dumps spelling. Nothing but protocol lines goes to stdout.
 */
"use strict";

const fs = require("node:fs");
const readline = require("node:readline");
const { parse, canonicalLine, canonicalConfig, dumpsCompact } = require("./lib/pyjson");
const { problems } = require("./lib/validate");
const { configSha, writeWitness, writeMetrics, readWitness } = require("./lib/foundry");
const { verifyDiary, lineHash } = require("./lib/diary");
const { writeDiary } = require("./lib/diary-writer");
const { sendReport } = require("./lib/report");
const { Refused } = require("./lib/refused");

/** @typedef {import("./lib/pyjson").PyValue} PyValue */
/** @typedef {import("@trainrecord/spec").HarnessRunRequest["op"]} Operation */

const PROTOCOL_VERSION = 1n;

/** @param {PyValue | undefined} v @returns {Record<string, PyValue>} */
const obj = (v) => (v !== null && v !== undefined && typeof v === "object" && !Array.isArray(v) ? v : {});
/** @param {PyValue | undefined} v */
const text = (v) => (typeof v === "string" ? v : null);
/** @param {Iterable<{rule: string}>} found */
const ruleIds = (found) => [...new Set([...found].map((p) => p.rule))];

/** The operations this implementation supports; the others are reported as unsupported in start. */
/** @type {Partial<Record<Operation, (input: Record<string, PyValue>) => any>>} */
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
    const result = verifyDiary(String(input.dir), { publicKey: keyFile === null ? null : fs.readFileSync(keyFile, "utf8") });
    const failure = result.failure;
    if (failure === null && result.status === "torn") {
      return { ok: false, rules: ["diary.file.torn"], line: result.lines }; // the torn line's index
    }
    const line = failure !== null && failure.file === "diary.jsonl" && failure.line > 0 ? failure.line - 1 : null;
    return { ok: result.status === "ok", rules: failure === null ? [] : [failure.rule], line };
  },
  send_report: async (input) => {
    const caFile = text(input.ca_file);
    const got = await sendReport({ url: input.url ?? null, token: input.token ?? null, report: input.report ?? null, ca: caFile === null ? null : fs.readFileSync(caFile, "utf8") });
    return { delivered: got.outcome === "accepted", status: got.status };
  },
};

/** @param {PyValue} value */
function reply(value) {
  process.stdout.write(`${dumpsCompact(value)}\n`);
}

/**
 * A JavaScript result as a PyValue: integral numbers from counters become ints.
 * @param {any} v
 * @returns {PyValue}
 */
function toPy(v) {
  if (v === undefined) return null;
  if (typeof v === "number") return Number.isInteger(v) ? BigInt(v) : v;
  if (Array.isArray(v)) return v.map(toPy);
  if (v !== null && typeof v === "object") {
    /** @type {Record<string, PyValue>} */
    const out = {};
    for (const [k, x] of Object.entries(v)) Object.defineProperty(out, k, { value: toPy(x), enumerable: true, writable: true, configurable: true });
    return out;
  }
  return v;
}

/**
 * Answer one run request.
 * @param {Record<string, PyValue>} request
 * @returns {Promise<Record<string, PyValue>>}
 */
async function run(request) {
  const seq = typeof request.seq === "bigint" ? request.seq : 0n;
  const op = String(request.op);
  const fn = Object.prototype.hasOwnProperty.call(OPERATIONS, op) ? OPERATIONS[/** @type {Operation} */ (op)] : undefined;
  if (fn === undefined) return { seq, outcome: "unsupported", message: `operation ${op} is not supported` };
  try {
    const output = await fn(obj(request.input));
    return { seq, outcome: "ok", output: toPy(output) };
  } catch (e) {
    if (e instanceof Refused) return { seq, outcome: "refused", rules: ruleIds(e.problems), message: e.message.slice(0, 2000) };
    return { seq, outcome: "error", message: String(/** @type {Error} */ (e)?.stack ?? e).slice(0, 2000) };
  }
}

async function main() {
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    if (line.trim() === "") continue;
    /** @type {Record<string, PyValue>} */
    let request;
    try {
      request = obj(parse(line));
    } catch (e) {
      process.stderr.write(`not a JSON request: ${/** @type {Error} */ (e).message}\n`);
      process.exitCode = 2;
      return;
    }
    if (request.cmd === "start") {
      if (request.version !== PROTOCOL_VERSION) {
        process.stderr.write(`unsupported protocol version ${String(request.version)}; this harness speaks 1\n`);
        process.exitCode = 2;
        return;
      }
      reply(toPy({
        version: 1,
        implementation: { name: "trainrecord-node", language: "javascript", version: `0.1.0 (node ${process.version})` },
        operations: Object.keys(OPERATIONS),
      }));
    } else if (request.cmd === "run") {
      reply(await run(request));
    } else if (request.cmd === "stop") {
      reply({ stopped: true });
      rl.close();
      return;
    } else {
      process.stderr.write(`unknown cmd ${String(request.cmd)}\n`);
      process.exitCode = 2;
      return;
    }
  }
}

main().catch((e) => {
  process.stderr.write(`${e?.stack ?? e}\n`);
  process.exit(1);
});
