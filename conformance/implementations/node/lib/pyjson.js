// @ts-check
/**
 * JSON exactly as Python reads and writes it, for the trainrecord canonical forms.
 *
 * The spec defines both canonical forms with Python's json.dumps(..., sort_keys=True):
 * the diary line form (separators "," and ":") and the Foundry config form (", " and ": ").
 * Reproducing them byte for byte from JavaScript needs three things JSON.parse and
 * JSON.stringify do not give:
 *
 * - the int/float distinction: `2` is an int and is written `2`; `2.0` is a float and is
 *   written `2.0`. parse() returns ints as BigInt (exact at any size) and floats as number;
 * - Python's float repr: the shortest round-trip digits, positional from 1e-4 up to 1e16,
 *   otherwise `1e-07` / `1e+16` (explicit sign, at least two exponent digits), `.0` on
 *   integral floats, `-0.0`;
 * - ensure_ascii: every character outside space..~ as \uXXXX (lowercase hex, UTF-16 code
 *   units, so surrogate pairs beyond the BMP and lone surrogates as they are), with the short
 *   escapes \" \\ \n \r \t \b \f; keys sorted by code point (not by UTF-16 code unit).
 */
"use strict";

/** A parsed JSON value: ints are BigInt, floats are number. */
/** @typedef {import("./types").PyValue} PyValue */

class JsonSyntaxError extends Error {}

const WS = new Set([" ", "\t", "\n", "\r"]);
const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
const SIMPLE_ESCAPES = /** @type {Record<string, string>} */ ({
  '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t",
});

/**
 * Parse strict JSON text (RFC 8259) as trainrecord.canonical.loads_strict reads it,
 * refusing NaN and Infinity tokens and duplicate object names. Ints come back as BigInt,
 * floats as number.
 * @param {string} text
 * @returns {PyValue}
 */
function parse(text) {
  let i = 0;
  const fail = (/** @type {string} */ what) => {
    throw new JsonSyntaxError(`invalid JSON at character ${i}: ${what}`);
  };
  const skip = () => {
    while (i < text.length && WS.has(text[i])) i++;
  };
  /** @returns {string} */
  const str = () => {
    i++; // opening quote
    let out = "";
    for (;;) {
      if (i >= text.length) fail("unterminated string");
      const c = text[i];
      const code = text.charCodeAt(i);
      if (c === '"') {
        i++;
        return out;
      }
      if (code < 0x20) fail("control character in string");
      if (c === "\\") {
        const e = text[i + 1];
        if (e === "u") {
          const hex = text.slice(i + 2, i + 6);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail("bad \\u escape");
          out += String.fromCharCode(parseInt(hex, 16));
          i += 6;
        } else if (e !== undefined && e in SIMPLE_ESCAPES) {
          out += SIMPLE_ESCAPES[e];
          i += 2;
        } else fail("bad escape");
      } else {
        out += c;
        i++;
      }
    }
  };
  /** @returns {PyValue} */
  const value = () => {
    skip();
    const c = text[i];
    if (c === "{") {
      i++;
      /** @type {{[key: string]: PyValue}} */
      const obj = {};
      skip();
      if (text[i] === "}") {
        i++;
        return obj;
      }
      for (;;) {
        skip();
        if (text[i] !== '"') fail("expected a key");
        const key = str();
        skip();
        if (text[i] !== ":") fail("expected ':'");
        i++;
        const v = value();
        // Duplicate names are refused, as trainrecord.canonical.loads_strict does: parsers
        // disagree on which one wins, so such a record reads differently in two tools.
        if (Object.prototype.hasOwnProperty.call(obj, key)) fail(`duplicate object name ${JSON.stringify(key)}`);
        Object.defineProperty(obj, key, { value: v, writable: true, enumerable: true, configurable: true });
        skip();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "}") {
          i++;
          return obj;
        }
        fail("expected ',' or '}'");
      }
    }
    if (c === "[") {
      i++;
      /** @type {PyValue[]} */
      const arr = [];
      skip();
      if (text[i] === "]") {
        i++;
        return arr;
      }
      for (;;) {
        arr.push(value());
        skip();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "]") {
          i++;
          return arr;
        }
        fail("expected ',' or ']'");
      }
    }
    if (c === '"') return str();
    if (text.startsWith("true", i)) {
      i += 4;
      return true;
    }
    if (text.startsWith("false", i)) {
      i += 5;
      return false;
    }
    if (text.startsWith("null", i)) {
      i += 4;
      return null;
    }
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (m === null) fail("unexpected token (NaN and Infinity are not JSON)");
    const token = /** @type {RegExpExecArray} */ (m)[0];
    i += token.length;
    if (m?.[1] === undefined && m?.[2] === undefined) return BigInt(token);
    return Number(token);
  };
  const result = value();
  skip();
  if (i !== text.length) fail("extra data after the value");
  return result;
}

/**
 * Python's repr of a float.
 * @param {number} v
 * @returns {string}
 */
function floatRepr(v) {
  if (!Number.isFinite(v)) {
    throw new RangeError(`non-finite float ${v} is not strict JSON (RFC 8259)`);
  }
  if (v === 0) return Object.is(v, -0) ? "-0.0" : "0.0";
  const sign = v < 0 ? "-" : "";
  // toExponential() without an argument gives the shortest round-trip digits, as repr does.
  const [mantissa, exp] = Math.abs(v).toExponential().split("e");
  const digits = /** @type {string} */ (mantissa).replace(".", "");
  const e = Number(exp);
  const decpt = e + 1; // value = 0.<digits> * 10**decpt
  if (decpt <= -4 || decpt > 16) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const ee = Math.abs(e).toString().padStart(2, "0");
    return `${sign}${m}e${e < 0 ? "-" : "+"}${ee}`;
  }
  if (decpt <= 0) return `${sign}0.${"0".repeat(-decpt)}${digits}`;
  if (decpt >= digits.length) return `${sign}${digits}${"0".repeat(decpt - digits.length)}.0`;
  return `${sign}${digits.slice(0, decpt)}.${digits.slice(decpt)}`;
}

const SHORT = /** @type {Record<string, string>} */ ({
  '"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f",
});

/**
 * A string as Python's json.dumps writes it with ensure_ascii=True.
 * @param {string} s
 * @returns {string}
 */
function quote(s) {
  let out = '"';
  for (let k = 0; k < s.length; k++) {
    const c = /** @type {string} */ (s[k]);
    const code = s.charCodeAt(k);
    const short = SHORT[c];
    if (short !== undefined) out += short;
    else if (code >= 0x20 && code <= 0x7e) out += c;
    else out += `\\u${code.toString(16).padStart(4, "0")}`;
  }
  return `${out}"`;
}

/**
 * A string as json.dumps writes it with ensure_ascii=False: only quotes, backslashes and
 * control characters below U+0020 are escaped; everything else is kept as is.
 * @param {string} s
 * @returns {string}
 */
function quoteUnicode(s) {
  let out = '"';
  for (let k = 0; k < s.length; k++) {
    const c = /** @type {string} */ (s[k]);
    const code = s.charCodeAt(k);
    const short = SHORT[c];
    if (short !== undefined) out += short;
    else if (code < 0x20) out += `\\u${code.toString(16).padStart(4, "0")}`;
    else out += c;
  }
  return `${out}"`;
}

/**
 * Compare two strings by Unicode code point, as Python compares str (sort_keys=True).
 * @param {string} a
 * @param {string} b
 * @returns {number}
 */
function compareCodePoints(a, b) {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = /** @type {number} */ (a.codePointAt(i));
    const y = /** @type {number} */ (b.codePointAt(j));
    if (x !== y) return x < y ? -1 : 1;
    i += x > 0xffff ? 2 : 1;
    j += y > 0xffff ? 2 : 1;
  }
  const restA = a.length - i;
  const restB = b.length - j;
  return restA === restB ? 0 : restA < restB ? -1 : 1;
}

/**
 * A float as json.dumps writes it with allow_nan=True (its default): NaN, Infinity and
 * -Infinity as those bare tokens, every other float as floatRepr.
 * @param {number} v
 * @returns {string}
 */
function floatToken(v) {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "Infinity";
  if (v === -Infinity) return "-Infinity";
  return floatRepr(v);
}

/**
 * json.dumps(value, sort_keys=True, separators=(item, key), allow_nan=allowNan).
 * @param {PyValue} value
 * @param {string} item
 * @param {string} key
 * @param {boolean} [allowNan] write NaN and infinities as json.dumps's tokens (its
 *   default); otherwise refuse them (allow_nan=False: strict JSON)
 * @returns {string}
 */
function dumpsSorted(value, item, key, allowNan = false) {
  if (value === null) return "null";
  if (value === true) return "true";
  if (value === false) return "false";
  if (typeof value === "bigint") return value.toString();
  if (typeof value === "number") return allowNan ? floatToken(value) : floatRepr(value);
  if (typeof value === "string") return quote(value);
  if (Array.isArray(value)) {
    return `[${value.map((v) => dumpsSorted(v, item, key, allowNan)).join(item)}]`;
  }
  if (typeof value === "object") {
    const keys = Object.keys(value).sort(compareCodePoints);
    return `{${keys.map((k) => quote(k) + key + dumpsSorted(/** @type {PyValue} */ (value[k]), item, key, allowNan)).join(item)}}`;
  }
  throw new TypeError(`not a JSON value: ${typeof value}`);
}

/**
 * The diary's canonical line: json.dumps(body, sort_keys=True, separators=(",", ":")).
 * @param {PyValue} body
 */
const canonicalLine = (body) => dumpsSorted(body, ",", ":");

/**
 * The Foundry configuration form: exactly json.dumps(config, sort_keys=True), with its
 * defaults, so NaN and infinities are written NaN, Infinity and -Infinity (and hashed).
 * @param {PyValue} config
 */
const canonicalConfig = (config) => dumpsSorted(config, ", ", ": ", true);

/**
 * json.dumps(value, indent=indent, ensure_ascii=..., sort_keys=...). The defaults
 * (ensure_ascii=False, insertion order) are what the Python writers write (dumps_strict).
 * @param {PyValue} value
 * @param {number} indent
 * @param {{sortKeys?: boolean, ensureAscii?: boolean}} [options]
 * @param {number} [level]
 * @returns {string}
 */
function dumpsIndented(value, indent, options = {}, level = 0) {
  const pad = " ".repeat(indent * (level + 1));
  const end = " ".repeat(indent * level);
  const q = options.ensureAscii ? quote : quoteUnicode;
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    return `[\n${value.map((v) => pad + dumpsIndented(v, indent, options, level + 1)).join(",\n")}\n${end}]`;
  }
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value);
    if (options.sortKeys) keys.sort(compareCodePoints);
    if (keys.length === 0) return "{}";
    const items = keys.map((k) => `${pad}${q(k)}: ${dumpsIndented(/** @type {PyValue} */ (value[k]), indent, options, level + 1)}`);
    return `{\n${items.join(",\n")}\n${end}}`;
  }
  if (typeof value === "string") return q(value);
  return dumpsSorted(value, ", ", ": ");
}

/**
 * json.dumps(value) with its defaults: insertion order, ensure_ascii, separators ", " and ": ".
 * @param {PyValue} value
 * @returns {string}
 */
function dumpsCompact(value) {
  if (Array.isArray(value)) return `[${value.map(dumpsCompact).join(", ")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.keys(value).map((k) => `${quote(k)}: ${dumpsCompact(/** @type {PyValue} */ (value[k]))}`).join(", ")}}`;
  }
  return dumpsSorted(value, ", ", ": ");
}

/**
 * The report body on the wire, as the Python client writes it (spec/README.md, Transport):
 * json.dumps(value, separators=(",", ":"), ensure_ascii=False): insertion order, no spaces,
 * text outside ASCII as it is (UTF-8 once encoded), never NaN or an infinity (throws).
 * @param {PyValue} value
 * @returns {string}
 */
function dumpsWire(value) {
  if (Array.isArray(value)) return `[${value.map(dumpsWire).join(",")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.keys(value).map((k) => `${quoteUnicode(k)}:${dumpsWire(/** @type {PyValue} */ (value[k]))}`).join(",")}}`;
  }
  if (typeof value === "string") return quoteUnicode(value);
  return dumpsSorted(value, ",", ":");
}

module.exports = {
  dumpsWire,
  dumpsCompact,
  dumpsSorted,
  JsonSyntaxError,
  parse,
  floatRepr,
  floatToken,
  quote,
  quoteUnicode,
  compareCodePoints,
  canonicalLine,
  canonicalConfig,
  dumpsIndented,
};
