// @ts-check
/**
 * Python's round(), exactly: half to even, on the exact binary value of the double.
 *
 * JavaScript's Math.round rounds half up and Number.prototype.toFixed rounds ties away from
 * zero, so both differ from Python on exact ties (round(0.5) is 0, round(0.03125, 4) is
 * 0.0312). The reports' fraction and eta_seconds are Python round()s.
 */
"use strict";

/**
 * The double as an exact fraction: [numerator, power of two of the denominator].
 * @param {number} x a finite double
 * @returns {[bigint, bigint]} x = n / 2**d
 */
function exact(x) {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  const sign = bits >> 63n ? -1n : 1n;
  const exponent = Number((bits >> 52n) & 0x7ffn);
  const fraction = bits & 0xfffffffffffffn;
  const mantissa = exponent === 0 ? fraction : fraction | (1n << 52n);
  const power = (exponent === 0 ? 1 : exponent) - 1075; // x = mantissa * 2**power
  if (power >= 0) return [sign * (mantissa << BigInt(power)), 0n];
  return [sign * mantissa, BigInt(-power)];
}

/**
 * x * 10**ndigits rounded half to even, as an integer.
 * @param {number} x
 * @param {number} ndigits
 * @returns {bigint}
 */
function scaledHalfEven(x, ndigits) {
  if (!Number.isFinite(x)) throw new RangeError(`cannot round ${x}`);
  const [n, d] = exact(x);
  const num = n * 10n ** BigInt(ndigits);
  const den = 1n << d;
  const negative = num < 0n;
  const a = negative ? -num : num;
  let q = a / den;
  const twice = 2n * (a % den);
  if (twice > den || (twice === den && q % 2n === 1n)) q += 1n;
  return negative ? -q : q;
}

/**
 * round(x) in Python: the nearest integer, ties to even.
 * @param {number} x
 * @returns {bigint}
 */
const roundInt = (x) => scaledHalfEven(x, 0);

/**
 * round(x, ndigits) in Python: a float, the double nearest the rounded decimal.
 * @param {number} x
 * @param {number} ndigits at least 0
 * @returns {number}
 */
function roundTo(x, ndigits) {
  const q = scaledHalfEven(x, ndigits);
  const value = Number(`${q}e-${ndigits}`);
  return value === 0 && (x < 0 || Object.is(x, -0)) ? -0 : value;
}

module.exports = { roundInt, roundTo };
