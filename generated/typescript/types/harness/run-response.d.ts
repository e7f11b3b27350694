/* DO NOT EDIT: generated from spec/schemas/harness/run-response.schema.json by `make generate` (tools/generate_typescript.py).
 * Change the source and run the command again; CI fails when this file drifts. */

/**
 * Conformance harness protocol: the harness's answer to one run. outcome ok carries output; refused means the implementation refused the input on purpose and names the rules it broke; error means the implementation failed (the suite reports an error, not a rule failure); unsupported means the operation is not implemented.
 */
export interface HarnessRunResponse {
  /**
   * The seq of the run this answers.
   */
  seq: number;
  /**
   * ok, refused, error or unsupported.
   */
  outcome: "ok" | "refused" | "error" | "unsupported";
  /**
   * With ok: the operation's result (see $defs).
   */
  output?: {
    [k: string]: unknown;
  };
  /**
   * With refused: the rule ids broken, e.g. metrics.horizon.type.
   */
  rules?: string[];
  /**
   * With refused or error: what went wrong, for people.
   */
  message?: string;
}
