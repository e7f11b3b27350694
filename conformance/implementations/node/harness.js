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

const readline = require("node:readline");
const { parse, dumpsCompact } = require("./lib/pyjson");
const { OPERATIONS } = require("./lib/operations");
const { Refused } = require("./lib/refused");

/** @typedef {import("./lib/pyjson").PyValue} PyValue */
/** @typedef {import("./lib/operations").Operation} Operation */

const PROTOCOL_VERSION = 1n;

/** @param {PyValue | undefined} v @returns {Record<string, PyValue>} */
const obj = (v) => (v !== null && v !== undefined && typeof v === "object" && !Array.isArray(v) ? v : {});
/** @param {Iterable<{rule: string}>} found */
const ruleIds = (found) => [...new Set([...found].map((p) => p.rule))];

/** @param {PyValue} value */
function reply(value) {
  process.stdout.write(`${dumpsCompact(value)}\n`);
}

/**
 * An operation's output as a PyValue. Operations build their outputs from PyValues (ints as
 * BigInt, floats as number), so a number here is a float and is written as one; only
 * `undefined` (a field not set) becomes null.
 * @param {any} v
 * @returns {PyValue}
 */
function toPy(v) {
  if (v === undefined) return null;
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
  // only a string names an operation: String(["config_hash"]) would run config_hash
  const op = typeof request.op === "string" ? request.op : undefined;
  const fn = op !== undefined && Object.prototype.hasOwnProperty.call(OPERATIONS, op) ? OPERATIONS[/** @type {Operation} */ (op)] : undefined;
  if (fn === undefined) return { seq, outcome: "unsupported", message: `operation ${op ?? dumpsCompact(request.op ?? null)} is not supported` };
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
        version: PROTOCOL_VERSION,
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
