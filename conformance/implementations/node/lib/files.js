// @ts-check
/**
 * Atomic file writes, as the Python writers do them (runtime/trainrecord/foundry/files.py).
 *
 * createNew: the bytes go to a temporary file beside the target, are fsynced, and the
 * temporary file is hard-linked to the final name. link() fails when the name exists, so of
 * several processes racing for one name exactly one wins, and a reader sees no file or the
 * complete file. replace: temporary file, fsync, rename. Temporary files are named
 * `.<final name>.<random>.tmp` and are removed on every path. checkFolder: the refusal of
 * a results folder that is, or sits under, a file. inFolder: make a missing folder
 * (`mkdir -p`) for a write, and remove the folders it made again when the write fails.
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
 * Write `data` to `target` atomically, replacing any file there; `mode`: the new file's
 * permission bits (default: the umask's).
 * @param {string} target
 * @param {Buffer} data
 * @param {number | null} [mode]
 */
function replace(target, data, mode = null) {
  const tmp = writeTemp(target, data);
  try {
    if (mode !== null) fs.chmodSync(tmp, mode);
    fs.renameSync(tmp, target);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw e;
  }
  fsyncDir(path.dirname(target));
}

/**
 * Make `folder` and its missing parents (as `mkdir -p`), then run `write`; when either
 * throws, the folders this call made are removed again (deepest first, each only while
 * empty: a folder another process made meanwhile, or put something in, is left), as the
 * Python writers' make_folders and failures_named do. Returns what `write` returns.
 * @template T
 * @param {string} folder
 * @param {() => T} write
 * @returns {T}
 */
function inFolder(folder, write) {
  /** @type {string[]} */
  const missing = [];
  for (let part = folder; entryKind(part) !== "folder"; part = path.dirname(part)) {
    missing.push(part);
    if (path.dirname(part) === part) break;
  }
  /** @type {string[]} */
  const made = [];
  try {
    for (const part of missing.reverse()) {
      try {
        fs.mkdirSync(part);
      } catch (e) {
        if (/** @type {NodeJS.ErrnoException} */ (e).code === "EEXIST" && entryKind(part) === "folder") continue;
        throw e;
      }
      made.unshift(part);
    }
    return write();
  } catch (e) {
    for (const part of made) {
      try {
        fs.rmdirSync(part);
      } catch {
        // not empty (something was put there meanwhile) or gone: left as it is
      }
    }
    throw e;
  }
}

/**
 * Throw Refused(`rule`) when `resultsDir` is, or sits under, something that is not a folder
 * (a file, or a link to nothing): the first of it and its parents that exists decides, as
 * the Python writers' `check_folder` does. Creates nothing; called before the folder is made.
 * @param {string} resultsDir
 * @param {string} rule
 */
function checkFolder(resultsDir, rule) {
  /** @type {NodeJS.ErrnoException | null} */
  let tooLong = null;
  for (let part = resultsDir; ; part = path.dirname(part)) {
    const kind = entryKind(part);
    if (kind === "folder") break;
    if (kind === "other") {
      const where = part === resultsDir ? "is" : `sits under ${part}, which is`;
      throw Refused.one(rule, ["results_dir"],
        `results_dir ${resultsDir} ${where} ${kindOf(part)}, not a folder; give a folder (it is made when missing)`);
    }
    const name = path.basename(part);
    const size = Buffer.byteLength(name, "utf8");
    if (size > NAME_MAX) { // the outermost such name is named, as Python does
      const shown = [...name].length <= 40 ? name : `${[...name].slice(0, 40).join("")}...`;
      tooLong = /** @type {NodeJS.ErrnoException} */ (new Error(
        `results_dir ${resultsDir}: the name ${shown} is ${size} bytes, longer than the filesystem allows (${NAME_MAX}); give a shorter name (nothing was made)`));
      tooLong.code = "ENAMETOOLONG";
    }
    if (path.dirname(part) === part) break;
  }
  if (tooLong !== null) throw tooLong;
}

/** The longest file name in bytes (ext4, XFS, Btrfs, APFS, NTFS); Node cannot ask pathconf. */
const NAME_MAX = 255;

/**
 * What `p`, which is no folder, is, in the Python writers' words.
 * @param {string} p
 */
function kindOf(p) {
  let link;
  try {
    link = fs.lstatSync(p);
  } catch {
    return "not a folder";
  }
  if (link.isSymbolicLink()) {
    try {
      return fs.statSync(p).isFile() ? "a link to a file" : "a link to something not a folder";
    } catch (e) {
      return /** @type {NodeJS.ErrnoException} */ (e).code === "ELOOP" ? "a link loop" : "a link to nothing";
    }
  }
  return link.isFile() ? "a file" : "a special file (a FIFO, a socket or a device)";
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
    if (code !== "ENOENT" && code !== "ENOTDIR" && code !== "ELOOP" && code !== "ENAMETOOLONG") throw e;
  }
  try {
    // made meanwhile by a racing writer (stat said ENOENT): a folder is a folder
    return fs.lstatSync(p).isDirectory() ? "folder" : "other";
  } catch {
    return "none";
  }
}

/** The largest file each reader reads (spec/README.md, Foundry: witness 1 MiB, metrics 256 MiB). */
const MAX_BYTES = { witness: 1 << 20, metrics: 256 << 20 };

/**
 * The bytes of `file` when it is a regular file (a link to one counts) of at most
 * MAX_BYTES[kind]; else Refused `<kind>.file.regular`. A FIFO is opened without blocking
 * and never read; a device is never read.
 * @param {string} file
 * @param {"witness" | "metrics"} kind
 * @returns {Buffer}
 */
function readRegular(file, kind) {
  const rule = `${kind}.file.regular`;
  const limit = MAX_BYTES[kind];
  const fd = fs.openSync(file, fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0));
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) {
      const what = st.isDirectory() ? "a folder" : st.isFIFO() ? "a FIFO (named pipe)" : st.isSocket() ? "a socket" : "a device";
      throw Refused.one(rule, [], `${path.basename(file)} is ${what}, not a regular file; a ${kind} record is a file (nothing was read)`);
    }
    /** @type {Buffer[]} */
    const chunks = [];
    let size = 0;
    while (size <= limit) {
      const chunk = Buffer.alloc(Math.min(1 << 20, limit + 1 - size));
      const n = fs.readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      chunks.push(chunk.subarray(0, n));
      size += n;
    }
    if (size > limit) {
      throw Refused.one(rule, [], `${path.basename(file)} is larger than ${limit >> 20} MiB, more than any ${kind} record holds; it was not read past that`);
    }
    return Buffer.concat(chunks);
  } finally {
    fs.closeSync(fd);
  }
}

module.exports = { createNew, replace, writeTemp, fsyncDir, checkFolder, inFolder, readRegular };
