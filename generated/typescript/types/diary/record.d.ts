/* DO NOT EDIT: generated from spec/schemas/diary/record.schema.json by `make generate` (tools/generate_typescript.py).
 * Change the source and run the command again; CI fails when this file drifts. */

/**
 * record.json, the seal of a training record: it pins the diary as it stood when sealed (line count, head seq and hash, SHA-256 and size) and metrics.jsonl, so that a cut tail or an appended line fails verification even though the chain links alone cannot show a cut tail. record.sig, when present, is the detached Ed25519 signature over the exact bytes of this file. Fields a reader does not know are ignored, here and in its objects (the seed: "Readers should ignore fields they do not know"); every field it names is checked.
 */
export interface DiaryRecordSeal {
  /**
   * The record format version the sealed diary follows; 1. A verifier refuses a version it does not know.
   */
  record_version: 1;
  /**
   * What wrote the seal and its version, e.g. "trainrecord 0.1.0".
   */
  sealed_by: string;
  /**
   * Unix time in seconds when the seal was written, rounded to milliseconds.
   */
  sealed_at: number;
  /**
   * What the seal pins of diary.jsonl.
   */
  diary: {
    /**
     * Always "diary.jsonl".
     */
    file: "diary.jsonl";
    /**
     * SHA-256 of the whole file.
     */
    sha256: string;
    /**
     * The file's size in bytes.
     */
    bytes: number;
    /**
     * How many lines the diary has (at least 1: a seal of an empty diary is refused).
     */
    lines: number;
    /**
     * The seq of the last line: lines - 1.
     */
    head_seq: number;
    /**
     * The hash of the last line (the chain head).
     */
    head_hash: string;
    [k: string]: unknown;
  };
  /**
   * What the seal pins of metrics.jsonl, or null when the run has no metrics file.
   */
  metrics: {
    /**
     * Always "metrics.jsonl".
     */
    file: "metrics.jsonl";
    /**
     * SHA-256 of the whole file.
     */
    sha256: string;
    /**
     * The file's size in bytes.
     */
    bytes: number;
    /**
     * How many rows (lines) the file has.
     */
    rows: number;
    [k: string]: unknown;
  } | null;
  /**
   * The signature record.sig, or null when the record is not signed.
   */
  signature: {
    /**
     * Always "ed25519".
     */
    algorithm: "ed25519";
    /**
     * Always "record.sig": the detached signature over the exact bytes of record.json, base64 on one line.
     */
    file: "record.sig";
    /**
     * The signer's public key fingerprint: SHA-256 of the raw 32-byte Ed25519 public key.
     */
    public_key_sha256: string;
    [k: string]: unknown;
  } | null;
  [k: string]: unknown;
}
