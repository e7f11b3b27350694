/* DO NOT EDIT: generated from spec/schemas/harness/stop.schema.json by `make generate` (tools/generate_typescript.py).
 * Change the source and run the command again; CI fails when this file drifts. */

/**
 * Conformance harness protocol, last message from the suite. The harness answers with a HarnessStopResponse and exits with status 0.
 */
export interface HarnessStopRequest {
  /**
   * Always "stop".
   */
  cmd: "stop";
}
