/** A JSON value as Python's json.loads gives it: ints as BigInt (exact), floats as number. */
export type PyValue = null | boolean | bigint | number | string | PyValue[] | { [key: string]: PyValue };
