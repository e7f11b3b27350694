// @ts-check
/**
 * Atomic file writes, as the Python writers do them (runtime/trainrecord/foundry/files.py).
 *
 * createNew: the bytes go to a temporary file beside the target, are fsynced, and the
 * temporary file is hard-linked to the final name. link() fails when the name exists, so of
 * several processes racing for one name exactly one wins, and a reader sees no file or the
 * complete file. replace: temporary file, fsync, rename. Temporary files are named
 * `.<final name>.<random>.tmp` and are removed on every path.
 */
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const crypto = require("node:crypto");

/** @param {string} folder */
function fsyncDir(folder) {
  const fd = fs.openSync(folder, "r");
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * @param {string} target
 * @param {Buffer} data
 * @returns {string} the temporary file
 */
function writeTemp(target, data) {
  for (;;) {
    const tmp = path.join(path.dirname(target), `.${path.basename(target)}.${crypto.randomBytes(8).toString("hex")}.tmp`);
    let fd;
    try {
      fd = fs.openSync(tmp, "wx", 0o666);
    } catch (e) {
      if (/** @type {NodeJS.ErrnoException} */ (e).code === "EEXIST") continue;
      throw e;
    }
    try {
      fs.writeSync(fd, data);
      fs.fsyncSync(fd);
      fs.closeSync(fd);
    } catch (e) {
      fs.closeSync(fd);
      fs.rmSync(tmp, { force: true });
      throw e;
    }
    return tmp;
  }
}

/**
 * Create `target` with `data`; throws an error with code EEXIST when it exists.
 * @param {string} target
 * @param {Buffer} data
 */
function createNew(target, data) {
  const tmp = writeTemp(target, data);
  try {
    fs.linkSync(tmp, target);
  } finally {
    fs.rmSync(tmp, { force: true });
  }
  fsyncDir(path.dirname(target));
}

/**
 * Write `data` to `target` atomically, replacing any file there.
 * @param {string} target
 * @param {Buffer} data
 */
function replace(target, data) {
  const tmp = writeTemp(target, data);
  try {
    fs.renameSync(tmp, target);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw e;
  }
  fsyncDir(path.dirname(target));
}

module.exports = { createNew, replace };
