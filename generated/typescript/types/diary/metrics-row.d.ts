/* DO NOT EDIT: generated from spec/schemas/diary/metrics-row.schema.json by `make generate` (tools/generate_typescript.py).
 * Change the source and run the command again; CI fails when this file drifts. */

/**
 * One row of metrics.jsonl: what one check measured. One JSON object per line; rows may carry more fields, which readers ignore.
 */
export interface DiaryMetricsRow {
  /**
   * The optimizer step of the check, counting from 0.
   */
  step: number;
  /**
   * The loss at the check: a finite number, one of "NaN", "Infinity", "-Infinity", or null when step() was given no loss.
   */
  loss: number | ("NaN" | "Infinity" | "-Infinity") | null;
  /**
   * The gradient norm per layer at the check: a non-negative number, or "NaN"/"Infinity" when the gradient was not finite (a norm is never negative: "-Infinity" is refused), or null when the layer got no gradient.
   */
  grad: {
    [k: string]: number | "NaN" | "Infinity" | null;
  };
  /**
   * Per producer layer, the stuck-channel counts [certified, constant, silent, decayed].
   */
  stuck: {
    /**
     * @minItems 4
     * @maxItems 4
     */
    [k: string]: [number, number, number, number];
  };
  [k: string]: unknown;
}
