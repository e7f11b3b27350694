// @ts-check
/**
 * An exclusive lock between processes, held while a function runs.
 *
 * The Python runtime uses flock(); Node's standard library has none, so the lock here is a
 * file created with O_EXCL (`open(..., "wx")`) holding the owner's pid, removed when the
 * function returns. A waiter polls every 2 ms; a lock whose owner process is gone, or that
 * is older than 30 s (an owner killed between create and write), is taken over. It
 * excludes other Node processes; it does not interlock with the Python runtime's flock()
 * on its own lock files (the lock files have different names, so neither ever waits for a
 * file the other leaves behind).
 */
"use strict";

const fs = require("node:fs");

const STALE_MS = 30_000;
const pause = new Int32Array(new SharedArrayBuffer(4));

/** Whether the process `pid` is alive. @param {number} pid */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return /** @type {NodeJS.ErrnoException} */ (e).code === "EPERM";
  }
}

/**
 * Run `fn` holding the lock file `lock`.
 * @template T
 * @param {string} lock
 * @param {() => T} fn
 * @returns {T}
 */
function withLock(lock, fn) {
  for (;;) {
    let fd;
    try {
      fd = fs.openSync(lock, "wx", 0o644);
    } catch (e) {
      if (/** @type {NodeJS.ErrnoException} */ (e).code !== "EEXIST") throw e;
      try {
        const text = fs.readFileSync(lock, "utf8");
        const owner = Number(text);
        const age = Date.now() - fs.statSync(lock).mtimeMs;
        if (age > STALE_MS || (text !== "" && Number.isInteger(owner) && owner > 0 && !alive(owner))) fs.rmSync(lock, { force: true });
      } catch {
        // released meanwhile: try again
      }
      Atomics.wait(pause, 0, 0, 2);
      continue;
    }
    try {
      fs.writeSync(fd, String(process.pid));
    } finally {
      fs.closeSync(fd);
    }
    try {
      return fn();
    } finally {
      fs.rmSync(lock, { force: true });
    }
  }
}

module.exports = { withLock };
