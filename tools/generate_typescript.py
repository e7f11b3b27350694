"""Generate ``generated/typescript``: TypeScript declarations and an npm package from ``spec/``.

``tools/generate.py`` runs this with ``--out <dest>/typescript`` whenever it regenerates (so
``make generate`` and ``make check-generated`` cover it). It writes:

* ``types/<format>/<name>.d.ts``: one declaration file per schema, compiled by
  json-schema-to-typescript (pinned in ``tools/ts/package-lock.json``, run by Node);
* ``index.d.ts`` / ``index.js``: every record type re-exported, the ``RecordTypes`` map from
  schema ``$id`` to type, the discriminated unions on ``event`` (diary lines) and ``kind``
  (reports), and a small loader for the shipped schema files;
* ``schemas/``, ``vectors/``, ``rules/``, ``meta/``: copies of the spec files;
* ``package.json``: the installable ``@trainrecord/spec`` package.

The output is byte-identical on every run: sorted inputs, no timestamps, pinned formatter.
Node (>= 20) and npm are required; ``tools/ts/node_modules`` is installed with ``npm ci`` on
first use (``make ts-setup`` does the same).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "spec"
TS_TOOLS = Path(__file__).resolve().parent / "ts"
COMMAND = "make generate"
ID_PREFIX = "https://trainrecord.dev/schemas/"
DATA_DIRS = ("schemas", "vectors", "rules", "meta")
PACKAGE_NAME = "@trainrecord/spec"
DISCRIMINATORS = ("event", "kind")


def banner(source: str) -> str:
    """The DO NOT EDIT comment at the top of every generated TypeScript file."""
    return (
        f"/* DO NOT EDIT: generated from {source} by `{COMMAND}` (tools/generate_typescript.py).\n"
        " * Change the source and run the command again; CI fails when this file drifts. */\n"
    )


def ensure_tools() -> str:
    """Path of ``node``; installs the pinned npm tools with ``npm ci`` when they are missing."""
    node = shutil.which("node")
    npm = shutil.which("npm")
    if node is None or npm is None:
        sys.exit(
            "generate_typescript: node and npm (Node.js >= 20) are needed to generate "
            "generated/typescript; install Node.js, then run make ts-setup"
        )
    if not (TS_TOOLS / "node_modules" / "json-schema-to-typescript").is_dir():
        proc = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=TS_TOOLS,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            sys.exit(f"generate_typescript: npm ci in tools/ts failed:\n{proc.stderr}")
    return node


def schema_files() -> list[Path]:
    """Every schema file under spec/schemas, sorted, relative to it."""
    base = SPEC / "schemas"
    return sorted(p.relative_to(base) for p in base.rglob("*.schema.json"))


def declared_names(dts: str) -> list[str]:
    """Names a generated declaration file exports, in file order."""
    return re.findall(r"^export (?:type|interface|declare const|const|enum) (\w+)", dts, re.M)


def _const_of(schema: dict[str, Any], key: str) -> Any:
    prop = schema.get("properties", {}).get(key)
    if isinstance(prop, dict):
        if "const" in prop:
            return prop["const"]
        if isinstance(prop.get("enum"), list) and len(prop["enum"]) == 1:
            return prop["enum"][0]
    return None


def union_members(schema: dict[str, Any], key: str, rel: Path) -> list[tuple[Any, str, str]]:
    """The (discriminator value, type name, module) triples of a schema that is a union on ``key``.

    A schema (at ``rel`` under spec/schemas) is such a union when its ``oneOf``/``anyOf``
    lists references (local ``$defs`` or other schema files) or inline subschemas
    with titles, each fixing ``key`` with ``const`` (or a one-value ``enum``). Anything else
    gives an empty list.
    """
    for word in ("oneOf", "anyOf"):
        branches = schema.get(word)
        if not isinstance(branches, list) or not branches:
            continue
        found: list[tuple[Any, str, str]] = []
        for branch in branches:
            target, module = branch, module_of(rel)
            ref = branch.get("$ref") if isinstance(branch, dict) else None
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                target = schema.get("$defs", {}).get(ref.split("/")[-1], {})
            elif isinstance(ref, str) and "#" not in ref:
                other = (SPEC / "schemas" / rel).parent / ref
                if not other.is_file():
                    return []
                target = json.loads(other.read_text(encoding="utf-8"))
                module = module_of(other.resolve().relative_to((SPEC / "schemas").resolve()))
            value = _const_of(target, key) if isinstance(target, dict) else None
            title = target.get("title") if isinstance(target, dict) else None
            if value is None or not isinstance(title, str):
                return []
            found.append((value, title, module))
        return found
    return []


def module_of(rel: Path) -> str:
    """The module path, inside the package, of the declarations of the schema at ``rel``."""
    return "types/" + rel.as_posix().removesuffix(".schema.json")


def _ts_literal(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def index_dts(entries: list[dict[str, Any]]) -> str:
    """Source of ``index.d.ts``."""
    out = [banner("every schema in spec/schemas"), ""]
    exported: set[str] = set()
    for entry in entries:
        names = [n for n in entry["names"] if n not in exported]
        exported.update(names)
        if names:
            out.append(f'export type {{ {", ".join(names)} }} from "./{entry["module"]}";')
    out.append("")
    for entry in entries:
        if entry["title"]:
            out.append(
                f"import type {{ {entry['title']} as _{entry['title']} }} "
                f'from "./{entry["module"]}";'
            )
    out += [
        "",
        "/** Every record type, by its schema's `$id`. */",
        "export interface RecordTypes {",
    ]
    for entry in entries:
        if entry["title"]:
            out.append(f"  {json.dumps(entry['id'])}: _{entry['title']};")
    out += ["}", ""]
    for entry in entries:
        for key, members in entry["unions"].items():
            union = f"{entry['title']}By{key.capitalize()}"
            out.append(
                f"/** The members of {entry['title']}, by their `{key}` value: "
                f"a discriminated union on `{key}`. */"
            )
            out.append(f"export interface {union} {{")
            for value, title, module in members:
                out.append(f'  {_ts_literal(value)}: import("./{module}").{title};')
            out += ["}", ""]
    out += [
        "/** The `$id` of every schema shipped in this package. */",
        "export type SchemaId = keyof RecordTypes;",
        "",
        "/** The `$id` of every schema shipped in this package, sorted. */",
        "export declare const schemaIds: readonly SchemaId[];",
        "/** Absolute path of the schema file with this `$id` inside the installed package. */",
        "export declare function schemaPath(id: string): string;",
        "/** The parsed schema with this `$id` (JSON.parse of the shipped file). */",
        "export declare function loadSchema(id: string): Record<string, unknown>;",
        "/** Absolute path of the installed package's root folder. */",
        "export declare const packageRoot: string;",
        "",
    ]
    return "\n".join(out)


def index_js(entries: list[dict[str, Any]]) -> str:
    """Source of ``index.js`` (CommonJS): the schema table and loader."""
    table = {e["id"]: f"schemas/{e['rel']}" for e in entries}
    body = json.dumps(dict(sorted(table.items())), indent=2)
    return (
        banner("every schema in spec/schemas")
        + '"use strict";\n'
        + "/** Schema files shipped in @trainrecord/spec, by $id. */\n"
        + 'const path = require("node:path");\n'
        + 'const fs = require("node:fs");\n\n'
        + f"const FILES = {body};\n\n"
        + "const packageRoot = __dirname;\n"
        + "const schemaIds = Object.freeze(Object.keys(FILES));\n\n"
        + "function schemaPath(id) {\n"
        + "  const rel = FILES[id];\n"
        + "  if (rel === undefined) throw new Error(`unknown schema $id: ${id}`);\n"
        + "  return path.join(packageRoot, rel);\n"
        + "}\n\n"
        + "function loadSchema(id) {\n"
        + '  return JSON.parse(fs.readFileSync(schemaPath(id), "utf8"));\n'
        + "}\n\n"
        + "module.exports = { packageRoot, schemaIds, schemaPath, loadSchema };\n"
    )


def package_json(version: str) -> str:
    """Source of ``package.json``."""
    doc = {
        "//": f"DO NOT EDIT: generated by `{COMMAND}` (tools/generate_typescript.py).",
        "name": PACKAGE_NAME,
        "version": version,
        "description": "TypeScript types, JSON Schemas (draft 2020-12), test vectors and the "
        "rule registry of the trainrecord formats.",
        "license": "Apache-2.0",
        "type": "commonjs",
        "main": "index.js",
        "types": "index.d.ts",
        "exports": {
            ".": {"types": "./index.d.ts", "default": "./index.js"},
            "./types/*": "./types/*",
            "./schemas/*": "./schemas/*",
            "./vectors/*": "./vectors/*",
            "./rules/*": "./rules/*",
            "./meta/*": "./meta/*",
            "./package.json": "./package.json",
        },
        "files": ["index.js", "index.d.ts", "types", *DATA_DIRS],
        "engines": {"node": ">=20"},
    }
    return json.dumps(doc, indent=2) + "\n"


def project_version() -> str:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return str(data["project"]["version"])


def generate(dest: Path) -> None:
    """Write the TypeScript package into ``dest`` (which must not exist yet or be empty)."""
    dest = dest.resolve()
    node = ensure_tools()
    rels = schema_files()
    dest.mkdir(parents=True, exist_ok=True)
    types_dir = dest / "types"
    with tempfile.TemporaryDirectory(prefix="trainrecord-ts-") as tmp:
        banner_file = Path(tmp) / "banner.txt"
        banner_file.write_text(banner("{source}"), encoding="utf-8")
        if rels:
            proc = subprocess.run(
                [
                    node,
                    str(TS_TOOLS / "compile.mjs"),
                    str(SPEC / "schemas"),
                    str(types_dir),
                    str(banner_file),
                    *[r.as_posix() for r in rels],
                ],
                capture_output=True,
                text=True,
                check=False,
                cwd=TS_TOOLS,
            )
            if proc.returncode != 0:
                sys.exit(f"generate_typescript: json-schema-to-typescript failed:\n{proc.stderr}")
    entries: list[dict[str, Any]] = []
    for rel in rels:
        schema = json.loads((SPEC / "schemas" / rel).read_text(encoding="utf-8"))
        module = module_of(rel)
        dts = (dest / f"{module}.d.ts").read_text(encoding="utf-8")
        unions = {k: m for k in DISCRIMINATORS if (m := union_members(schema, k, rel))}
        entries.append(
            {
                "id": schema.get("$id", ID_PREFIX + rel.as_posix()),
                "rel": rel.as_posix(),
                "module": module,
                "title": schema.get("title")
                if schema.get("title") in declared_names(dts)
                else None,
                "names": declared_names(dts),
                "unions": unions,
            }
        )
    (dest / "index.d.ts").write_text(index_dts(entries), encoding="utf-8")
    (dest / "index.js").write_text(index_js(entries), encoding="utf-8")
    (dest / "package.json").write_text(package_json(project_version()), encoding="utf-8")
    for data in DATA_DIRS:
        src_dir = SPEC / data
        if src_dir.is_dir():
            for path in sorted(src_dir.rglob("*.json")):
                target = dest / data / path.relative_to(src_dir)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the folder to write")
    args = parser.parse_args(argv)
    if args.out.exists():
        shutil.rmtree(args.out)
    generate(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
