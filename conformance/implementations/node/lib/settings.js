// @ts-check
/**
 * Reporting settings (Reporting API v2 §1, as runtime/trainrecord/report/settings.py):
 * where reports go, how often, and with which token.
 *
 * reportSettings({url, every, token, caBundle}) checks each setting, in that order, and
 * refuses the first unsafe or missing one before any work starts: first that the URL does
 * not hold the token (anywhere in it, as written or percent-decoded as Python's
 * urllib.parse.unquote does; `report.settings.token` on field report.url, never shown,
 * before the URL's own checks, so a token given as its user name is not a credential
 * refusal), then the URL
 * (`report.settings.url_missing`, `.url_scheme`: https://, or http:// to localhost or a
 * loopback IP only; `.url_credentials`: no user name or password in it), every (a finite
 * number above 0, `.every`), the token (printable ASCII, `.token`; never shown) and the
 * optional CA bundle (an existing PEM file holding a CA certificate, `.ca_bundle`).
 *
 * loadSettings(pathsToml, env) reads `[report]` url, every (default 60) and ca_bundle
 * (relative to the file's folder) from paths.toml, and the token only from
 * env.CORREAD_REPORT_TOKEN: a token in the file is refused. Any other key of `[report]` is
 * refused, every one at once, never showing its value, as in Python: one named like a
 * secret (SECRET_WORDS: api_token) or holding the token's value under
 * `report.settings.token`, any other under `report.settings.unknown_key`, naming the
 * closest known key as Python's difflib.get_close_matches finds it (closeMatch).
 *
 * redactUrl(url): a URL as a message may show it (scheme, host, port and path as written;
 * a password, a lone user name, each query value and the fragment as `***`), as redact_url
 * in Python; the url_scheme refusals show the URL so.
 */
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const net = require("node:net");
const crypto = require("node:crypto");
const toml = require("./toml");
const { Refused } = require("./refused");
const { Secrets, scrubHome } = require("./privacy");

/** @typedef {import("./pyjson").PyValue} PyValue */
/** @typedef {{url: string, every: number, token: string, caBundle: string | null, timeoutMs: number, caEnviron?: Record<string, string> | null}} Settings */

const TOKEN_ENV = "CORREAD_REPORT_TOKEN";
const CLIENT_TIMEOUT_MS = 10_000;
/** Environment variables naming CA certificates to trust (as requests reads them): the
 * first set and not empty wins, when ca_bundle is not set. */
const CA_VARIABLES = ["REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"];
/** The keys `[report]` may hold (spec/README.md, Settings); any other is refused. */
const REPORT_KEYS = ["url", "every", "ca_bundle"];
/** A `[report]` key whose name (lower case, without "-" and "_") holds one of these is a
 * token put in the file (`report.settings.token`). */
const SECRET_WORDS = ["token", "secret", "password", "passwd", "bearer", "auth", "apikey", "credential"];

const IPV4_PART = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
/** A dotted-decimal IPv4 address: four decimal parts 0-255 without leading zeros. */
const DOTTED_QUAD = new RegExp(`^${IPV4_PART}(\\.${IPV4_PART}){3}$`);

/**
 * localhost and loopback IPs as written (spec/README.md, Settings): `localhost` in any case,
 * a dotted-decimal IPv4 address in 127.0.0.0/8 (four decimal parts, no leading zeros), or an
 * IPv6 address equal to ::1 (any RFC 4291 spelling, no zone). Other spellings that resolvers
 * or the WHATWG parser also read as 127.0.0.1 (127.1, 0x7f.0.0.1, 2130706433, 0177.0.0.1,
 * 127.0.0.%31) and an IPv4-mapped ::ffff:127.0.0.1 are not loopback here, as in Python.
 * @param {string} host the host as written, brackets optional
 */
function isLoopback(host) {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  if (h === "localhost") return true;
  if (DOTTED_QUAD.test(h)) return h.startsWith("127.");
  if (!h.includes("%") && net.isIPv6(h)) return new URL(`http://[${h}]/`).hostname === "[::1]";
  return false;
}

/**
 * The URL's authority as Python's urlsplit finds it: after "scheme://" up to the first "/",
 * "?" or "#" ("" without "scheme://").
 * @param {string} url
 */
function authorityOf(url) {
  const m = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/?#]*)/.exec(url);
  return m ? /** @type {string} */ (m[1]) : "";
}

/**
 * The host as written in the authority, as urlsplit's hostname: after the last "@",
 * inside "[...]" or before the first ":", lower case.
 * @param {string} authority
 */
function hostOf(authority) {
  const info = authority.slice(authority.lastIndexOf("@") + 1);
  const open = info.indexOf("[");
  const host = open >= 0 ? info.slice(open + 1).split("]", 1)[0] : info.split(":", 1)[0];
  return /** @type {string} */ (host).toLowerCase();
}

/**
 * Whether a host as written is a host name of letters, digits, "-", "." and "_" (any
 * script, as Python's str.isalnum), or, in brackets, an IPv6 address without a zone.
 * @param {string} host
 * @param {boolean} bracketed
 */
function isHostName(host, bracketed) {
  if (bracketed) return !host.includes("%") && net.isIPv6(host);
  return /^[\p{L}\p{N}._-]*$/u.test(host);
}

/**
 * The URL, checked: https://, or http:// to localhost or a loopback IP; no credentials.
 * The host is judged as written (as in Python), never as the WHATWG parser rewrites it: a
 * backslash, a percent-escape or another character outside a host name is refused.
 * @param {unknown} url
 * @returns {URL}
 */
function checkUrl(url) {
  if (typeof url !== "string" || url.trim() === "") {
    throw Refused.one("report.settings.url_missing", ["report", "url"], "set [report] url in paths.toml to your endpoint (https://...)");
  }
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    throw Refused.one("report.settings.url_scheme", ["report", "url"], "the URL cannot be parsed; write it as https://host/path");
  }
  const authority = authorityOf(url);
  if (parsed.username !== "" || parsed.password !== "" || authority.includes("@")) {
    throw Refused.one("report.settings.url_credentials", ["report", "url"], `remove the user name and password from the URL; the token comes from ${TOKEN_ENV} only`);
  }
  // as Python's check: white space or a character Unicode calls "other" or "separator"
  // anywhere is refused (the WHATWG parser would strip or encode it), and so is a host
  // written with anything but letters, digits, "-", "." and "_" (or a bracketed IPv6)
  const host = hostOf(authority);
  if (/[\p{C}\p{Z}]/u.test(url) || (host !== "" && !isHostName(host, authority.includes("[")))) {
    throw Refused.one("report.settings.url_scheme", ["report", "url"], "the URL's host has a character not allowed in a host name (a space?); write it as https://host/path");
  }
  // a host as Python's urlsplit finds one: "scheme://" and a non-empty authority, written so
  // (the WHATWG parser reads https:///r, https:/r and https:r as host r)
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]/.test(url) || host === "") {
    throw Refused.one("report.settings.url_scheme", ["report", "url"], "the URL must be https://host/... (http:// only for localhost)");
  }
  if (parsed.protocol === "https:") return parsed;
  if (parsed.protocol === "http:" && isLoopback(host)) return parsed;
  throw Refused.one("report.settings.url_scheme", ["report", "url"], `the URL must be https://host/... (plain http:// only for localhost or a loopback IP) (got '${redactUrl(url)}')`);
}

/**
 * `url` as a message may show it, by the plain string rules of redact_url in Python: the
 * fragment (after the first "#") as `***`; in the query (after the first "?" before it)
 * each value as `name=***`, a part without "=" as `***`; in the authority (after the first
 * "://" up to the next "/") a user info (before its last "@") as `user:***` with a
 * password, `***` without; the scheme, host, port and path as written.
 * @param {string} url
 */
function redactUrl(url) {
  const cut = (/** @type {string} */ text, /** @type {string} */ sep) => {
    const at = text.indexOf(sep);
    return at < 0 ? [text, "", ""] : [text.slice(0, at), sep, text.slice(at + 1)];
  };
  const [beforeHash, hash, fragment] = cut(url, "#");
  let [rest, mark, query] = cut(beforeHash, "?");
  if (query) {
    query = query
      .split("&")
      .map((part) => (part === "" ? part : part.includes("=") ? `${part.slice(0, part.indexOf("="))}=***` : "***"))
      .join("&");
  }
  let start = rest.indexOf("://");
  if (start >= 0) {
    start += 3;
    const slash = rest.indexOf("/", start);
    const end = slash >= 0 ? slash : rest.length;
    const at = rest.lastIndexOf("@", end - 1);
    if (at >= start) {
      const shown = rest.slice(start, at).includes(":") ? `${rest.slice(start, at).split(":", 1)[0]}:***` : "***";
      rest = rest.slice(0, start) + shown + rest.slice(at);
    }
  }
  return rest + mark + query + hash + (fragment ? "***" : "");
}

/**
 * Python's difflib.SequenceMatcher(None, a, b).ratio() for short strings (no junk): twice
 * the characters of the matching blocks over the total length, the blocks found as
 * difflib finds them (the longest match, earliest in a, then in b; then both sides).
 * @param {string} a
 * @param {string} b
 */
function ratio(a, b) {
  const x = Array.from(a);
  const y = Array.from(b);
  if (x.length + y.length === 0) return 1;
  let matched = 0;
  /** @type {Array<[number, number, number, number]>} */
  const todo = [[0, x.length, 0, y.length]];
  while (todo.length) {
    const [alo, ahi, blo, bhi] = /** @type {[number, number, number, number]} */ (todo.pop());
    let [bi, bj, size] = [alo, blo, 0];
    for (let i = alo; i < ahi; i++) {
      for (let j = blo; j < bhi; j++) {
        let k = 0;
        while (i + k < ahi && j + k < bhi && x[i + k] === y[j + k]) k++;
        if (k > size) [bi, bj, size] = [i, j, k];
      }
    }
    if (size > 0) {
      matched += size;
      todo.push([alo, bi, blo, bj], [bi + size, ahi, bj + size, bhi]);
    }
  }
  return (2 * matched) / (x.length + y.length);
}

/**
 * The known key closest to `key` (in lower case), as difflib.get_close_matches(word,
 * REPORT_KEYS, n=1) finds it (ratio of the possibility against the word at least 0.6,
 * the best score, a tie to the greater string), or null.
 * @param {string} key
 */
function closeMatch(key) {
  const word = key.toLowerCase();
  /** @type {[number, string] | null} */
  let best = null;
  for (const known of REPORT_KEYS) {
    const score = ratio(known, word);
    if (score >= 0.6 && (best === null || score > best[0] || (score === best[0] && known > best[1]))) best = [score, known];
  }
  return best === null ? null : best[1];
}

/**
 * Why `key` may not stand in `[report]`, or null for a known key (see the module comment).
 * @param {string} key
 * @param {unknown} value
 * @param {unknown} token
 * @returns {import("./refused").Problem | null}
 */
function keyProblem(key, value, token) {
  const isToken = typeof token === "string" && token !== "" && value === token;
  if (REPORT_KEYS.includes(key) && !isToken) return null;
  const folded = key.toLowerCase().replace(/[_-]/g, "");
  if (isToken || SECRET_WORDS.some((w) => folded.includes(w))) {
    return { rule: "report.settings.token", path: ["report", key], message: `remove '${key}' from paths.toml: the token is never read from a file; export ${TOKEN_ENV}=<token> instead` };
  }
  const close = closeMatch(key);
  const hint = close === null ? "" : `did you mean '${close}'? `;
  return {
    rule: "report.settings.unknown_key",
    path: ["report", key],
    message: `[report] has no key '${key}'; ${hint}the keys are ${REPORT_KEYS.join(", ")} (an unknown key is refused, not ignored: a misspelt one would leave its default in force); rename or remove it`,
  };
}

/**
 * The token, when it is usable in a Bearer header; its value is never shown.
 * @param {unknown} token
 * @returns {string}
 */
function checkToken(token) {
  if (typeof token !== "string" || token === "") {
    throw Refused.one("report.settings.token", [TOKEN_ENV], `export ${TOKEN_ENV}=<token> before turning reporting on (the token is never read from a file)`);
  }
  if (![...token].every((c) => c >= "\x21" && c <= "\x7e")) {
    throw Refused.one("report.settings.token", [TOKEN_ENV], `${TOKEN_ENV} must be printable ASCII without spaces or line breaks`);
  }
  return token;
}

/**
 * `s` with its %XX escapes decoded as Python's urllib.parse.unquote does: each run of ASCII
 * characters becomes bytes (a % not followed by two hex digits stays as written) decoded as
 * UTF-8 with invalid sequences replaced by U+FFFD; other characters are kept.
 * @param {string} s
 */
function pyUnquote(s) {
  if (!s.includes("%")) return s;
  const decoder = new TextDecoder("utf-8", { ignoreBOM: true }); // keeps a decoded BOM, as Python
  return s.replace(/[\x00-\x7f]+/g, (run) => {
    /** @type {number[]} */
    const bytes = [];
    for (let i = 0; i < run.length; i++) {
      const hex = run.slice(i + 1, i + 3);
      if (run[i] === "%" && /^[0-9A-Fa-f]{2}$/.test(hex)) {
        bytes.push(parseInt(hex, 16));
        i += 2;
      } else {
        bytes.push(run.charCodeAt(i));
      }
    }
    return decoder.decode(Uint8Array.from(bytes));
  });
}

/**
 * Refuse a URL that holds the token (user info, path, query, fragment), as written or
 * percent-decoded; shows neither. An occurrence wholly inside the scheme or the host and
 * port is no leak (tokenOutsideHost). Runs before the other checks, as
 * check_token_not_in_url in Python.
 * @param {unknown} url
 * @param {unknown} token
 */
function checkTokenNotInUrl(url, token) {
  if (!(typeof url === "string" && typeof token === "string" && token !== "")) return;
  if (tokenOutsideHost(url, token) || tokenOutsideHost(pyUnquote(url), token)) {
    throw Refused.one(
      "report.settings.token",
      ["report", "url"],
      `the URL holds the value of ${TOKEN_ENV}; remove it from the URL ([report] url in paths.toml): the token is sent only in the Authorization header, from ${TOKEN_ENV}`,
    );
  }
}

/**
 * Whether `token` occurs in the URL `text` anywhere but wholly inside its scheme or its
 * host and port, by the plain string rules of token_outside_host in Python: the scheme
 * precedes the first "://"; the authority follows it up to the first "/", "?" or "#"; the
 * host and port follow the authority's last "@". Without "://" every occurrence counts.
 * @param {string} text
 * @param {string} token
 * @returns {boolean}
 */
function tokenOutsideHost(text, token) {
  const schemeEnd = text.indexOf("://");
  /** @type {Array<[number, number]>} */
  const spans = [];
  if (schemeEnd >= 0) {
    const start = schemeEnd + 3;
    const stops = ["/", "?", "#"].map((c) => text.indexOf(c, start)).filter((i) => i >= 0);
    const end = stops.length ? Math.min(...stops) : text.length;
    const at = text.lastIndexOf("@", end - 1);
    const hostStart = at >= start ? at + 1 : start;
    spans.push([0, schemeEnd], [hostStart, end]);
  }
  for (let at = text.indexOf(token); at >= 0; at = text.indexOf(token, at + 1)) {
    if (!spans.some(([a, b]) => a <= at && at + token.length <= b)) return true;
  }
  return false;
}

/**
 * every as seconds, when it is a finite number greater than 0 (a bool is not a number).
 * @param {unknown} every
 * @returns {number}
 */
function checkEvery(every) {
  const value = typeof every === "bigint" || typeof every === "number" ? Number(every) : NaN;
  if (!(Number.isFinite(value) && value > 0)) {
    throw Refused.one("report.settings.every", ["report", "every"], "every is the number of seconds between progress reports; set it to a number greater than 0");
  }
  return value;
}

/**
 * Whether `file` is a readable PEM file holding at least one CA certificate (every
 * certificate in it must parse, as OpenSSL's load_verify_locations requires).
 * @param {string} file
 */
function isCaFile(file) {
  let text;
  try {
    if (!fs.statSync(file).isFile()) return false;
    text = fs.readFileSync(file, "latin1");
  } catch {
    return false;
  }
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  let ca = false;
  for (const block of blocks) {
    try {
      ca = new crypto.X509Certificate(block).ca || ca;
    } catch {
      return false;
    }
  }
  return ca;
}

/**
 * A CA path as a refusal shows it: as given, the token and the home folder scrubbed (the
 * folder is often what is wrong), a path past 200 characters keeping its end; as
 * _ca_refused in Python.
 * @param {string} given
 * @param {unknown} token
 */
function shownPath(given, token) {
  const shown = Array.from(scrubHome(given, new Secrets({ token: typeof token === "string" && token ? token : null })));
  return shown.length > 200 ? `...${shown.slice(-197).join("")}` : shown.join("");
}

/**
 * Checked settings (see the module comment); refuses the first bad one.
 * @param {{url: unknown, every: unknown, token: unknown, caBundle?: string | null}} args
 * @returns {Settings}
 */
function reportSettings({ url, every, token, caBundle = null }) {
  checkTokenNotInUrl(url, token);
  checkUrl(url);
  const seconds = checkEvery(every);
  checkToken(token);
  if (caBundle !== null && !isCaFile(caBundle)) {
    throw Refused.one("report.settings.ca_bundle", ["report", "ca_bundle"], `ca_bundle must name an existing PEM file of CA certificates (${shownPath(caBundle, token)})`);
  }
  return { url: /** @type {string} */ (url), every: seconds, token: /** @type {string} */ (token), caBundle, timeoutMs: CLIENT_TIMEOUT_MS };
}

/**
 * Read [report] from paths.toml and the token from env.CORREAD_REPORT_TOKEN.
 * @param {string} pathsToml
 * @param {Record<string, PyValue>} env
 * @returns {Settings}
 */
function loadSettings(pathsToml, env) {
  let text;
  try {
    text = fs.readFileSync(pathsToml, "utf8");
  } catch (e) {
    // as Python: the file where it was looked for, why it cannot be read, what to give
    const where = path.resolve(pathsToml);
    const code = /** @type {{code?: string}} */ (e).code;
    const why =
      code === "ENOENT" ? "does not exist" : code === "EISDIR" ? "is a folder, not a file" : `cannot be read (${code || String(e)})`;
    throw Refused.one(
      "report.settings.toml",
      [path.basename(pathsToml)],
      `paths.toml ${where} ${why}; give the path of your paths.toml (the file with the [report] section; a relative path is taken from the current directory)`,
    );
  }
  let data;
  try {
    data = toml.parse(text);
  } catch (e) {
    if (!(e instanceof toml.TomlError)) throw e;
    throw Refused.one("report.settings.toml", [path.basename(pathsToml)], `paths.toml is not valid TOML (${e.message}); fix it`);
  }
  const section = data.report;
  if (section === null || typeof section !== "object" || Array.isArray(section) || section instanceof toml.TomlDateTime) {
    throw Refused.one("report.settings.url_missing", ["report"], "add a [report] section with url and every to paths.toml");
  }
  const envToken = Object.prototype.hasOwnProperty.call(env, TOKEN_ENV) ? env[TOKEN_ENV] : "";
  const problems = Object.entries(section).flatMap(([key, value]) => keyProblem(key, value, envToken) ?? []);
  if (problems.length) throw new Refused(problems);
  const ca = section.ca_bundle;
  let caBundle = null;
  if (ca !== undefined && ca !== null) {
    caBundle = path.resolve(path.dirname(pathsToml), typeof ca === "string" ? ca : String(ca));
  }
  const token = Object.prototype.hasOwnProperty.call(env, TOKEN_ENV) ? env[TOKEN_ENV] : "";
  const settings = reportSettings({ url: section.url, every: section.every ?? 60n, token, caBundle });
  // the CA variables come from `env` too (never this process's environment behind the
  // caller's back), and one naming no file or folder is refused unless ca_bundle is set
  /** @type {Record<string, string>} */
  const caEnviron = {};
  for (const name of CA_VARIABLES) {
    const value = env[name];
    if (typeof value === "string" && value !== "") caEnviron[name] = value;
  }
  const name = CA_VARIABLES.find((n) => n in caEnviron);
  if (name !== undefined && caBundle === null && !fs.existsSync(/** @type {string} */ (caEnviron[name]))) {
    throw Refused.one("report.settings.ca_bundle", [name], `${name} must name an existing file (or folder) of CA certificates; fix it or unset it (${shownPath(/** @type {string} */ (caEnviron[name]), settings.token)})`);
  }
  return { ...settings, caEnviron };
}

module.exports = { TOKEN_ENV, CA_VARIABLES, REPORT_KEYS, pyUnquote, checkTokenNotInUrl, checkUrl, checkToken, checkEvery, isLoopback, isCaFile, redactUrl, closeMatch, reportSettings, loadSettings };
