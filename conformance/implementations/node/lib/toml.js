// @ts-check
/**
 * A TOML 1.0 reader for paths.toml, as Python's tomllib reads it (Node has no TOML in its
 * standard library).
 *
 * parse(text) returns plain objects: strings, booleans, arrays and tables as themselves,
 * integers as BigInt and floats as number (so `60` and `60.0` stay apart, as in Python),
 * `inf`/`nan` as the non-finite numbers, and dates and times as TomlDateTime (their text).
 * Anything that is not TOML throws TomlError with the line: a duplicate key or table, a
 * bad escape or number, a control character, a missing newline after a value.
 */
"use strict";

class TomlError extends Error {}

/** A TOML date, time or date-time, kept as its text (tomllib gives a datetime object). */
class TomlDateTime {
  /** @param {string} text */
  constructor(text) {
    this.text = text;
  }
}

/** @typedef {null | boolean | bigint | number | string | TomlDateTime | any[] | {[key: string]: any}} TomlValue */
/** @typedef {{[key: string]: TomlValue}} Table */

const BARE_KEY = /[A-Za-z0-9_-]/;
const DATETIME = /\d{4}-\d{2}-\d{2}(?:[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})?)?|\d{2}:\d{2}:\d{2}(?:\.\d+)?/y;
const DEC_INT = /[+-]?(?:0|[1-9](?:_?\d)*)/y;
const FLOAT = /[+-]?(?:0|[1-9](?:_?\d)*)(?:\.\d(?:_?\d)*)?(?:[eE][+-]?\d(?:_?\d)*)?/y;
const PREFIXED = /0(?:x[0-9A-Fa-f](?:_?[0-9A-Fa-f])*|o[0-7](?:_?[0-7])*|b[01](?:_?[01])*)/y;

/** Tables created by a [header] or by dotted keys, and inline tables (closed for keys). */
const DEFINED = Symbol("defined");
const INLINE = Symbol("inline");
const ARRAY_OF_TABLES = Symbol("array of tables");

/** @returns {Table} */
const newTable = () => /** @type {Table} */ (Object.create(null));

/**
 * @param {TomlValue | undefined} v
 * @returns {v is Table}
 */
const isTable = (v) => v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof TomlDateTime);

/**
 * Parse TOML text.
 * @param {string} text
 * @returns {Table}
 */
function parse(text) {
  let i = 0;
  const root = newTable();
  let current = root;
  const fail = (/** @type {string} */ what) => {
    const line = text.slice(0, i).split("\n").length;
    throw new TomlError(`${what} (line ${line})`);
  };
  const peek = () => text[i];
  const skipSpace = () => {
    while (text[i] === " " || text[i] === "\t") i++;
  };
  const skipComment = () => {
    if (text[i] !== "#") return;
    while (i < text.length && text[i] !== "\n") {
      const c = text.charCodeAt(i);
      if ((c < 0x20 && c !== 0x09) || c === 0x7f) fail("a control character in a comment");
      i++;
    }
  };
  const endOfLine = () => {
    skipSpace();
    skipComment();
    if (i >= text.length) return;
    if (text[i] === "\n") i++;
    else if (text.startsWith("\r\n", i)) i += 2;
    else fail("expected the end of the line");
  };
  /** Whitespace, newlines and comments (inside arrays). */
  const skipAll = () => {
    for (;;) {
      skipSpace();
      skipComment();
      if (text[i] === "\n") i++;
      else if (text.startsWith("\r\n", i)) i += 2;
      else return;
    }
  };

  /** @returns {string} */
  const key = () => {
    skipSpace();
    const c = peek();
    if (c === '"') return basicString();
    if (c === "'") return literalString();
    const start = i;
    while (i < text.length && BARE_KEY.test(/** @type {string} */ (text[i]))) i++;
    if (i === start) fail("expected a key");
    return text.slice(start, i);
  };
  /** @returns {string[]} */
  const dottedKey = () => {
    const parts = [key()];
    for (;;) {
      skipSpace();
      if (peek() !== ".") return parts;
      i++;
      parts.push(key());
    }
  };

  /** @param {number} code */
  const checkControl = (code) => {
    if ((code < 0x20 && code !== 0x09) || code === 0x7f) fail("a control character in a string");
  };
  /** @returns {string} */
  const escape = () => {
    const c = text[i + 1];
    const simple = /** @type {Record<string, string>} */ ({ b: "\b", t: "\t", n: "\n", f: "\f", r: "\r", '"': '"', "\\": "\\" });
    if (c !== undefined && simple[c] !== undefined) {
      i += 2;
      return /** @type {string} */ (simple[c]);
    }
    if (c === "u" || c === "U") {
      const n = c === "u" ? 4 : 8;
      const hex = text.slice(i + 2, i + 2 + n);
      if (!new RegExp(`^[0-9A-Fa-f]{${n}}$`).test(hex)) fail("a bad \\u escape");
      const code = parseInt(hex, 16);
      if (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) fail("an escape that is not a Unicode scalar value");
      i += 2 + n;
      return String.fromCodePoint(code);
    }
    return fail("a bad escape in a string");
  };
  /** @returns {string} */
  const basicString = () => {
    if (text.startsWith('"""', i)) {
      i += 3;
      if (text[i] === "\n") i++;
      else if (text.startsWith("\r\n", i)) i += 2;
      let out = "";
      for (;;) {
        if (i >= text.length) fail("an unterminated string");
        if (text.startsWith('"""', i)) {
          let quotes = 3;
          while (text[i + quotes] === '"' && quotes < 5) quotes++;
          out += '"'.repeat(quotes - 3);
          i += quotes;
          return out;
        }
        const c = /** @type {string} */ (text[i]);
        if (c === "\\") {
          // a line-ending backslash trims the newline and the whitespace after it
          const rest = /^\\[ \t]*\r?\n/.exec(text.slice(i, i + 200));
          if (rest) {
            i += rest[0].length;
            while (" \t\n\r".includes(text[i] ?? "x")) i++;
          } else out += escape();
          continue;
        }
        if (c === "\r" && text[i + 1] === "\n") {
          out += "\n";
          i += 2;
          continue;
        }
        if (c !== "\n") checkControl(text.charCodeAt(i));
        out += c;
        i++;
      }
    }
    i++;
    let out = "";
    for (;;) {
      const c = text[i];
      if (c === undefined || c === "\n") fail("an unterminated string");
      if (c === '"') {
        i++;
        return out;
      }
      if (c === "\\") {
        out += escape();
        continue;
      }
      checkControl(text.charCodeAt(i));
      out += c;
      i++;
    }
  };
  /** @returns {string} */
  const literalString = () => {
    if (text.startsWith("'''", i)) {
      i += 3;
      if (text[i] === "\n") i++;
      else if (text.startsWith("\r\n", i)) i += 2;
      const start = i;
      for (;;) {
        if (i >= text.length) fail("an unterminated string");
        if (text.startsWith("'''", i)) {
          let quotes = 3;
          while (text[i + quotes] === "'" && quotes < 5) quotes++;
          const out = text.slice(start, i) + "'".repeat(quotes - 3);
          i += quotes;
          for (const ch of out) if (ch !== "\n" && ch !== "\r") checkControl(/** @type {number} */ (ch.codePointAt(0)));
          return out.replace(/\r\n/g, "\n");
        }
        i++;
      }
    }
    i++;
    const start = i;
    for (;;) {
      const c = text[i];
      if (c === undefined || c === "\n") fail("an unterminated string");
      if (c === "'") {
        i++;
        return text.slice(start, i - 1);
      }
      checkControl(text.charCodeAt(i));
      i++;
    }
  };

  /**
   * @param {RegExp} re
   * @returns {string | null}
   */
  const match = (re) => {
    re.lastIndex = i;
    const m = re.exec(text);
    return m ? m[0] : null;
  };
  /** A number, bool, date or special float ends here. */
  const atValueEnd = () => {
    const c = text[i];
    return c === undefined || " \t\r\n,]}#".includes(c);
  };

  /** @returns {TomlValue} */
  const value = () => {
    skipSpace();
    const c = peek();
    if (c === '"') return basicString();
    if (c === "'") return literalString();
    if (c === "[") return array();
    if (c === "{") return inlineTable();
    for (const [word, v] of /** @type {[string, TomlValue][]} */ ([["true", true], ["false", false]])) {
      if (text.startsWith(word, i)) {
        i += word.length;
        if (!atValueEnd()) fail("a bad value");
        return v;
      }
    }
    const special = /[+-]?(?:inf|nan)/y;
    const sp = match(special);
    if (sp !== null) {
      i += sp.length;
      if (!atValueEnd()) fail("a bad value");
      const sign = sp.startsWith("-") ? -1 : 1;
      return sp.endsWith("inf") ? sign * Infinity : NaN;
    }
    const dt = match(DATETIME);
    if (dt !== null) {
      i += dt.length;
      if (!atValueEnd()) fail("a bad date or time");
      return new TomlDateTime(dt);
    }
    const prefixed = match(PREFIXED);
    if (prefixed !== null) {
      i += prefixed.length;
      if (!atValueEnd()) fail("a bad number");
      const digits = prefixed.slice(2).replace(/_/g, "");
      const base = prefixed[1] === "x" ? 16 : prefixed[1] === "o" ? 8 : 2;
      return [...digits].reduce((n, d) => n * BigInt(base) + BigInt(parseInt(d, base)), 0n);
    }
    const float = match(FLOAT);
    const int = match(DEC_INT);
    if (float !== null && float.length > (int ?? "").length) {
      i += float.length;
      if (!atValueEnd()) fail("a bad number");
      return Number(float.replace(/_/g, ""));
    }
    if (int !== null) {
      i += int.length;
      if (!atValueEnd()) fail("a bad number");
      return BigInt(int.replace(/_/g, ""));
    }
    return fail("expected a value");
  };
  /** @returns {TomlValue[]} */
  const array = () => {
    i++;
    /** @type {TomlValue[]} */
    const out = [];
    for (;;) {
      skipAll();
      if (peek() === "]") {
        i++;
        return out;
      }
      out.push(value());
      skipAll();
      if (peek() === ",") {
        i++;
        continue;
      }
      if (peek() === "]") {
        i++;
        return out;
      }
      fail("expected , or ] in an array");
    }
  };
  /** @returns {Table} */
  const inlineTable = () => {
    i++;
    const table = newTable();
    skipSpace();
    if (peek() === "}") {
      i++;
      return close(table);
    }
    for (;;) {
      const parts = dottedKey();
      skipSpace();
      if (peek() !== "=") fail("expected = after a key");
      i++;
      assign(table, parts, value());
      skipSpace();
      if (peek() === ",") {
        i++;
        continue;
      }
      if (peek() === "}") {
        i++;
        return close(table);
      }
      fail("expected , or } in an inline table");
    }
  };
  /** @param {Table} table */
  const close = (table) => {
    Object.defineProperty(table, INLINE, { value: true });
    return table;
  };

  /**
   * Set `parts` (a dotted key) in `table` to `v`; dotted keys create tables.
   * @param {Table} table
   * @param {string[]} parts
   * @param {TomlValue} v
   */
  const assign = (table, parts, v) => {
    let node = table;
    for (const part of parts.slice(0, -1)) {
      const next = node[part];
      if (next === undefined) {
        const created = newTable();
        Object.defineProperty(created, DEFINED, { value: "dotted" });
        node[part] = created;
        node = created;
      } else if (isTable(next) && !(/** @type {any} */ (next)[INLINE]) && /** @type {any} */ (next)[DEFINED] !== "header") {
        node = next;
      } else fail(`the key ${part} is defined twice`);
    }
    const last = /** @type {string} */ (parts[parts.length - 1]);
    if (Object.prototype.hasOwnProperty.call(node, last)) fail(`the key ${last} is defined twice`);
    node[last] = v;
  };

  /**
   * The table a [header] or [[header]] names, created as needed.
   * @param {string[]} parts
   * @param {boolean} arrayOfTables
   * @returns {Table}
   */
  const header = (parts, arrayOfTables) => {
    let node = root;
    parts.forEach((part, k) => {
      const last = k === parts.length - 1;
      let next = node[part];
      if (last && arrayOfTables) {
        if (next === undefined) {
          next = [];
          Object.defineProperty(next, ARRAY_OF_TABLES, { value: true });
          node[part] = next;
        }
        if (!Array.isArray(next) || !(/** @type {any} */ (next)[ARRAY_OF_TABLES])) fail(`the key ${part} is defined twice`);
        const item = newTable();
        /** @type {TomlValue[]} */ (next).push(item);
        node = item;
        return;
      }
      if (next === undefined) {
        const created = newTable();
        if (last) Object.defineProperty(created, DEFINED, { value: "header" });
        node[part] = created;
        node = created;
        return;
      }
      if (Array.isArray(next) && /** @type {any} */ (next)[ARRAY_OF_TABLES] && !last) {
        node = /** @type {Table} */ (next[next.length - 1]);
        return;
      }
      if (!isTable(next) || /** @type {any} */ (next)[INLINE]) fail(`the table ${parts.join(".")} is defined twice`);
      const table = /** @type {Table} */ (next);
      if (last) {
        if (/** @type {any} */ (table)[DEFINED] !== undefined) fail(`the table ${parts.join(".")} is defined twice`);
        Object.defineProperty(table, DEFINED, { value: "header" });
      }
      node = table;
    });
    return node;
  };

  if (text.startsWith("\ufeff")) i = 1;
  for (;;) {
    skipAll();
    if (i >= text.length) return root;
    if (text.startsWith("[[", i)) {
      i += 2;
      const parts = dottedKey();
      skipSpace();
      if (!text.startsWith("]]", i)) fail("expected ]] after a table name");
      i += 2;
      current = header(parts, true);
    } else if (peek() === "[") {
      i++;
      const parts = dottedKey();
      skipSpace();
      if (peek() !== "]") fail("expected ] after a table name");
      i++;
      current = header(parts, false);
    } else {
      const parts = dottedKey();
      skipSpace();
      if (peek() !== "=") fail("expected = after a key");
      i++;
      assign(current, parts, value());
    }
    endOfLine();
  }
}

module.exports = { parse, TomlError, TomlDateTime };
