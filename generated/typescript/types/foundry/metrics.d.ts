/* DO NOT EDIT: generated from spec/schemas/foundry/metrics.schema.json by `make generate` (tools/generate_typescript.py).
 * Change the source and run the command again; CI fails when this file drifts. */

/**
 * Foundry run records v1: metrics.json, a non-empty array with one object per reported number.
 *
 * @minItems 1
 */
export type FoundryMetrics = [FoundryMetricsRow, ...FoundryMetricsRow[]];

/**
 * One reported number. Every row has exactly these five fields.
 */
export interface FoundryMetricsRow {
  /**
   * The benchmark or dataset name. Text that is not blank (it has a character other than white space).
   */
  benchmark: string;
  /**
   * The metric name. Text that is not blank.
   */
  metric: string;
  /**
   * The forecast horizon: an integer, zero or greater. A boolean or a number written with a fraction (1.0) is not an integer.
   */
  horizon: number;
  /**
   * The random seed: an integer, zero or greater.
   */
  seed: number;
  /**
   * The metric value: a finite number. Booleans, infinity and not-a-number are invalid, and so is an integer too large for a 64-bit float (such as 10**400: its nearest double is infinite).
   */
  value: number;
}
