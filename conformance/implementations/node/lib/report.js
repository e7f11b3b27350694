// @ts-check
/**
 * Reporting API v2 transport in Node (§2, as runtime/trainrecord/report/transport.py): one
 * POST of one report, and what its answer means.
 *
 * postReport(settings, body): POST to the URL exactly as configured, with Content-Type:
 * application/json, Authorization: Bearer <token> and User-Agent: CORread-reporter/2;
 * https:// with verified certificates (the system's, or the settings' CA bundle); redirects
 * never followed (a 3xx is a failure, so the token never reaches another address); 10 s
 * in all for the whole exchange (connect, send, read the answer), however the server
 * spreads its bytes, after which the request is destroyed and the outcome is a timeout; no
 * retry. It never throws for a network or server failure: the Outcome says what
 * happened (ok, status, category, the first 300 characters of the answer with the token
 * in it as `<token>`, a message a person can act on, never the token).
 *
 * sendReport (the send_report operation, as the Python harness does it): check the
 * settings, check and encode the report (payload.encodeReport), POST it once.
 */
"use strict";

const fs = require("node:fs");
const http = require("node:http");
const https = require("node:https");
const { urlToHttpOptions } = require("node:url");
const { CA_VARIABLES, reportSettings } = require("./settings");
const { encodeReport } = require("./payload");
const { Secrets, scrubToken } = require("./privacy");

/** @typedef {import("./pyjson").PyValue} PyValue */
/** @typedef {import("./settings").Settings} Settings */
/** @typedef {{ok: boolean, status: number | null, category: string, body: string, message: string}} Outcome */

const USER_AGENT = "CORread-reporter/2";
const BODY_PREVIEW = 300;
const READ_LIMIT = 4096;

/**
 * The meaning of an HTTP status to the client (§2).
 * @param {number} status
 * @param {string} body
 * @returns {Outcome}
 */
function classify(status, body) {
  if (status >= 200 && status < 300) return { ok: true, status, category: "accepted", body, message: "accepted" };
  if (status === 401 || status === 403) {
    return { ok: false, status, category: "unauthorized", body, message: `the server refused the token (HTTP ${status}); check CORREAD_REPORT_TOKEN against the server's` };
  }
  if (status === 400 || status === 422) {
    return { ok: false, status, category: "invalid", body, message: `the server found the report invalid (HTTP ${status}); the client and server disagree on the schema` };
  }
  if (status >= 300 && status < 400) {
    return { ok: false, status, category: "redirect", body, message: `the server answered with a redirect (HTTP ${status}), which is never followed; point [report] url at the final address` };
  }
  return { ok: false, status, category: "failed", body, message: `the server failed (HTTP ${status})` };
}

/**
 * The first 300 characters (code points) of the answer's first 4 KiB, as UTF-8, the token
 * in it (as written or percent-encoded) replaced by `<token>` before the cut, so that no
 * part of it is left at the end (a server or proxy echoing the Authorization header would
 * otherwise hand it back into ReportNotDelivered's message).
 * @param {Buffer} raw
 * @param {string} token
 */
function preview(raw, token) {
  const text = scrubToken(new TextDecoder("utf-8").decode(raw.subarray(0, READ_LIMIT)), token);
  return Array.from(text).slice(0, BODY_PREVIEW).join("");
}

const UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-~";
const PATH_CHARS = new Set(`${UNRESERVED}!$&'()*+,;=:@/`);
const QUERY_CHARS = new Set([...PATH_CHARS, "?"]);

/**
 * A component of the request target percent-encoded as urllib3 does it (what the Python
 * client sends): escapes are written in upper case; when every `%` starts an escape they
 * are kept, otherwise every `%` is encoded too; any byte of the UTF-8 form that is not an
 * allowed ASCII character becomes `%XX`.
 * @param {string} component
 * @param {Set<string>} allowed
 */
function encodeInvalidChars(component, allowed) {
  if (!component.includes("%") && [...component].every((c) => allowed.has(c))) return component;
  let escapes = 0;
  const upper = component.replace(/%[0-9A-Fa-f]{2}/g, (m) => {
    escapes += 1;
    return m.toUpperCase();
  });
  const bytes = Buffer.from(upper, "utf8");
  const keepPercent = escapes === bytes.filter((b) => b === 0x25).length;
  let out = "";
  for (const b of bytes) {
    if ((keepPercent && b === 0x25) || (b < 128 && allowed.has(String.fromCharCode(b)))) out += String.fromCharCode(b);
    else out += `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/**
 * The request target of `url` exactly as written (§2: "POST <url>, exactly as
 * configured"), as the Python client's request_target: everything after the host and port
 * (the authority ends at the first "/", "?" or "#" after "://"), without the fragment, "/"
 * when the path is empty; only what cannot go on the wire is percent-encoded (see
 * encodeInvalidChars). The WHATWG parser would remove dot segments and drop an empty
 * query's "?".
 * @param {string} url
 */
function requestTarget(url) {
  const noFragment = url.split("#", 1)[0];
  const start = noFragment.indexOf("://") + 3;
  const stops = ["/", "?"].map((c) => noFragment.indexOf(c, start)).filter((i) => i >= 0);
  const rest = stops.length ? noFragment.slice(Math.min(...stops)) : "";
  const target = rest.startsWith("/") ? rest : `/${rest}`;
  const q = target.indexOf("?");
  if (q < 0) return encodeInvalidChars(target, PATH_CHARS);
  return `${encodeInvalidChars(target.slice(0, q), PATH_CHARS)}?${encodeInvalidChars(target.slice(q + 1), QUERY_CHARS)}`;
}

/** @param {Error & {code?: string}} e */
const isTlsError = (e) => /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/i.test(`${e.code ?? ""} ${e.message}`);

/**
 * The CA certificates to verify with, as the Python client picks them: ca_bundle, else the
 * first of REQUESTS_CA_BUNDLE and CURL_CA_BUNDLE set and not empty (from what loadSettings
 * was given, or else this process's environment when the report is sent), else null (the
 * system's CAs).
 * @param {Settings} settings
 * @returns {string | null}
 */
function caFile(settings) {
  if (settings.caBundle) return settings.caBundle;
  const env = settings.caEnviron ?? process.env;
  for (const name of CA_VARIABLES) {
    const value = env[name];
    if (typeof value === "string" && value !== "") return value;
  }
  return null;
}

/**
 * The PEM certificates in a file, or in every file of a folder (OpenSSL's CA path); throws
 * when none can be read.
 * @param {string} where
 * @returns {string[]}
 */
function readCa(where) {
  if (!fs.statSync(where).isDirectory()) return [fs.readFileSync(where, "latin1")];
  const found = [];
  for (const name of fs.readdirSync(where).sort()) {
    const file = `${where}/${name}`;
    try {
      if (fs.statSync(file).isFile()) {
        const text = fs.readFileSync(file, "latin1");
        if (text.includes("-----BEGIN CERTIFICATE-----")) found.push(text);
      }
    } catch {
      // an unreadable entry of the folder is skipped, as OpenSSL skips it
    }
  }
  if (found.length === 0) throw new Error(`no certificate in ${where}`);
  return found;
}

/**
 * POST one report body; resolves with the Outcome, never rejects for network or server
 * failures.
 * @param {Settings} settings
 * @param {Buffer} body
 * @returns {Promise<Outcome>}
 */
function postReport(settings, body) {
  const target = new URL(settings.url);
  const secure = target.protocol === "https:";
  /** @type {https.RequestOptions} */
  const options = {
    ...urlToHttpOptions(target), // where to connect: the host and port
    path: requestTarget(settings.url), // what to ask for: the URL as written
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      Authorization: `Bearer ${settings.token}`,
      "User-Agent": USER_AGENT,
      "Content-Length": String(body.length),
    },
    agent: false,
  };
  const seconds = settings.timeoutMs / 1000;
  if (secure) {
    options.rejectUnauthorized = true;
    const ca = caFile(settings);
    if (ca !== null) {
      try {
        options.ca = readCa(ca);
      } catch {
        return Promise.resolve({ ok: false, status: null, category: "tls", body: "", message: "the CA certificates to verify the server with could not be read; no report was sent (check ca_bundle, REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE)" });
      }
    }
  }
  return new Promise((resolve) => {
    let settled = false;
    /** @type {NodeJS.Timeout | undefined} */
    let deadline;
    /** @param {Outcome} outcome */
    const done = (outcome) => {
      if (!settled) {
        settled = true;
        clearTimeout(deadline);
        resolve(outcome);
      }
    };
    const req = (secure ? https : http).request(options, (res) => {
      /** @type {Buffer[]} */
      const parts = [];
      let size = 0;
      const status = res.statusCode ?? 0;
      const finish = () => done(classify(status, preview(Buffer.concat(parts), settings.token)));
      res.on("data", (/** @type {Buffer} */ c) => {
        if (size < READ_LIMIT) parts.push(c);
        size += c.length;
      });
      res.on("end", finish);
      res.on("error", finish); // a server that breaks off mid-body: the status still counts
      res.on("aborted", finish);
    });
    // exactly the headers of §2 plus Host and Content-Length (spec/README.md, Transport):
    // node:http would add "Connection: close" (agent: false), which nothing asked for
    req.removeHeader("Connection");
    // One deadline for the whole exchange (a socket's idle timeout would restart with
    // every byte a slow server drips).
    deadline = setTimeout(() => {
      done({ ok: false, status: null, category: "timeout", body: "", message: `no answer within ${seconds} s (the whole exchange)` });
      req.destroy();
    }, settings.timeoutMs);
    req.on("error", (e) => {
      if (isTlsError(e)) {
        done({ ok: false, status: null, category: "tls", body: "", message: "the server's TLS certificate did not verify; no report was sent (set ca_bundle in [report] for a private CA)" });
      } else {
        done({ ok: false, status: null, category: "network", body: "", message: `could not deliver the report (${/** @type {any} */ (e).code ?? e.name}): the server is down, unreachable or closed the connection` });
      }
    });
    req.end(body);
  });
}

/**
 * Check the settings and the report, then send it once (the send_report operation).
 * @param {{url: PyValue, token: PyValue, report: PyValue, caFile?: string | null}} args
 * @returns {Promise<Outcome>}
 */
async function sendReport({ url, token, report, caFile = null }) {
  const settings = reportSettings({ url, every: 60n, token, caBundle: caFile });
  const body = encodeReport(report, new Secrets()); // as the Python harness: this process's home, user and pid
  return postReport(settings, body);
}

module.exports = { USER_AGENT, classify, postReport, requestTarget, sendReport };
