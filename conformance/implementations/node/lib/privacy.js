// @ts-check
/**
 * What is never sent (Reporting API v2 §7, as runtime/trainrecord/report/privacy.py):
 * scrub error messages and check whole payloads.
 *
 * scrubMessage(text, secrets): the home folder becomes `~`, other absolute paths keep only
 * their last part (`.../model.pt`; a one-part `/data` becomes `.../data`), the user name
 * becomes `<user>` (a one-character name only as a whole path part), the token `<token>`
 * (also percent-encoded, as any of its characters written `%XX`),
 * process ids `<pid>` (this process's anywhere, and every number written as a process id:
 * `pid 1`, `pid=1`, `PID: 1`, `pid(s) 1, 2`, `process id 1`, ...); cut to 500 characters.
 * privacyProblems(payload, secrets): every string that holds the token, the home folder or
 * an absolute path, and an error string that names the user or holds a process id (rule
 * `report.privacy.secrets`). The patterns are the Python runtime's, translated to
 * JavaScript with Python's `\w` and `\s`.
 */
"use strict";

const os = require("node:os");
const { translatePattern } = require("./validate");

/** @typedef {import("./pyjson").PyValue} PyValue */
/** @typedef {import("./refused").Problem} Problem */

const MAX_MESSAGE = 500;
const RULE = "report.privacy.secrets";

/**
 * A Python `re` pattern as a JavaScript RegExp.
 * @param {string} pattern
 * @param {string} [flags]
 */
const py = (pattern, flags = "") => new RegExp(translatePattern(pattern), `u${flags}`);
/** re.escape for the `u` flag (which refuses needless escapes). @param {string} s */
const escape = (s) => s.replace(/[\\^$.*+?()[\]{}|/]/g, "\\$&");

const END = String.raw`(?=$|[/\\\s'"\x60:,;()\[\]{}<>])`;
const PART = String.raw`[^\s/'"\x60:,;()\[\]{}<>]`;
const ABS_POSIX = String.raw`(?<![\w.~:/\\-])/(?:(?:${PART}+/)+(${PART}*)|([\w.]${PART}*))`;
const ABS_WINDOWS = String.raw`(?<![\w])[A-Za-z]:[\\/](?:[^\s\\/'"\x60:,;()\[\]{}<>]+[\\/])*([^\s\\/'"\x60:,;()\[\]{}<>]*)`;
const PID_WORD =
  String.raw`(?<![\w])(pids?|pid\(s\)|process(?:es)?(?:[ _-]?ids?|[ _-]?id\(s\))?)` +
  String.raw`(\s*[=:#]?\s*[\[(]?\s*)` +
  String.raw`(\d+(?:(?:\s*[,&]\s*|\s+and\s+)\d+)*)`;

/** What must never appear in a report; the defaults are this process's own. */
class Secrets {
  /** @param {{token?: string | null, home?: string | null, user?: string | null, pid?: number | bigint | null}} [values] */
  constructor(values = {}) {
    this.token = values.token ?? null;
    this.home = values.home === undefined ? os.homedir() : values.home;
    this.user = values.user === undefined ? currentUser() : values.user;
    this.pid = values.pid === undefined ? process.pid : values.pid;
  }

  /** A home folder worth replacing (not `/` or empty). */
  homeUsable() {
    return !!this.home && this.home !== "/" && this.home !== "~" && [...this.home].length > 1;
  }

  /** A user name to look for (any non-empty name; see userPattern). */
  userUsable() {
    return !!this.user;
  }
}

function currentUser() {
  try {
    return os.userInfo().username;
  } catch {
    return null;
  }
}

/** @param {string} home */
const homePattern = (home, flags = "") => py(escape(home.replace(/[/\\]+$/, "")) + END, flags);
/** @param {string} text */
const word = (text, flags = "") => py(String.raw`(?<![\w])` + escape(text) + String.raw`(?![\w])`, flags);
/**
 * The user name as a whole word; a one-character name only as a whole path part.
 * @param {string} user
 */
const userPattern = (user, flags = "") =>
  [...user].length >= 2 ? word(user, flags) : py(String.raw`(?<=[/\\])` + escape(user) + END, flags);
/**
 * The token as written or with any of its characters percent-encoded (the `%XX` of its
 * UTF-8 bytes, in either case of hex digit): `tok%65n` is the token too.
 * @param {string} token
 */
const tokenPattern = (token, flags = "") => {
  /** @param {number} byte */
  const hex = (byte) =>
    "%" +
    [...byte.toString(16).toUpperCase().padStart(2, "0")]
      .map((d) => (/[A-F]/.test(d) ? `[${d}${d.toLowerCase()}]` : d))
      .join("");
  const chars = [...token].map((c) => `(?:${escape(c)}|${[...Buffer.from(c, "utf8")].map(hex).join("")})`);
  return new RegExp(chars.join(""), `u${flags}`);
};
/** @param {number | bigint} pid */
const pidPattern = (pid, flags = "") => py(String.raw`(?<![\d.])` + String(pid) + String.raw`(?![\d.])`, flags);

/**
 * `text` with the token, as written or percent-encoded, replaced by `<token>`; the rest as
 * it was (for text that is no message of ours, such as a server's answer), as scrub_token
 * in Python.
 * @param {string} text
 * @param {string | null | undefined} token
 */
function scrubToken(text, token) {
  return token ? text.replace(tokenPattern(token, "g"), "<token>") : text;
}

/**
 * `text` with the token (as written or percent-encoded) as `<token>` and the home folder as
 * `~`, nothing else changed: for a path in a message shown on this machine (a settings
 * refusal), where the whole path is what the user must fix; as scrub_home in Python.
 * @param {string} text
 * @param {Secrets} [secrets]
 */
function scrubHome(text, secrets = new Secrets()) {
  let out = scrubToken(String(text), secrets.token);
  if (secrets.homeUsable()) out = out.replace(homePattern(/** @type {string} */ (secrets.home), "g"), "~");
  return out;
}

/**
 * An error message safe to send: no token, home, absolute path, user name or pid.
 * @param {string} text
 * @param {Secrets} [secrets]
 */
function scrubMessage(text, secrets = new Secrets()) {
  const s = secrets;
  let out = scrubToken(String(text), s.token);
  if (s.homeUsable()) out = out.replace(homePattern(/** @type {string} */ (s.home), "g"), "~");
  out = out.replace(py(ABS_POSIX, "g"), (_m, last, only) => `.../${last || only || ""}`);
  out = out.replace(py(ABS_WINDOWS, "g"), (_m, last) => `...\\${last}`);
  if (s.userUsable()) out = out.replace(userPattern(/** @type {string} */ (s.user), "g"), "<user>");
  out = out.replace(py(PID_WORD, "gi"), (_m, name, gap, numbers) => `${name}${gap}${numbers.replace(/\p{Nd}+/gu, "<pid>")}`);
  if (s.pid) out = out.replace(pidPattern(s.pid, "g"), "<pid>");
  const chars = Array.from(out);
  if (chars.length > MAX_MESSAGE) out = `${chars.slice(0, MAX_MESSAGE - 1).join("")}…`;
  return out;
}

/**
 * Every string of a value, with its path.
 * @param {PyValue} node
 * @param {(string|number)[]} [where]
 * @returns {Generator<[(string|number)[], string]>}
 */
function* strings(node, where = []) {
  if (typeof node === "string") yield [where, node];
  else if (Array.isArray(node)) {
    for (let k = 0; k < node.length; k++) yield* strings(/** @type {PyValue} */ (node[k]), [...where, k]);
  } else if (node !== null && typeof node === "object") {
    for (const [k, v] of Object.entries(node)) yield* strings(v, [...where, k]);
  }
}

/**
 * Every place in `payload` that would send something §7 forbids.
 * @param {PyValue} payload
 * @param {Secrets} [secrets]
 * @returns {Problem[]}
 */
function privacyProblems(payload, secrets = new Secrets()) {
  const s = secrets;
  /** @type {Problem[]} */
  const found = [];
  const home = s.homeUsable() ? homePattern(/** @type {string} */ (s.home)) : null;
  const user = s.userUsable() ? userPattern(/** @type {string} */ (s.user)) : null;
  const pidWord = py(PID_WORD, "i");
  const pid = s.pid ? pidPattern(s.pid) : null;
  const token = s.token ? tokenPattern(s.token) : null;
  const posix = py(ABS_POSIX);
  const windows = py(ABS_WINDOWS);
  for (const [where, text] of strings(payload)) {
    if (token && token.test(text)) found.push({ rule: RULE, path: where, message: "holds the report token; never send it" });
    if (home && home.test(text)) found.push({ rule: RULE, path: where, message: "holds the home folder; write ~ instead" });
    else if (posix.test(text) || windows.test(text)) found.push({ rule: RULE, path: where, message: "holds an absolute path; send names, not paths" });
    if (where[0] === "error") {
      if (user && user.test(text)) found.push({ rule: RULE, path: where, message: "names the user; scrub the message" });
      if ((pid && pid.test(text)) || pidWord.test(text)) found.push({ rule: RULE, path: where, message: "holds a process id; scrub the message" });
    }
  }
  return found;
}

module.exports = { Secrets, scrubToken, scrubHome, scrubMessage, privacyProblems, MAX_MESSAGE };
