// @ts-check
/**
 * seq: the ordering number of reports about one run (Reporting API v2 §4, as
 * runtime/trainrecord/report/seq.py).
 *
 * seq is the send time in milliseconds, but strictly increasing for one run across resumes
 * and processes: max(now_ms, last_seq + 1). The last value is kept in memory and, when a
 * file is given (`report_seq.json`, `{"last_seq": N}` beside the run's metadata), read and
 * written there under an exclusive lock (lockfile.js: `report_seq.json.node-lock`), so a
 * resumed run (a new process) never repeats or goes back. The file is replaced atomically
 * and durably (temporary file, fsync, rename).
 */
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { parse } = require("./pyjson");
const { withLock } = require("./lockfile");

const SEQ_FILE = "report_seq.json";
/** Milliseconds since the Unix epoch. */
const nowMs = () => BigInt(Date.now());

/** Hands out strictly increasing seq numbers for one run. */
class SeqClock {
  /**
   * @param {string | null} [file] the run's report_seq.json, shared by every process that
   *   reports about the run; none: in memory only
   * @param {bigint} [lastSeq] a known floor (e.g. from metadata.json)
   */
  constructor(file = null, lastSeq = 0n) {
    this.file = file;
    this.last = lastSeq;
  }

  /** @returns {bigint} */
  read() {
    if (this.file === null) return 0n;
    try {
      const data = parse(fs.readFileSync(this.file, "utf8"));
      const value = data !== null && typeof data === "object" && !Array.isArray(data) ? data.last_seq : undefined;
      return typeof value === "bigint" ? value : 0n;
    } catch {
      return 0n;
    }
  }

  /** @param {bigint} value */
  write(value) {
    if (this.file === null) return;
    const tmp = path.join(path.dirname(this.file), `.${path.basename(this.file)}.${process.pid}.tmp`);
    const fd = fs.openSync(tmp, "w", 0o644);
    try {
      fs.writeSync(fd, `{"last_seq": ${value}}`);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, this.file);
  }

  /** The next seq: max(now_ms, last + 1) over this process and the shared file. */
  next() {
    const step = () => {
      const known = this.read();
      const last = known > this.last ? known : this.last;
      const now = nowMs();
      const value = now > last ? now : last + 1n;
      this.write(value);
      this.last = value;
      return value;
    };
    return this.file === null ? step() : withLock(`${this.file}.node-lock`, step);
  }
}

module.exports = { SeqClock, SEQ_FILE, nowMs };
