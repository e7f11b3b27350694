// @ts-check
/**
 * The background sender (Reporting API v2 §3, as runtime/trainrecord/report/sender.py):
 * keeps only the newest unsent report.
 *
 * A job hands the sender a build function (which makes the report body when its turn
 * comes) with submit(): that replaces any report still waiting and returns at once,
 * whatever the server does. The sender posts one report at a time on Node's event loop,
 * never retrying; the job's code never waits for the network. On a failure it warns once
 * (the `warn` function; stderr by default), then stays quiet until a report gets through
 * again. close(timeoutMs) stops taking reports and gives the waiting one a bounded time to
 * go out.
 */
"use strict";

const { postReport } = require("./report");
const { Refused } = require("./refused");

/** @typedef {import("./settings").Settings} Settings */
/** @typedef {import("./report").Outcome} Outcome */
/** @typedef {() => Buffer} Build */

/** @param {string} message */
const stderrWarning = (message) => process.stderr.write(`WARNING trainrecord.report: ${message}\n`);

class Sender {
  /**
   * @param {Settings} settings
   * @param {{flushTimeoutMs?: number, warn?: (message: string) => void}} [options]
   */
  constructor(settings, options = {}) {
    this.settings = settings;
    this.flushTimeoutMs = options.flushTimeoutMs ?? 5000;
    this.warn = options.warn ?? stderrWarning;
    /** @type {Build | null} */
    this.pending = null;
    this.closing = false;
    this.failing = false;
    this.busy = false;
    this.sent = 0;
    this.failed = 0;
    this.refused = 0;
    this.superseded = 0;
    /** @type {Outcome | null} */
    this.lastOutcome = null;
    /** @type {(() => void)[]} */
    this.idleWaiters = [];
  }

  /**
   * Queue a report, replacing one still waiting. Never waits for the network.
   * @param {Build} build
   */
  submit(build) {
    if (this.closing) return;
    if (this.pending !== null) this.superseded += 1;
    this.pending = build;
    if (!this.busy) void this.pump();
  }

  /** True when nothing waits to be sent and nothing is on the wire. */
  get idle() {
    return this.pending === null && !this.busy;
  }

  async pump() {
    this.busy = true;
    try {
      while (this.pending !== null) {
        const build = this.pending;
        this.pending = null;
        await this.send(build);
      }
    } finally {
      this.busy = false;
      for (const wake of this.idleWaiters.splice(0)) wake();
    }
  }

  /** @param {Build} build */
  async send(build) {
    let body;
    try {
      body = build();
    } catch (e) {
      this.refused += 1;
      this.fail(e instanceof Refused ? `a report was not sent because it breaks the spec: ${e.message}` : `a report could not be built (${/** @type {Error} */ (e)?.name ?? "error"})`);
      return;
    }
    const outcome = await postReport(this.settings, body);
    this.lastOutcome = outcome;
    if (outcome.ok) {
      this.sent += 1;
      this.failing = false;
    } else {
      this.failed += 1;
      this.fail(outcome.message);
    }
  }

  /** @param {string} message */
  fail(message) {
    if (this.failing) return;
    this.failing = true;
    this.warn(`trainrecord report: ${message}; staying quiet until a report gets through`);
  }

  /**
   * Stop taking reports; wait up to `timeoutMs` (default flushTimeoutMs) for the waiting one
   * to go out. Resolves with whether the sender finished in time.
   * @param {number} [timeoutMs]
   * @returns {Promise<boolean>}
   */
  close(timeoutMs) {
    this.closing = true;
    if (this.idle) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(this.idle), timeoutMs ?? this.flushTimeoutMs);
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }
}

module.exports = { Sender };
