// @ts-check
/** Refused input: one error carrying every problem, each with its rule id (like RecordRefused). */
"use strict";

/** @typedef {{rule: string, path: (string|number)[], message: string}} Problem */

class Refused extends Error {
  /** @param {Problem[]} problems */
  constructor(problems) {
    super(problems.map((p) => `${p.rule}: ${p.message}`).join("; "));
    this.problems = problems;
  }

  /**
   * @param {string} rule
   * @param {(string|number)[]} where
   * @param {string} message
   */
  static one(rule, where, message) {
    return new Refused([{ rule, path: where, message }]);
  }
}

module.exports = { Refused };
