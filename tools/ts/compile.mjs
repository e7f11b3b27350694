// Compile JSON Schemas to TypeScript declarations with json-schema-to-typescript (pinned in
// package-lock.json). Called by tools/generate_typescript.py; not meant to be run by hand.
//
// usage: node compile.mjs <schemas root> <out dir> <banner file> <rel path>...
// Each <rel path> (e.g. foundry/witness.schema.json) becomes <out dir>/foundry/witness.d.ts.
// $refs to https://trainrecord.dev/schemas/... are read from <schemas root>, never fetched.
import { readFile, writeFile, mkdir } from "node:fs/promises";
import path from "node:path";
import { compile } from "json-schema-to-typescript";

const ID_PREFIX = "https://trainrecord.dev/schemas/";
const [root, outDir, bannerFile, ...rels] = process.argv.slice(2);
const banner = (await readFile(bannerFile, "utf8")).trimEnd();

const localResolver = {
  order: 1,
  canRead: (file) => file.url.startsWith(ID_PREFIX),
  read: async (file) =>
    JSON.stringify(typeView(JSON.parse(await readFile(path.join(root, file.url.slice(ID_PREFIX.length).split("#")[0]), "utf8")))),
};
// Relative $refs (events/manifest.schema.json) are read here too, so they get the same
// type-level view as the schema that refers to them.
const fileResolver = {
  order: 2,
  canRead: (file) => !/^[a-z][a-z0-9+.-]*:\/\//i.test(file.url) || file.url.startsWith("file://"),
  read: async (file) => {
    const where = decodeURIComponent(file.url.replace(/^file:\/\//, "").split("#")[0]);
    return JSON.stringify(typeView(JSON.parse(await readFile(where, "utf8"))));
  },
};

// Keywords that only narrow a value without changing its TypeScript type.
const ASSERTIONS = new Set([
  "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
  "exclusiveMaximum", "multipleOf", "minItems", "maxItems", "uniqueItems", "description",
  "title", "$comment",
]);
const onlyAssertions = (branch) =>
  branch !== null && typeof branch === "object" &&
  Object.keys(branch).every((k) => ASSERTIONS.has(k) || k.startsWith("x-"));

// Type-level view of a schema. json-schema-to-typescript turns an anyOf of pure assertions
// (e.g. two length+pattern alternatives of a string) into `{[k: string]: unknown} & string`;
// such a combinator does not change the type, so it is dropped here. An integer pinned by
// minimum == maximum is that one literal. The validators still see the full schema.
function typeView(node) {
  if (Array.isArray(node)) return node.map(typeView);
  if (node === null || typeof node !== "object") return node;
  const out = {};
  for (const [k, v] of Object.entries(node)) {
    if ((k === "anyOf" || k === "oneOf" || k === "allOf") && Array.isArray(v) && v.every(onlyAssertions)) continue;
    if (k === "x-rules") continue; // rule ids: nothing to type (json-schema-to-typescript would walk them as keywords)
    out[k] = k === "const" || k === "enum" || k === "default" || k === "examples" ? v : typeView(v);
  }
  if (out.type === "integer" && typeof out.minimum === "number" && out.minimum === out.maximum) {
    out.const = out.minimum;
  }
  return out;
}

for (const rel of rels) {
  const file = path.join(root, rel);
  const schema = typeView(JSON.parse(await readFile(file, "utf8")));
  const ts = await compile(schema, schema.title ?? path.basename(rel), {
    bannerComment: banner.replace("{source}", `spec/schemas/${rel}`),
    cwd: path.dirname(file),
    additionalProperties: true,
    declareExternallyReferenced: true,
    unreachableDefinitions: false,
    strictIndexSignatures: false,
    unknownAny: true,
    format: true,
    style: { printWidth: 100, singleQuote: false, trailingComma: "all", tabWidth: 2 },
    $refOptions: { resolve: { trainrecord: localResolver, file: fileResolver, http: false, https: false } },
  });
  const target = path.join(outDir, rel.replace(/\.schema\.json$/, ".d.ts"));
  await mkdir(path.dirname(target), { recursive: true });
  await writeFile(target, ts, "utf8");
}
