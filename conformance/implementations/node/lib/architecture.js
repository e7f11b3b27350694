// @ts-check
/**
 * architecture_sha256: the fingerprint of a model's parameter names and shapes (as
 * runtime/trainrecord/diary/architecture.py).
 *
 * The text hashed is `name:shape` for every parameter in `named_parameters()` order, joined
 * by `|`, where the shape is written as Python writes a list of ints: `conv1.weight:[16, 3,
 * 3, 3]|conv1.bias:[16]`, and a scalar parameter is `scale:[]`. The digest is the SHA-256
 * of the UTF-8 text, in lowercase hex.
 */
"use strict";

const crypto = require("node:crypto");

/** @typedef {import("./pyjson").PyValue} PyValue */

/**
 * One dimension as Python's int() gives it (an int, a bool, or a float cut toward zero).
 * @param {PyValue} d
 * @returns {bigint}
 */
function dimension(d) {
  if (typeof d === "bigint") return d;
  if (typeof d === "boolean") return d ? 1n : 0n;
  if (typeof d === "number" && Number.isFinite(d)) return BigInt(Math.trunc(d));
  throw new TypeError(`a shape dimension must be an integer, not ${JSON.stringify(d)}`);
}

/**
 * The text whose SHA-256 is architecture_sha256.
 * @param {PyValue} parameters [name, shape] pairs
 * @returns {string}
 */
function architectureText(parameters) {
  if (!Array.isArray(parameters)) throw new TypeError("parameters must be a list of [name, shape] pairs");
  return parameters
    .map((pair) => {
      if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== "string" || !Array.isArray(pair[1])) {
        throw new TypeError("each parameter is a [name, shape] pair, shape a list of ints");
      }
      return `${pair[0]}:[${pair[1].map((d) => dimension(d).toString()).join(", ")}]`;
    })
    .join("|");
}

/**
 * SHA-256 (hex) of architectureText.
 * @param {PyValue} parameters
 */
function architectureSha256(parameters) {
  const text = architectureText(parameters);
  if (!text.isWellFormed()) throw new TypeError("a parameter name is not valid Unicode text (a lone surrogate)");
  return crypto.createHash("sha256").update(text, "utf8").digest("hex");
}

module.exports = { architectureText, architectureSha256 };
