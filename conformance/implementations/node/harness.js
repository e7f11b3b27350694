#!/usr/bin/env node
// @ts-check
/**
 * The Node implementation of trainrecord, speaking the conformance suite's exec harness
 * protocol: newline-delimited JSON on stdin/stdout (spec/schemas/harness/, docs/harness-guide.md).
 *
 *   trainrecord-conformance run --target "exec:node conformance/implementations/node/harness.js"
 *
 * Every request line is parsed with pyjson.parse, so ints stay exact (BigInt) and `2.0`
 * stays a float: the canonical forms depend on it. Diagnostics go to stderr only.
 */
"use strict";

const readline = require("node:readline");
const { parse, canonicalLine, canonicalConfig, dumpsCompact } = require("./lib/pyjson");
const { problems } = require("./lib/validate");
const { configSha, writeWitness, writeMetrics } = require("./lib/foundry");
const { verifyDiary, lineHash } = require("./lib/diary");
const { sendReport } = require("./lib/report");
const { Refused } = require("./lib/refused");
const crypto = require("node:crypto");

/** @typedef {import("./lib/pyjson").PyValue} PyValue */

/** @param {PyValue} v @returns {Record<string, PyValue>} */
const obj = (v) => (v !== null && typeof v === "object" && !Array.isArray(v) ? v : {});

/** @type {Record<string, (input: Record<string, PyValue>) => PyValue | Promise<PyValue>>} */
const OPERATIONS = {
  validate: (input) => {
    const schema = String(input.schema ?? input.format);
    const found = problems(/** @type {PyValue} */ (input.instance), schema);
    return { valid: found.length === 0, rules: [...new Set(found.map((p) => p.rule))], problems: found };
  },
  config_hash: (input) => {
    const text = canonicalConfig(/** @type {PyValue} */ (input.config));
    return { canonical: text, sha256: crypto.createHash("sha256").update(text, "utf8").digest("hex"), config_sha: configSha(/** @type {PyValue} */ (input.config)) };
  },
  line_hash: (input) => {
    const prev = String(input.prev);
    const body = /** @type {PyValue} */ (input.body ?? input.input);
    return { canonical: canonicalLine(body), hash: lineHash(prev, body) };
  },
  write_witness: (input) => {
    const written = writeWitness({ dir: String(input.dir), env: input.env ?? null, config: input.config ?? null, device: input.device ?? null, wall_seconds: input.wall_seconds ?? null });
    return { written };
  },
  write_metrics: (input) => ({ written: writeMetrics({ dir: String(input.dir), rows: input.rows ?? null }) }),
  verify_diary: (input) => {
    const result = verifyDiary(String(input.dir), { publicKey: typeof input.public_key === "string" ? input.public_key : null });
    return { ok: result.status === "ok", ...result, rules: result.failure ? [result.failure.rule] : [] };
  },
  send_report: async (input) => sendReport({ url: input.url ?? null, token: input.token ?? null, report: input.report ?? null, ca: typeof input.ca === "string" ? input.ca : null }),
};

/** @param {PyValue} value */
function reply(value) {
  process.stdout.write(`${dumpsCompact(value)}\n`);
}

/**
 * A result as JSON-able PyValue (problems hold plain JS arrays and strings).
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
    for (const [k, x] of Object.entries(v)) out[k] = toPy(x);
    return out;
  }
  return v;
}

async function main() {
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const text of rl) {
    if (text.trim() === "") continue;
    let request;
    try {
      request = obj(parse(text));
    } catch (e) {
      reply({ error: { message: `not a JSON request: ${/** @type {Error} */ (e).message}` } });
      continue;
    }
    const cmd = request.cmd;
    if (cmd === "start") {
      reply(toPy({ ready: true, implementation: { name: "trainrecord-node", language: "javascript", version: process.version }, operations: Object.keys(OPERATIONS) }));
    } else if (cmd === "stop") {
      break;
    } else if (cmd === "run") {
      const seq = request.seq ?? null;
      const op = String(request.op);
      const fn = OPERATIONS[op];
      if (fn === undefined) {
        reply({ seq, skipped: true, message: `operation ${op} is not supported` });
        continue;
      }
      try {
        reply({ seq, result: toPy(await fn(obj(request.input ?? null))) });
      } catch (e) {
        if (e instanceof Refused) reply({ seq, result: toPy({ refused: true, rules: [...new Set(e.problems.map((p) => p.rule))], problems: e.problems }) });
        else reply({ seq, error: { message: String(/** @type {Error} */ (e).stack ?? e) } });
      }
    } else {
      reply({ error: { message: `unknown cmd ${String(cmd)}` } });
    }
  }
}

main().catch((e) => {
  process.stderr.write(`${e.stack ?? e}\n`);
  process.exit(1);
});
