// @ts-check
/**
 * A reporting receiver: the server side of the Reporting API v2 in Node (node:http only), as
 * the Python reference receiver (runtime/trainrecord/report/receiver.py, `trainrecord serve`)
 * answers. POST to any path, checked in this order (spec/README.md, "Receiver"):
 *
 * - 401 without `Authorization: Bearer <token>` or with a wrong token (the scheme in any
 *   case, one or more spaces, then exactly the token, compared in constant time);
 * - 415 when Content-Type is not application/json; 411 without Content-Length;
 * - 413 when Content-Length is over 256 KB (262144 bytes), before reading the body;
 * - 400 for a body that is not strict JSON in UTF-8 (no NaN, no duplicate names, no BOM);
 * - 422 for a report reporting.schema.json refuses: `{"ok": false, "problems": [...]}`
 *   (rule, path, message; at most 50);
 * - 200 `{"ok": true, "stored": bool}` otherwise, also for an old or duplicate report: a
 *   report is stored only when its seq is greater than the stored one for its run_id (§4).
 *
 * GET with the same token: `/api/runs` (every run with its state: its status, or `no
 * contact` when in progress and silent for 3 x every + 300 s), `/api/runs/<run_id>` (its
 * stored report), `/api/runs/<run_id>/receipts`. Other methods: 405. The store is in memory
 * (this receiver lives as long as the harness process that serves it). A refused request's
 * body is read and dropped (up to 1 MiB, then the connection is cut), never kept.
 */
"use strict";

const http = require("node:http");
const crypto = require("node:crypto");
const { parse, dumpsCompact } = require("./pyjson");
const { problems } = require("./validate");
const { REPORT_SCHEMA } = require("./payload");
const { checkToken } = require("./settings");

/** @typedef {import("./pyjson").PyValue} PyValue */
/** @typedef {{seq: bigint, status: string, receivedAt: number, lastContact: number, report: Record<string, PyValue>}} Stored */

const MAX_BODY = 256 * 1024;
/** A refused request's body is read and dropped up to this much, then the connection cut. */
const DRAIN_LIMIT = 1024 * 1024;
const REQUEST_TIMEOUT_MS = 30000;
const NO_CONTACT_GRACE_S = 300;
const RUN_PATH = /^\/api\/runs\/([0-9a-f-]{36})(\/receipts)?\/?$/;

/** The latest report per run_id (newest seq wins) and every receipt. */
class ReportStore {
  constructor() {
    /** @type {Map<string, Stored>} */
    this.runs = new Map();
    /** @type {{run_id: string, seq: bigint, received_at: number, stored: boolean}[]} */
    this.receipts = [];
  }

  /**
   * Store `report` when its seq is greater than the stored one for its run_id; every
   * receipt is kept, and any report counts as contact.
   * @param {Record<string, PyValue>} report a report that validates
   * @returns {boolean} whether it became the stored report
   */
  put(report) {
    const runId = String(report.run_id);
    const seq = /** @type {bigint} */ (report.seq);
    const now = Date.now() / 1000;
    const old = this.runs.get(runId);
    const stored = old === undefined || seq > old.seq;
    if (stored) {
      this.runs.set(runId, { seq, status: String(report.status), receivedAt: now, lastContact: now, report });
    } else if (old !== undefined) {
      old.lastContact = Math.max(old.lastContact, now);
    }
    this.receipts.push({ run_id: runId, seq, received_at: now, stored });
    return stored;
  }

  /**
   * Every run's summary, with its state.
   * @param {number} every the clients' reporting interval, seconds
   * @returns {PyValue[]}
   */
  list(every) {
    const now = Date.now() / 1000;
    return [...this.runs.entries()].map(([runId, s]) => ({
      run_id: runId, seq: s.seq, kind: s.report.kind ?? null, name: s.report.name ?? null, group: s.report.group ?? null,
      host: s.report.host ?? null, event: s.report.event ?? null, status: s.status, sent_at: s.report.sent_at ?? null,
      received_at: s.receivedAt, last_contact: s.lastContact,
      state: s.status === "in progress" && now - s.lastContact > 3 * every + NO_CONTACT_GRACE_S ? "no contact" : s.status,
    }));
  }
}

/**
 * Whether the Authorization header is `Bearer <token>` (scheme in any case, one or more
 * spaces): the token is compared in constant time (both sides hashed to equal lengths).
 * @param {string | undefined} header
 * @param {Buffer} expected
 */
function authorised(header, expected) {
  const text = header ?? "";
  const space = text.indexOf(" ");
  const scheme = space < 0 ? text : text.slice(0, space);
  const given = Buffer.from(space < 0 ? "" : text.slice(space + 1).replace(/^ +/, ""), "latin1");
  const digest = (/** @type {Buffer} */ b) => crypto.createHash("sha256").update(b).digest();
  const same = crypto.timingSafeEqual(digest(given), digest(expected)); // always run
  return same && scheme.toLowerCase() === "bearer";
}

/**
 * Read and drop a refused request's body (never kept), so that the client reads its answer
 * instead of a connection reset; past DRAIN_LIMIT bytes the connection is cut.
 * @param {http.IncomingMessage} req
 */
function drain(req) {
  let seen = 0;
  req.on("data", (/** @type {Buffer} */ chunk) => {
    seen += chunk.length;
    if (seen > DRAIN_LIMIT) req.socket.destroy();
  });
  req.resume();
}

/**
 * @param {http.ServerResponse} res
 * @param {number} status
 * @param {PyValue} doc
 * @param {Record<string, string>} [headers]
 * @param {boolean} [close]
 */
function send(res, status, doc, headers = {}, close = false) {
  const body = Buffer.from(dumpsCompact(doc), "utf8");
  res.writeHead(status, {
    "Content-Type": "application/json",
    "Content-Length": String(body.length),
    ...headers,
    ...(close ? { Connection: "close" } : {}),
  });
  res.end(body);
}

/**
 * A receiver that is not yet listening.
 * @param {{token: string, every?: number, store?: ReportStore}} options
 * @returns {{server: http.Server, store: ReportStore}}
 */
function createReceiver({ token, every = 60, store = new ReportStore() }) {
  const expected = Buffer.from(checkToken(token), "latin1");
  const server = http.createServer((req, res) => {
    if (req.method !== "POST" && req.method !== "GET") {
      drain(req);
      send(res, 405, { ok: false, error: "use POST to report, GET to read" }, { Allow: "GET, POST" }, true);
      return;
    }
    if (!authorised(req.headers.authorization, expected)) {
      drain(req);
      send(res, 401, { ok: false, error: "bad or missing bearer token" }, { "WWW-Authenticate": 'Bearer realm="trainrecord"' }, true);
      return;
    }
    if (req.method === "POST") post(req, res, store);
    else get(req, res, store, every);
  });
  server.on("clientError", (err, socket) => answerUnparsed(err, socket, expected));
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  server.headersTimeout = REQUEST_TIMEOUT_MS;
  return { server, store };
}

/**
 * Answer a request node:http could not parse, then close the connection. A Content-Length
 * it refuses (a number past 2^64 - 1, or not a number) is judged as the Python receiver
 * judges it, in the same order of checks: 405 for another method, 401 without the token,
 * 415 for another Content-Type, 413 for a number (over the limit however large), else 400
 * "Content-Length is not a number". Anything else unparsable is 400.
 * @param {Error & {code?: string, rawPacket?: Buffer}} err
 * @param {import("node:stream").Duplex} socket
 * @param {Buffer} expected the token
 */
function answerUnparsed(err, socket, expected) {
  if (!socket.writable) return;
  let status = 400;
  /** @type {PyValue} */
  let doc = { ok: false, error: "the request is not valid HTTP" };
  /** @type {Record<string, string>} */
  let extra = {};
  if (err.code === "HPE_INVALID_CONTENT_LENGTH" && Buffer.isBuffer(err.rawPacket)) {
    const [start = "", ...lines] = err.rawPacket.toString("latin1").split("\r\n\r\n", 1)[0].split("\r\n");
    /** @type {Map<string, string>} */
    const fields = new Map();
    for (const line of lines) {
      const colon = line.indexOf(":");
      const name = line.slice(0, colon).trim().toLowerCase();
      if (colon > 0 && !fields.has(name)) fields.set(name, line.slice(colon + 1).trim());
    }
    const method = start.split(" ", 1)[0];
    const ctype = (fields.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
    if (method !== "POST" && method !== "GET") {
      [status, doc, extra] = [405, { ok: false, error: "use POST to report, GET to read" }, { Allow: "GET, POST" }];
    } else if (!authorised(fields.get("authorization"), expected)) {
      [status, doc, extra] = [401, { ok: false, error: "bad or missing bearer token" }, { "WWW-Authenticate": 'Bearer realm="trainrecord"' }];
    } else if (method === "POST" && ctype !== "application/json") {
      [status, doc] = [415, { ok: false, error: "Content-Type must be application/json" }];
    } else if (/^[0-9]+$/.test(fields.get("content-length") ?? "")) {
      [status, doc] = [413, { ok: false, error: `body over ${MAX_BODY} bytes` }];
    } else {
      doc = { ok: false, error: "Content-Length is not a number" };
    }
  }
  const body = Buffer.from(dumpsCompact(doc), "utf8");
  const head = { "Content-Type": "application/json", "Content-Length": String(body.length), ...extra, Connection: "close" };
  const lines = Object.entries(head).map(([k, v]) => `${k}: ${v}\r\n`).join("");
  socket.end(Buffer.concat([Buffer.from(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\n${lines}\r\n`, "latin1"), body]));
}

/**
 * @param {http.IncomingMessage} req
 * @param {http.ServerResponse} res
 * @param {ReportStore} store
 */
function post(req, res, store) {
  const ctype = (req.headers["content-type"] ?? "").split(";")[0].trim().toLowerCase();
  if (ctype !== "application/json") {
    drain(req);
    send(res, 415, { ok: false, error: "Content-Type must be application/json" }, {}, true);
    return;
  }
  const lengthText = req.headers["content-length"];
  if (lengthText === undefined) {
    drain(req);
    send(res, 411, { ok: false, error: "Content-Length is required" }, {}, true);
    return;
  }
  const length = Number(lengthText); // node:http has already refused a malformed one (400)
  if (length > MAX_BODY) {
    drain(req); // judged before reading: the body is only dropped
    send(res, 413, { ok: false, error: `body over ${MAX_BODY} bytes` }, {}, true);
    return;
  }
  /** @type {Buffer[]} */
  const chunks = [];
  req.on("data", (/** @type {Buffer} */ chunk) => chunks.push(chunk));
  req.on("end", () => {
    const raw = Buffer.concat(chunks);
    let report;
    try {
      report = parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(raw));
    } catch {
      send(res, 400, { ok: false, error: "the body is not strict JSON in UTF-8" });
      return;
    }
    const found = problems(report, REPORT_SCHEMA);
    if (found.length > 0) {
      const shown = found.slice(0, 50).map((p) => ({ rule: p.rule, path: p.path.map((x) => (typeof x === "number" ? BigInt(x) : x)), message: p.message }));
      send(res, 422, { ok: false, problems: shown });
      return;
    }
    const stored = store.put(/** @type {Record<string, PyValue>} */ (report));
    send(res, 200, { ok: true, stored });
  });
}

/**
 * @param {http.IncomingMessage} req
 * @param {http.ServerResponse} res
 * @param {ReportStore} store
 * @param {number} every
 */
function get(req, res, store, every) {
  req.resume();
  const path = (req.url ?? "").split("?", 1)[0];
  if (path.replace(/\/+$/, "") === "/api/runs") {
    send(res, 200, { runs: store.list(every), every });
    return;
  }
  const match = RUN_PATH.exec(path);
  if (match) {
    const runId = /** @type {string} */ (match[1]);
    if (match[2]) {
      send(res, 200, { run_id: runId, receipts: store.receipts.filter((r) => r.run_id === runId).map((r) => ({ ...r })) });
      return;
    }
    const stored = store.runs.get(runId);
    if (stored !== undefined) {
      send(res, 200, stored.report);
      return;
    }
  }
  send(res, 404, { ok: false, error: "not found" });
}

/**
 * Start a receiver on `host` (a free port) and resolve once it accepts connections.
 * @param {{token: string, host?: string, every?: number}} options
 * @returns {Promise<{server: http.Server, store: ReportStore, url: string}>}
 */
function serve({ token, host = "127.0.0.1", every = 60 }) {
  const { server, store } = createReceiver({ token, every });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, () => {
      server.off("error", reject);
      server.unref(); // the harness exits at stop, whatever the receiver is doing
      const address = /** @type {import("node:net").AddressInfo} */ (server.address());
      const shown = address.family === "IPv6" ? `[${address.address}]` : address.address;
      resolve({ server, store, url: `http://${shown}:${address.port}` });
    });
  });
}

module.exports = { MAX_BODY, ReportStore, createReceiver, serve, authorised };
