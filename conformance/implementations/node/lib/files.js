// @ts-check
/**
 * Atomic file writes, as the Python writers do them (runtime/trainrecord/foundry/files.py).
 *
 * createNew: the bytes go to a temporary file beside the target, are fsynced, and the
 * temporary file is hard-linked to the final name. link() fails when the name exists, so of
 * several processes racing for one name exactly one wins, and a reader sees no file or the
 * complete file. replace: temporary file, fsync, rename. Temporary files are named
 * `.<final name>.<random>.tmp` and are removed on every path. checkFolder: the refusal of
 * a results folder that is, or sits under, a file.
 */
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const crypto = require("node:crypto");
const { Refused } = require("./refused");

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

/**
 * Throw Refused(`rule`) when `resultsDir` is, or sits under, something that is not a folder
 * (a file, or a link to nothing): the first of it and its parents that exists decides, as
 * the Python writers' `check_folder` does. Creates nothing; called before the folder is made.
 * @param {string} resultsDir
 * @param {string} rule
 */
function checkFolder(resultsDir, rule) {
  for (let part = resultsDir; ; part = path.dirname(part)) {
    const kind = entryKind(part);
    if (kind === "folder") return;
    if (kind === "other") {
      const where = part === resultsDir ? "is" : `sits under ${part}, which is`;
      throw Refused.one(rule, ["results_dir"],
        `results_dir ${resultsDir} ${where} a file, not a folder; give a folder (it is created when missing)`);
    }
    if (path.dirname(part) === part) return;
  }
}

/**
 * What is at `p`: a folder (following links), something else (a file, a link to nothing or
 * a link loop), or nothing.
 * @param {string} p
 * @returns {"folder" | "other" | "none"}
 */
function entryKind(p) {
  try {
    return fs.statSync(p).isDirectory() ? "folder" : "other";
  } catch (e) {
    const code = /** @type {NodeJS.ErrnoException} */ (e).code;
    if (code !== "ENOENT" && code !== "ENOTDIR" && code !== "ELOOP") throw e;
  }
  try {
    // made meanwhile by a racing writer (stat said ENOENT): a folder is a folder
    return fs.lstatSync(p).isDirectory() ? "folder" : "other";
  } catch {
    return "none";
  }
}

module.exports = { createNew, replace, checkFolder };
