/* DO NOT EDIT: generated from spec/schemas/harness/run.schema.json by `make generate` (tools/generate_typescript.py).
 * Change the source and run the command again; CI fails when this file drifts. */

/**
 * Conformance harness protocol: one operation for the harness to perform, one JSON object on one line. The harness answers each run with exactly one HarnessRunResponse carrying the same seq, in order. Paths in inputs are absolute paths to folders and files the suite created for this run.
 */
export interface HarnessRunRequest {
  /**
   * Always "run".
   */
  cmd: "run";
  /**
   * A number the suite gives each run; the response repeats it.
   */
  seq: number;
  /**
   * The operation: validate (an instance against a schema), line_hash (diary canonical JSON and hash), config_hash (Foundry config hash), write_witness, write_metrics, read_witness, write_diary, verify_diary, send_report, read_metrics, build_report, report_status, load_settings, keygen, load_key, seal, report_job, append_diary, architecture, open_run (start or resume a run folder: its run_id), serve (start a reporting receiver in the harness's process).
   */
  op:
    | "validate"
    | "line_hash"
    | "config_hash"
    | "write_witness"
    | "write_metrics"
    | "read_witness"
    | "write_diary"
    | "verify_diary"
    | "send_report"
    | "read_metrics"
    | "build_report"
    | "report_status"
    | "load_settings"
    | "keygen"
    | "load_key"
    | "seal"
    | "report_job"
    | "append_diary"
    | "architecture"
    | "open_run"
    | "serve";
  /**
   * The operation's input; its shape depends on op (see $defs).
   */
  input: {
    [k: string]: unknown;
  };
}
