/* DO NOT EDIT: generated from spec/schemas/harness/start-response.schema.json by `make generate` (tools/generate_typescript.py).
 * Change the source and run the command again; CI fails when this file drifts. */

/**
 * Conformance harness protocol: the harness's answer to start, one JSON object on one line of its standard output. It says who the implementation is and which operations it supports; the suite reports every rule whose operations are missing as skipped.
 */
export interface HarnessStartResponse {
  /**
   * The protocol version the harness speaks: 1.
   */
  version: 1;
  /**
   * Who answers: shown in the suite's report.
   */
  implementation: {
    /**
     * The implementation's name, e.g. trainrecord.
     */
    name: string;
    /**
     * The language it is written in, e.g. python or javascript.
     */
    language: string;
    /**
     * The implementation's version, when it has one.
     */
    version?: string | null;
  };
  /**
   * The operations the harness supports (see HarnessRunRequest.op). Operations not listed are never sent; their rules are reported as skipped. Each operation once.
   */
  operations: (
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
    | "serve"
  )[];
}
