// @ts-check
/**
 * Reporting API v2 client in Node: check the settings, validate the report, POST it once.
 *
 * §2 of the contract: POST to the URL exactly as configured; Content-Type:
 * application/json, Authorization: Bearer <token>, User-Agent: CORread-reporter/2; https://
 * with verified certificates, http:// only to localhost or a loopback IP; redirects are
 * never followed (a 3xx is a failure); 10 s timeout; no retry. The body is the report as
 * strict JSON in UTF-8, valid against reporting.schema.json.
 */
"use strict";

const http = require("node:http");
const https = require("node:https");
const net = require("node:net");
const { dumpsCompact } = require("./pyjson");
const { problems } = require("./validate");
const { Refused } = require("./refused");

/** @typedef {import("./pyjson").PyValue} PyValue */

/** @type {import("@trainrecord/spec").SchemaId} */
const REPORT_SCHEMA = "https://trainrecord.dev/schemas/reporting/reporting.schema.json";
const USER_AGENT = "CORread-reporter/2";
const TIMEOUT_MS = 10_000;

/** @param {string} host */
function isLoopback(host) {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  if (h === "localhost") return true;
  if (net.isIPv4(h)) return h.startsWith("127.");
  if (net.isIPv6(h)) return h === "::1" || h === "0:0:0:0:0:0:0:1";
  return false;
}

/**
 * The URL, checked: https://, or http:// to localhost or a loopback IP; no credentials.
 * @param {PyValue} url
 * @returns {URL}
 */
function checkUrl(url) {
  if (typeof url !== "string" || url.trim() === "") {
    throw Refused.one("report.settings.url_missing", ["url"], "[report] url is not set; give the https:// address of your endpoint");
  }
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    throw Refused.one("report.settings.url_scheme", ["url"], "the report URL is not a URL; give https://host/path");
  }
  if (parsed.username !== "" || parsed.password !== "") {
    throw Refused.one("report.settings.url_credentials", ["url"], "the report URL has a user name or password in it; the token goes only in CORREAD_REPORT_TOKEN");
  }
  if (parsed.protocol === "https:") return parsed;
  if (parsed.protocol === "http:" && isLoopback(parsed.hostname)) return parsed;
  throw Refused.one("report.settings.url_scheme", ["url"], "the report URL must be https:// (http:// only for localhost or a loopback IP)");
}

/**
 * Build and send one report. Resolves with the outcome; never follows a redirect.
 * @param {{url: PyValue, token: PyValue, report: PyValue, ca?: string | null}} args
 * @returns {Promise<{status: number | null, outcome: string, body: string}>}
 */
function sendReport({ url, token, report, ca }) {
  const target = checkUrl(url);
  if (typeof token !== "string" || token === "") {
    throw Refused.one("report.settings.token", ["CORREAD_REPORT_TOKEN"], "CORREAD_REPORT_TOKEN is not set; export the token in the environment");
  }
  const found = problems(report, REPORT_SCHEMA);
  if (found.length > 0) throw new Refused(found);
  const body = Buffer.from(dumpsCompact(report), "utf8");
  const lib = target.protocol === "https:" ? https : http;
  /** @type {https.RequestOptions} */
  const options = {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      Authorization: `Bearer ${token}`,
      "User-Agent": USER_AGENT,
      "Content-Length": String(body.length),
    },
    timeout: TIMEOUT_MS,
    agent: false,
  };
  if (target.protocol === "https:") {
    options.rejectUnauthorized = true;
    if (ca) options.ca = ca;
  }
  return new Promise((resolve) => {
    const req = lib.request(target, options, (res) => {
      /** @type {Buffer[]} */
      const parts = [];
      res.on("data", (c) => parts.push(c));
      res.on("end", () => {
        const status = res.statusCode ?? 0;
        const text = Buffer.concat(parts).toString("utf8").slice(0, 300);
        let outcome = "failed";
        if (status >= 200 && status < 300) outcome = "accepted";
        else if (status === 401 || status === 403) outcome = "unauthorized";
        else if (status === 400 || status === 422) outcome = "invalid";
        else if (status >= 300 && status < 400) outcome = "redirect_not_followed";
        resolve({ status, outcome, body: text });
      });
      res.on("error", () => resolve({ status: res.statusCode ?? null, outcome: "failed", body: "" }));
    });
    req.on("timeout", () => req.destroy(new Error("timed out after 10 s")));
    req.on("error", (e) => resolve({ status: null, outcome: "failed", body: e.message.slice(0, 300) }));
    req.end(body);
  });
}

module.exports = { sendReport, checkUrl, REPORT_SCHEMA, USER_AGENT };
