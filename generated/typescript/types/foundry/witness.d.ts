/* DO NOT EDIT: generated from spec/schemas/foundry/witness.schema.json by `make generate` (tools/generate_typescript.py).
 * Change the source and run the command again; CI fails when this file drifts. */

/**
 * Foundry run records v1: the witness observed.attempt<N>.json for restart attempt N. It has exactly these ten fields, no more and no fewer.
 */
export interface FoundryWitness {
  /**
   * The restart attempt, read from SLURM_RESTART_COUNT, or 0 when that variable is unset. Never negative.
   */
  attempt: number;
  /**
   * When the witness was written, in Coordinated Universal Time, as datetime.now(timezone.utc).isoformat() writes it: YYYY-MM-DDTHH:MM:SS of a real date (years 0001 to 9999, 29 February only in a leap year), six fraction digits only when the microsecond is not zero (never .000000), and the offset +00:00. A time without an offset, or with Z, is refused: it does not say it is UTC the way isoformat() writes it.
   */
  captured_at: string;
  /**
   * The first 16 lowercase hexadecimal characters of the SHA-256 of json.dumps(config, sort_keys=True), the configuration as the process loaded it after overrides.
   */
  config_sha: string;
  /**
   * OMP_NUM_THREADS when it is set, otherwise the number of CPUs this process may run on; null only when that number cannot be determined. At least 1.
   */
  cpu_threads: number | null;
  /**
   * The device the run requested, such as cpu, cuda, cuda:1 or mps. Not blank (it has a character other than white space).
   */
  device: string;
  /**
   * The accelerator's name as PyTorch reports it; null on the CPU and when PyTorch reports no name for the device (mps, or an accelerator that was not available).
   */
  device_name: string | null;
  /**
   * The run id the launcher supplied in FOUNDRY_RUN_ID: an integer, which may be zero or negative.
   */
  experiment_id: number;
  /**
   * Peak accelerator memory allocated by PyTorch, in whole mebibytes (bytes divided by 1048576, rounded down); null on the CPU and when PyTorch reports no peak for the device.
   */
  peak_vram_mb: number | null;
  /**
   * The format version: the integer 1 for version 1 (not 1.0, not "1"). A reader inspects it before anything else and refuses versions it does not understand.
   */
  run_record_format: 1;
  /**
   * Elapsed whole seconds of the run, supplied by the training entry point. Never negative.
   */
  wall_seconds: number;
}
