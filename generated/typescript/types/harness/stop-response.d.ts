/* DO NOT EDIT: generated from spec/schemas/harness/stop-response.schema.json by `make generate` (tools/generate_typescript.py).
 * Change the source and run the command again; CI fails when this file drifts. */

/**
 * Conformance harness protocol: the harness's answer to stop, after which it exits with status 0.
 */
export interface HarnessStopResponse {
  /**
   * Always true.
   */
  stopped: true;
}
