// @ts-check
/**
 * Validate an instance against the trainrecord schemas with ajv (draft 2020-12 build),
 * giving the same verdict and rule ids as the Python oracle (runtime/trainrecord/schemas.py).
 *
 * Three things differ between ajv on plain JavaScript values and the oracle, and are
 * bridged here (docs/harness-guide.md, section 5, "Details from the Node implementation"):
 *
 * - integer means an integer token: `3.0` is a float and not an integer. JSON.parse loses
 *   that, so instances come from pyjson.parse (ints as BigInt, floats as number); the schemas
 *   are rewritten so that `"type": "integer"` becomes `"type": "number"` plus the keyword
 *   `x-tr-integer`, which fails on a value that was written as a float;
 * - regular expressions are Python's `re` (search semantics, Unicode \s \d \w, `$` also
 *   matching before a final newline); patterns are translated to JavaScript equivalents;
 * - rule ids come from the `x-rules` annotation of the subschema where the error arose,
 *   descending into anyOf/oneOf branches unless the combinator itself names a rule; a oneOf
 *   with a `discriminator` reports only the branch the instance selects (keyword
 *   `x-tr-oneof`, which replaces it).
 */
"use strict";

const Ajv2020 = require("ajv/dist/2020").default;
const spec = require("@trainrecord/spec");

/** @typedef {import("./pyjson").PyValue} PyValue */
/** @typedef {{rule: string, path: (string|number)[], message: string}} Problem */

const INTEGER_KEYWORD = "x-tr-integer";
const FINITE_KEYWORD = "x-tr-finite";
const PY_SPACE = "\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";

/**
 * A Python `re` pattern as an equivalent JavaScript pattern (for the `u` flag).
 * @param {string} pattern
 * @returns {string}
 */
function translatePattern(pattern) {
  let out = "";
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "\\") {
      const n = pattern[i + 1];
      i++;
      if (n === "s") out += inClass ? PY_SPACE : `[${PY_SPACE}]`;
      else if (n === "S") out += inClass ? "\\S" : `[^${PY_SPACE}]`;
      else if (n === "d") out += "\\p{Nd}";
      else if (n === "D") out += inClass ? "\\D" : "\\P{Nd}";
      else if (n === "w") out += inClass ? "\\p{L}\\p{N}_" : "[\\p{L}\\p{N}_]";
      else if (n === "W") out += inClass ? "\\W" : "[^\\p{L}\\p{N}_]";
      else if (n === "Z") out += "$";
      else if (n === "A") out += "^";
      else out += `\\${n ?? ""}`;
      continue;
    }
    if (inClass) {
      if (c === "]") inClass = false;
      out += c;
    } else if (c === "[") {
      inClass = true;
      out += c;
      if (pattern[i + 1] === "^") out += pattern[++i];
      if (pattern[i + 1] === "]") out += `\\${pattern[++i]}`;
    } else if (c === "$") {
      out += "(?=\\n?$)"; // Python's $ also matches just before a trailing newline
    } else out += c;
  }
  return out;
}

/** Keywords whose value is a map from names to subschemas. */
const SCHEMA_MAPS = new Set(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]);
/** Keywords whose value is data or an annotation, never a subschema. */
const DATA = new Set(["const", "enum", "default", "examples", "required", "discriminator"]);

const ONE_OF_KEYWORD = "x-tr-oneof";

/**
 * The schema with integer types rewritten (see the module comment), and each `oneOf` that
 * carries a `discriminator` (of `$ref` branches) replaced by the keyword `x-tr-oneof`,
 * which reports the errors of the branch the discriminator selects, as the oracle does.
 * @param {any} node
 * @param {string} base the base URI (the root schema's $id) for relative $refs
 * @param {boolean} [isMap] node is a map from names to subschemas (e.g. properties)
 * @returns {any}
 */
function rewrite(node, base, isMap = false) {
  if (Array.isArray(node)) return node.map((v) => rewrite(v, base));
  if (node === null || typeof node !== "object") return node;
  /** @type {Record<string, any>} */
  const out = {};
  for (const [k, v] of Object.entries(node)) {
    if (isMap) out[k] = rewrite(v, base);
    else if (DATA.has(k) || k.startsWith("x-")) out[k] = v;
    else out[k] = rewrite(v, base, SCHEMA_MAPS.has(k));
  }
  if (isMap) return out;
  const prop = out.discriminator?.propertyName;
  if (typeof prop === "string" && Array.isArray(out.oneOf) &&
      out.oneOf.every((/** @type {any} */ b) => b && typeof b.$ref === "string" && Object.keys(b).length === 1)) {
    out[ONE_OF_KEYWORD] = { propertyName: prop, refs: out.oneOf.map((/** @type {any} */ b) => new URL(b.$ref, base).href) };
    delete out.oneOf;
  }
  const types = typeof out.type === "string" ? [out.type] : out.type;
  // an integer beyond a double is an integer of any size, but not a finite number
  if (Array.isArray(types) && types.includes("number")) out[FINITE_KEYWORD] = true;
  if (Array.isArray(types) && types.includes("integer")) {
    const rest = types.filter((t) => t !== "integer");
    if (!rest.includes("number")) {
      rest.push("number");
      out[INTEGER_KEYWORD] = true;
    }
    out.type = rest.length === 1 ? rest[0] : rest;
  }
  return out;
}

/** Float positions of the instance being validated: container -> keys holding floats. */
let floatSlots = new WeakMap();
let rootIsFloat = false;
/** Positions holding an integer whose nearest double is infinite (given to ajv as the
 * largest double of its sign): an integer of any size, but not a finite number. */
let hugeSlots = new WeakMap();
let rootIsHuge = false;
/** @param {bigint} v */
const isHuge = (v) => !Number.isFinite(Number(v));

/**
 * A PyValue as plain JavaScript data for ajv: BigInt to number, and a record of which
 * slots hold floats.
 * @param {PyValue} value
 * @returns {any}
 */
function toPlain(value) {
  floatSlots = new WeakMap();
  hugeSlots = new WeakMap();
  rootIsFloat = typeof value === "number";
  rootIsHuge = typeof value === "bigint" && isHuge(value);
  /** @param {PyValue} v @returns {any} */
  const walk = (v) => {
    if (typeof v === "bigint") return isHuge(v) ? (v < 0n ? -Number.MAX_VALUE : Number.MAX_VALUE) : Number(v);
    if (Array.isArray(v)) {
      const arr = v.map(walk);
      const keys = new Set();
      const huge = new Set();
      v.forEach((x, i) => typeof x === "number" && keys.add(String(i)));
      v.forEach((x, i) => typeof x === "bigint" && isHuge(x) && huge.add(String(i)));
      floatSlots.set(arr, keys);
      hugeSlots.set(arr, huge);
      return arr;
    }
    if (v !== null && typeof v === "object") {
      /** @type {Record<string, any>} */
      const obj = {};
      const keys = new Set();
      const huge = new Set();
      for (const [k, x] of Object.entries(v)) {
        Object.defineProperty(obj, k, { value: walk(x), writable: true, enumerable: true, configurable: true });
        if (typeof x === "number") keys.add(k);
        if (typeof x === "bigint" && isHuge(x)) huge.add(k);
      }
      floatSlots.set(obj, keys);
      hugeSlots.set(obj, huge);
      return obj;
    }
    return v;
  };
  return walk(value);
}

const ajv = new Ajv2020({
  allErrors: true,
  verbose: true,
  strict: false,
  strictNumbers: true,
  validateFormats: true,
  code: {
    regExp: /** @type {any} */ ((/** @type {string} */ p, /** @type {string} */ flags) =>
      new RegExp(translatePattern(p), flags.includes("u") ? flags : `${flags}u`)),
  },
});
ajv.addKeyword({
  keyword: INTEGER_KEYWORD,
  type: "number",
  schemaType: "boolean",
  errors: false,
  validate: (/** @type {boolean} */ _s, /** @type {number} */ _data, /** @type {any} */ _p, /** @type {any} */ cxt) => {
    if (cxt === undefined || cxt.parentData === undefined) return !rootIsFloat;
    return !floatSlots.get(cxt.parentData)?.has(String(cxt.parentDataProperty));
  },
});
ajv.addKeyword({
  keyword: FINITE_KEYWORD,
  type: "number",
  schemaType: "boolean",
  errors: false,
  validate: (/** @type {boolean} */ _s, /** @type {number} */ _data, /** @type {any} */ _p, /** @type {any} */ cxt) => {
    if (cxt === undefined || cxt.parentData === undefined) return !rootIsHuge;
    return !hugeSlots.get(cxt.parentData)?.has(String(cxt.parentDataProperty));
  },
});

/** @type {Map<string, import("ajv").ValidateFunction>} */
const refValidators = new Map();

/** @param {string} ref an absolute schema URI with an optional #pointer */
function refValidator(ref) {
  let fn = refValidators.get(ref);
  if (fn === undefined) {
    fn = ajv.compile({ $ref: ref });
    refValidators.set(ref, fn);
  }
  return fn;
}

/** @param {string} key */
const pointerEscape = (key) => key.replace(/~/g, "~0").replace(/\//g, "~1");

/**
 * oneOf over $ref branches, judged as the oracle does when a discriminator names a property:
 * a branch whose errors include one at that property is set aside, and the errors of the
 * remaining branches (all branches when every one fails there) are the errors reported.
 * @type {any}
 */
const discriminatedOneOf = function (/** @type {any} */ schema, /** @type {any} */ data, /** @type {any} */ parentSchema, /** @type {any} */ cxt) {
  const results = schema.refs.map((/** @type {string} */ ref) => {
    const fn = refValidator(ref);
    const ok = fn(data);
    return { ok, errors: ok ? [] : [...(fn.errors ?? [])] };
  });
  const passing = results.filter((/** @type {any} */ r) => r.ok).length;
  if (passing === 1) return true;
  const here = cxt?.instancePath ?? "";
  const oneOfError = { keyword: "oneOf", instancePath: here, schemaPath: "#/oneOf", params: { passingSchemas: passing > 1 ? [] : null }, message: "must match exactly one schema in oneOf", parentSchema };
  if (passing > 1 || parentSchema["x-rules"]?.oneOf) {
    discriminatedOneOf.errors = [oneOfError];
    return false;
  }
  const at = `/${pointerEscape(schema.propertyName)}`;
  const isObj = data !== null && typeof data === "object" && !Array.isArray(data);
  let kept = results.filter((/** @type {any} */ r) => !(isObj && r.errors.some((/** @type {any} */ e) => e.instancePath === at)));
  if (kept.length === 0) kept = results;
  let errors = kept.flatMap((/** @type {any} */ r) => r.errors);
  if (isObj) {
    // No branch selected (as the oracle, spec/README.md "Reporting API v2"): an unknown value
    // is one problem naming every accepted value, a missing property its `required` errors,
    // listed first; then only the problems every branch reports (a common field missing):
    // one branch's own fields are no problem of an instance of no branch.
    const prop = schema.propertyName;
    const atConst = (/** @type {any} */ e) => e.keyword === "const" && e.instancePath === at;
    const lacks = (/** @type {any} */ e) => e.keyword === "required" && e.instancePath === "" && e.params?.missingProperty === prop;
    const keyOf = (/** @type {any} */ e) => `${e.instancePath}\u0000${e.keyword}\u0000${JSON.stringify(e.params)}`;
    const inEvery = () => {
      const sets = kept.map((/** @type {any} */ r) => new Set(r.errors.map(keyOf)));
      return kept[0].errors.filter((/** @type {any} */ e) => sets.every((/** @type {Set<string>} */ k) => k.has(keyOf(e))));
    };
    const consts = errors.filter(atConst);
    if (consts.length >= 2) {
      const values = [...new Set(consts.map((/** @type {any} */ e) => String(e.params?.allowedValue)))].join(", ");
      errors = [{ ...consts[0], message: `${prop} must be one of ${values}` }, ...inEvery().filter((/** @type {any} */ e) => !atConst(e))];
    } else if (!Object.prototype.hasOwnProperty.call(data, prop)) {
      const common = inEvery();
      errors = [...common.filter(lacks), ...common.filter((/** @type {any} */ e) => !lacks(e))];
    }
  }
  discriminatedOneOf.errors = errors.map((/** @type {any} */ e) => ({ ...e, instancePath: here + e.instancePath }));
  return false;
};

ajv.addKeyword({ keyword: ONE_OF_KEYWORD, schemaType: "object", errors: true, validate: discriminatedOneOf });

/** @type {Map<string, any>} */
const schemas = new Map();
for (const id of spec.schemaIds) {
  const schema = rewrite(spec.loadSchema(id), id);
  schemas.set(id, schema);
  ajv.addSchema(schema, id);
}

/** The `$id` of every schema, by its x-format name (formats shared by several: the first). */
const byFormat = new Map();
for (const [id, schema] of schemas) {
  if (typeof schema["x-format"] === "string" && !byFormat.has(schema["x-format"])) {
    byFormat.set(schema["x-format"], id);
  }
}

/** @type {Map<string, import("ajv").ValidateFunction>} */
const pointers = new Map();

/**
 * A validator for a part of a schema, `<$id>#<JSON pointer>` (e.g. a oneOf branch).
 * @param {string} pointer
 */
function compiledPointer(pointer) {
  let fn = pointers.get(pointer);
  if (fn === undefined) {
    fn = ajv.compile({ $ref: throughOneOf(pointer) });
    pointers.set(pointer, fn);
  }
  return fn;
}

/**
 * A pointer into a schema whose discriminated oneOf was rewritten (`#/oneOf/<k>/...`),
 * as a reference to the branch itself.
 * @param {string} pointer `<$id>#<JSON pointer>`
 * @returns {string}
 */
function throughOneOf(pointer) {
  const [base, fragment = ""] = pointer.split("#", 2);
  const parts = fragment.split("/").slice(1);
  let node = schemas.get(/** @type {string} */ (base));
  for (let i = 0; i < parts.length && node; i++) {
    const seg = /** @type {string} */ (parts[i]).replace(/~1/g, "/").replace(/~0/g, "~");
    if (seg === "oneOf" && node[ONE_OF_KEYWORD] && i + 1 < parts.length) {
      const ref = node[ONE_OF_KEYWORD].refs[Number(parts[i + 1])];
      const rest = parts.slice(i + 2);
      if (rest.length === 0) return ref;
      return throughOneOf(`${ref}${ref.includes("#") ? "" : "#"}/${rest.join("/")}`);
    }
    node = node[seg];
  }
  return pointer;
}

/**
 * The schema `$id` for an `$id`, a path under schemas/ or an x-format name.
 * @param {string} name
 * @returns {string}
 */
function resolveSchema(name) {
  if (schemas.has(name)) return name;
  for (const id of schemas.keys()) if (id.endsWith(`/schemas/${name}`)) return id;
  const byName = byFormat.get(name);
  if (byName !== undefined) return byName;
  throw new Error(`unknown schema or format: ${name}`);
}

/**
 * The instance path of a JSON pointer: array indices as numbers, object keys as text.
 * @param {string} pointer
 * @param {any} data
 * @returns {(string|number)[]}
 */
function pathOf(pointer, data) {
  if (pointer === "") return [];
  /** @type {(string|number)[]} */
  const out = [];
  let node = data;
  for (const raw of pointer.slice(1).split("/")) {
    const key = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    const index = Array.isArray(node) ? Number(key) : key;
    out.push(index);
    node = node?.[index];
  }
  return out;
}

/**
 * Every problem of `instance` against the schema (by $id, path or format), with rule ids.
 * @param {PyValue} instance
 * @param {string} schemaName
 * @returns {Problem[]}
 */
function problems(instance, schemaName) {
  const [base, fragment] = schemaName.split("#", 2);
  const id = resolveSchema(/** @type {string} */ (base));
  const validate = fragment ? compiledPointer(`${id}#${fragment}`) : /** @type {import("ajv").ValidateFunction} */ (ajv.getSchema(id));
  const fallback = `${schemas.get(id)["x-format"] ?? "schema"}.schema`;
  const data = toPlain(instance);
  if (validate(data)) return [];
  const errors = validate.errors ?? [];
  /** @type {[string, string][]} combinators that name their rule: [instancePath, schemaPath] */
  const owned = [];
  for (const e of errors) {
    const rules = e.parentSchema?.["x-rules"];
    if ((e.keyword === "anyOf" || e.keyword === "oneOf") && rules && rules[e.keyword]) {
      owned.push([e.instancePath, e.schemaPath]);
    }
  }
  /** @type {Problem[]} */
  const found = [];
  for (const e of errors) {
    if (e.keyword === "if") continue; // the then/else branch errors carry the rule
    const rules = e.parentSchema?.["x-rules"] ?? {};
    const isCombinator = e.keyword === "anyOf" || e.keyword === "oneOf";
    const several = e.keyword === "oneOf" && /** @type {any} */ (e.params)?.passingSchemas;
    if (isCombinator && !rules[e.keyword] && !several) continue; // its branch errors carry the rules
    const inside = owned.some(([ip, sp]) =>
      e.schemaPath.startsWith(`${sp}/`) && (e.instancePath === ip || e.instancePath.startsWith(`${ip}/`)));
    if (inside) continue;
    const keyword = e.keyword === INTEGER_KEYWORD || e.keyword === FINITE_KEYWORD ? "type" : e.keyword;
    const rule = rules[keyword] ?? rules["*"] ?? fallback;
    const path = pathOf(e.instancePath, data);
    if (e.keyword === "required") path.push(/** @type {any} */ (e.params).missingProperty);
    if (e.keyword === "additionalProperties") path.push(/** @type {any} */ (e.params).additionalProperty);
    const integer = e.keyword === INTEGER_KEYWORD || (e.keyword === "type" && e.parentSchema?.[INTEGER_KEYWORD]);
    const message = integer ? "must be an integer (a number without a fraction or exponent)"
      : e.keyword === FINITE_KEYWORD ? "must be a finite number (this integer is too large for a 64-bit float)" : e.message ?? e.keyword;
    found.push({ rule, path, message });
  }
  // every branch of an unselected oneOf reports the same problem: each is listed once
  const seen = new Set();
  return found.filter((p) => {
    const key = JSON.stringify([p.rule, p.path, p.message]);
    return seen.has(key) ? false : (seen.add(key), true);
  });
}

const BLANK = new RegExp(`^[${PY_SPACE}]*$`, "u");

/**
 * Whether `text` is blank: empty or only white space as Unicode (Python's str.isspace, the
 * schemas' \s) defines it, a no-break space included.
 * @param {string} text
 */
const isBlank = (text) => BLANK.test(text);

module.exports = { problems, resolveSchema, translatePattern, isBlank, schemaIds: [...schemas.keys()], byFormat };
