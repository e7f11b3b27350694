// @ts-check
/**
 * Read metrics.json as a Foundry run records version 1 reader (as
 * runtime/trainrecord/foundry/metrics.py read_metrics).
 *
 * First the witnesses beside the file (`observed.attempt<N>.json`, in name order): one
 * whose run_record_format is anything but the integer 1 means the metrics are of another
 * version, which this reader does not infer (`metrics.read.sibling_version`); a witness
 * that is not strict JSON says nothing about the version and is passed over. Then the file
 * is read as strict JSON in UTF-8 (`metrics.file.json`: no NaN or Infinity token, nothing
 * after the value) and checked against the metrics schema and for text that is not Unicode.
 */
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { parse } = require("./pyjson");
const { problems } = require("./validate");
const { METRICS_SCHEMA, textProblems, longIntIn, LONG_INT_FILE } = require("./foundry");
const { Refused } = require("./refused");
const files = require("./files");

/** @typedef {import("./pyjson").PyValue} PyValue */

const WITNESS_NAME = /^observed\.attempt(0|[1-9][0-9]*)\.json$/;
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** @param {PyValue} v @returns {v is Record<string, PyValue>} */
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * The sibling witness of another run_record_format, if any: [file name, its version].
 * @param {string} file
 * @returns {[string, PyValue] | null}
 */
function otherVersion(file) {
  let entries;
  try {
    entries = fs.readdirSync(path.dirname(file)).sort();
  } catch {
    return null;
  }
  for (const name of entries) {
    const entry = path.join(path.dirname(file), name);
    if (!WITNESS_NAME.test(name)) continue;
    let data;
    try {
      if (!fs.statSync(entry).isFile()) continue;
      data = parse(utf8.decode(fs.readFileSync(entry)));
    } catch {
      continue; // a broken witness says nothing about the metrics' version
    }
    if (!isObject(data) || !Object.prototype.hasOwnProperty.call(data, "run_record_format")) continue;
    const version = /** @type {PyValue} */ (data.run_record_format);
    if (version !== 1n) return [name, version];
  }
  return null;
}

/**
 * Read and check `path`; return its rows.
 * @param {{path: string}} args
 * @returns {PyValue[]}
 */
function readMetrics({ path: file }) {
  const other = otherVersion(file);
  if (other !== null) {
    const [name, version] = other;
    const shown = typeof version === "bigint" || typeof version === "number" ? String(version) : "another";
    throw Refused.one("metrics.read.sibling_version", [],
      `${path.basename(file)} sits beside ${name}, a run_record_format ${shown} witness; this version 1 reader does not infer that the metrics are version 1; read them with a reader for that version`);
  }
  const raw = files.readRegular(file, "metrics");
  let rows;
  try {
    rows = parse(utf8.decode(raw));
  } catch (e) {
    const reason = String(/** @type {Error} */ (e).message).split("\n")[0]?.slice(0, 160);
    throw Refused.one("metrics.file.json", [], `${path.basename(file)} is not strict JSON text (RFC 8259, UTF-8): ${reason}; rewrite it with a JSON writer`);
  }
  if (longIntIn(rows)) throw Refused.one("metrics.file.json", [], `${path.basename(file)} is not strict JSON text (RFC 8259, UTF-8): ${LONG_INT_FILE}; rewrite it with a JSON writer`);
  const found = [...problems(rows, METRICS_SCHEMA), ...textProblems(rows)];
  if (found.length > 0) throw new Refused(found);
  return /** @type {PyValue[]} */ (rows);
}

module.exports = { readMetrics };
