// @ts-check
/**
 * The job-facing client (as runtime/trainrecord/report/reporter.py): report one run from
 * start to end, or send one snapshot now.
 *
 * Reporter(settings, state, {seq, flushTimeoutMs, warn}) checks a first report at once
 * (throws Refused before any work starts), then started(), progress(...) (at most
 * once every settings.every seconds), epochEnd(entry), complete(),
 * interrupted(), failed(type, message) and close(). Every call only updates the state and
 * hands a build of a copy of it to the background Sender; the seq is taken when the report
 * is built, so reports go out in seq order; sentAt is the clock time then (seq may run
 * ahead of the clock). This Reporter is never given a run folder, so Ctrl+C is always
 * `interrupted`: `discarded` means the folder was deleted (report.status.discarded), as
 * the Python Reporter without `run=`.
 *
 * reportStatus(settings, state, status, {seq}): one `snapshot` report now; throws
 * ReportNotDelivered (with the status code and the first 300 characters of the answer)
 * when it does not get through.
 */
"use strict";

const { performance } = require("node:perf_hooks");
const { buildReport, checkReport, encodeReport, errorInfo, localTime, snapshot, Secrets } = require("./payload");
const { postReport } = require("./report");
const { SeqClock } = require("./seq");
const { Sender } = require("./sender");

/** @typedef {import("./settings").Settings} Settings */
/** @typedef {import("./payload").JobState} JobState */
/** @typedef {import("./report").Outcome} Outcome */
/** @typedef {import("./pyjson").PyValue} PyValue */

/** A report that was meant to get through did not (reportStatus). */
class ReportNotDelivered extends Error {
  /** @param {Outcome} outcome */
  constructor(outcome) {
    const code = outcome.status !== null ? `HTTP ${outcome.status}` : outcome.category;
    super(`report not delivered (${code}): ${outcome.message}${outcome.body ? `; server said: ${outcome.body}` : ""}`);
    this.outcome = outcome;
  }
}

/** Seconds on a monotonic clock. */
const monotonic = () => performance.now() / 1000;

class Reporter {
  /**
   * @param {Settings} settings
   * @param {JobState} state
   * @param {{seq?: SeqClock, flushTimeoutMs?: number, warn?: (message: string) => void}} [options]
   */
  constructor(settings, state, options = {}) {
    this.settings = settings;
    this.state = state;
    this.seq = options.seq ?? new SeqClock();
    this.secrets = new Secrets({ token: settings.token });
    this.lastQueued = -Infinity;
    this.final = false;
    // Refuse a job whose reports could never be sent, before any work starts.
    const first = this.seq.last + 1n > 1n ? this.seq.last + 1n : 1n;
    checkReport(buildReport(snapshot(state), { event: "started", status: "in progress", seq: first, sentAt: localTime() }), this.secrets);
    this.sender = new Sender(settings, { flushTimeoutMs: options.flushTimeoutMs, warn: options.warn });
  }

  /**
   * @param {string} event
   * @param {string} status
   */
  queue(event, status) {
    const snap = snapshot(this.state);
    this.lastQueued = monotonic();
    this.sender.submit(() => {
      const seq = this.seq.next();
      const report = buildReport(snap, { event, status, seq, sentAt: localTime() });
      return encodeReport(report, this.secrets);
    });
  }

  /** The job starts (or resumes with the same run_id). */
  started() {
    this.state.running = true;
    this.queue("started", "in progress");
  }

  /**
   * Record where the job is; queue a progress report at most once every `every` seconds
   * (§3), whatever the caller (no way past it: a job that wants more sets a smaller every).
   * @param {{phase?: PyValue, batch?: PyValue, batches?: PyValue, wordsDone?: PyValue}} [where]
   * @returns {boolean} whether a report was queued
   */
  progress(where = {}) {
    if (this.final) return false; // the final report is queued; nothing may supersede it
    const state = this.state;
    if (where.phase !== undefined && where.phase !== null) state.phase = where.phase;
    state.batch = where.batch ?? null;
    if (where.batches !== undefined && where.batches !== null) state.batches = where.batches;
    if (where.wordsDone !== undefined && where.wordsDone !== null) state.words_done = where.wordsDone;
    if (monotonic() - this.lastQueued < this.settings.every) return false;
    this.queue("progress", "in progress");
    return true;
  }

  /**
   * An epoch finished training and validation and its checkpoint is saved.
   * @param {PyValue} entry
   */
  epochEnd(entry) {
    if (this.final) return;
    this.state.history.push(entry);
    this.state.phase = null;
    this.state.batch = null;
    this.state.batches = null; // batches counts the batches of a phase; there is none
    this.queue("epoch_end", "in progress");
  }

  /**
   * @param {string} event
   * @param {string} status
   */
  finish(event, status) {
    if (this.final) return;
    this.final = true;
    this.state.running = false;
    this.queue(event, status);
  }

  /** The job finished. */
  complete() {
    this.state.finished_at = localTime();
    this.finish("complete", "complete");
  }

  /**
   * Ctrl+C: status `interrupted`. Never `discarded`: that says the run folder was deleted,
   * and this Reporter has no run folder to delete (report.status.discarded).
   */
  interrupted() {
    this.finish("interrupted", "interrupted");
  }

  /**
   * An exception ended the job; its class and scrubbed message go in error.
   * @param {string} type
   * @param {string} message
   */
  failed(type, message) {
    this.state.error = errorInfo(type, message, this.secrets);
    this.finish("failed", "failed");
  }

  /**
   * Give the last report a bounded time to go out; resolves with whether it did.
   * @param {number} [timeoutMs]
   */
  close(timeoutMs) {
    return this.sender.close(timeoutMs);
  }
}

/**
 * Send one `snapshot` report now; resolve with its seq or throw ReportNotDelivered.
 * @param {Settings} settings
 * @param {JobState} state
 * @param {string} status any status of §6 (`stopped`: recorded as running, its process gone)
 * @param {{seq?: SeqClock}} [options]
 * @returns {Promise<bigint>}
 */
async function reportStatus(settings, state, status, options = {}) {
  const clock = options.seq ?? new SeqClock();
  const snap = snapshot(state);
  snap.running = false;
  const seq = clock.next();
  const report = buildReport(snap, { event: "snapshot", status, seq, sentAt: localTime() });
  const body = encodeReport(report, new Secrets({ token: settings.token }));
  const outcome = await postReport(settings, body);
  if (!outcome.ok) throw new ReportNotDelivered(outcome);
  return seq;
}

module.exports = { Reporter, ReportNotDelivered, reportStatus };
