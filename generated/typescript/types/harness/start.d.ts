/* DO NOT EDIT: generated from spec/schemas/harness/start.schema.json by `make generate` (tools/generate_typescript.py).
 * Change the source and run the command again; CI fails when this file drifts. */

/**
 * Conformance harness protocol, first message from the suite: one JSON object on one line of the harness's standard input. The harness answers with a HarnessStartResponse.
 */
export interface HarnessStartRequest {
  /**
   * Always "start".
   */
  cmd: "start";
  /**
   * The protocol version the suite speaks: 1.
   */
  version: 1;
}
