"""Generate ``generated/`` from ``spec/``, or check that it is up to date.

``python tools/generate.py --out generated`` (``make generate``) writes
``generated/python/trainrecord_spec``: pydantic v2 models from every schema under
``spec/schemas`` (datamodel-code-generator, pinned in pyproject.toml), the strict base
class, a ``MODELS`` table from schema ``$id`` to model, ``fields.py`` (the report
builders' keyword arguments as TypedDicts, from reporting.schema.json), and copies of the
schemas, vectors and rule registry as package data. ``--check generated`` (``make
check-generated``) generates into a temporary folder and compares the whole file set byte
for byte. The output is the same on every run: no timestamps, sorted file lists.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "spec"
TEMPLATES = Path(__file__).resolve().parent / "templates"
PACKAGE = "trainrecord_spec"
COMMAND = "make generate"
DATA_DIRS = ("schemas", "vectors", "rules", "meta")

CODEGEN_FLAGS = [
    "--input-file-type",
    "jsonschema",
    "--output-model-type",
    "pydantic_v2.BaseModel",
    "--target-python-version",
    "3.11",
    "--use-annotated",
    "--field-constraints",
    "--use-standard-collections",
    "--use-union-operator",
    "--collapse-root-models",
    "--use-type-alias",
    "--enum-field-as-literal",
    "all",
    "--disable-timestamp",
    "--formatters",
    "builtin",
    "--use-title-as-name",
    "--use-missing-sentinel",
    "--no-allow-remote-refs",
    "--use-schema-description",
    "--use-field-description",
    "--base-class",
    f"{PACKAGE}._base.StrictModel",
]


def banner(source: str) -> str:
    return (
        f"# DO NOT EDIT: generated from {source} by `{COMMAND}` (tools/generate.py).\n"
        "# Change the source and run the command again; CI fails when this file drifts.\n"
    )


_MISSING_IMPORT = "from pydantic.experimental.missing_sentinel import MISSING\n"
_MISSING_COMPAT = (
    "try:\n"
    "    from pydantic import MISSING\n"
    "except ImportError:  # pydantic < 2.14 has it under experimental\n"
    "    from pydantic.experimental.missing_sentinel import MISSING  # type: ignore[no-redef]\n"
)


def _exact_integers(node: object) -> object:
    """Rewrite ``"const": <int>`` as an integer range of one value, for the code generator.

    datamodel-code-generator writes ``Literal[1]`` for ``const: 1``, and pydantic's Literal
    accepts ``true`` and ``1.0`` for it even in strict mode (``True == 1`` in Python), where
    the oracle refuses both. A strict ``int`` bounded to ``[1, 1]`` agrees with the oracle.
    """
    if isinstance(node, dict):
        out = {k: _exact_integers(v) for k, v in node.items()}
        const = node.get("const")
        if isinstance(const, int) and not isinstance(const, bool):
            del out["const"]
            out.update(type="integer", minimum=const, maximum=const)
        return out
    if isinstance(node, list):
        return [_exact_integers(v) for v in node]
    return node


def _codegen_input(dest: Path) -> Path:
    """A copy of spec/schemas prepared for the code generator (see :func:`_exact_integers`)."""
    for path in sorted((SPEC / "schemas").rglob("*.schema.json")):
        target = dest / path.relative_to(SPEC / "schemas")
        target.parent.mkdir(parents=True, exist_ok=True)
        schema = _exact_integers(json.loads(path.read_text(encoding="utf-8")))
        target.write_text(json.dumps(schema, indent=2, ensure_ascii=False), encoding="utf-8")
    return dest


def _codegen_bin() -> str:
    exe = Path(sys.executable).with_name("datamodel-codegen")
    return str(exe) if exe.exists() else "datamodel-codegen"


def _strip_header(text: str) -> tuple[str, str | None]:
    """Drop datamodel-codegen's own header lines; return the text and the filename it named."""
    lines = text.splitlines(keepends=True)
    source = None
    while lines and lines[0].startswith("#"):
        if "filename:" in lines[0]:
            source = lines[0].split("filename:", 1)[1].strip()
        lines.pop(0)
    while lines and not lines[0].strip():
        lines.pop(0)
    return "".join(lines), source


def _model_table(pkg: Path) -> str:
    """Source of ``_models.py``: the ``MODELS`` table from ``$id`` to generated model."""
    imports: list[str] = []
    entries: list[str] = []
    for schema_path in sorted((SPEC / "schemas").rglob("*.schema.json")):
        schema = json.loads(schema_path.read_text(encoding="utf-8"))
        rel = schema_path.relative_to(SPEC / "schemas")
        module = ".".join([*rel.parent.parts, rel.name.replace(".schema.json", "_schema")])
        module = module.replace("-", "_")
        title = schema.get("title")
        if not title or not (pkg / "models" / Path(*module.split("."))).with_suffix(".py").exists():
            continue
        alias = f"_{len(imports)}"
        imports.append(f"from {PACKAGE}.models.{module} import {title} as {alias}")
        entries.append(f"    {schema['$id']!r}: {alias},")
    return (
        banner("spec/schemas/**/*.schema.json")
        + '"""The table from each schema\'s $id to the model generated from it."""\n\n'
        + "from __future__ import annotations\n\nfrom typing import Any\n\n"
        + "\n".join(imports)
        + "\n\nMODELS: dict[str, Any] = {\n"
        + "\n".join(entries)
        + "\n}\n"
    )


REPORTING_SCHEMA = Path("reporting", "reporting.schema.json")
BUILDER_DEFS = (
    "training_config",
    "lesion_config",
    "wordset_config",
    "training_validation",
    "lesion_validation",
    "training_epoch",
    "lesion_epoch",
)
"""The ``$defs`` of reporting.schema.json that the report builders fill (``fields.py``)."""

_JSON_TYPES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "null": "None",
}


def _class_name(definition: str, suffix: str = "") -> str:
    return "".join(part.capitalize() for part in definition.split("_")) + suffix


def _value_type(node: dict[str, Any], refs: list[str], defs: dict[str, Any]) -> str:
    """The Python type of one property schema; a ``$ref`` is a TypedDict added to ``refs``
    (``| None`` when the referenced schema's type includes null).

    Only the shapes the builder $defs use are known: any other one stops the generation,
    so a new shape is mapped here on purpose rather than typed wrongly.
    """
    if "$ref" in node:
        ref = str(node["$ref"])
        if not ref.startswith("#/$defs/"):
            sys.exit(f"fields.py: unsupported $ref {ref!r}")
        name = ref.removeprefix("#/$defs/")
        if name not in refs:
            refs.append(name)
        nullable = "null" in (defs[name].get("type") or [])
        return _class_name(name) + (" | None" if nullable else "")
    if "enum" in node:
        values = node["enum"]
        return f"Literal[{', '.join(repr(v) for v in values)}]"
    kinds = node.get("type")
    names = kinds if isinstance(kinds, list) else [kinds]
    out = []
    for kind in names:
        if kind == "array":
            items = node.get("items")
            if not isinstance(items, dict):
                sys.exit(f"fields.py: an array without an items schema: {node!r}")
            out.append(f"list[{_value_type(items, refs, defs)}]")
        elif kind in _JSON_TYPES:
            out.append(_JSON_TYPES[str(kind)])
        else:
            sys.exit(f"fields.py: unsupported property schema {node!r}")
    return " | ".join(out)


def _docstring(text: str, indent: str = "    ") -> str:
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = textwrap.wrap(text, width=92 - len(indent), break_on_hyphens=False)
    if len(lines) == 1 and len(lines[0]) <= 86 - len(indent):
        return f'{indent}"""{lines[0]}"""\n'
    return f'{indent}"""\n' + "".join(f"{indent}{line}\n" for line in lines) + f'{indent}"""\n'


def _typed_dict(defs: dict[str, Any], definition: str, refs: list[str]) -> str:
    """One TypedDict: every property of ``definition``, in schema order, with its type and
    description. A builder's (``Fields``) keys are all optional (total=False), since the
    builder fills a missing field with null; a referenced object's are the schema's
    ``required``, which must then be all or none of them."""
    schema = defs[definition]
    props = schema["properties"]
    if definition in BUILDER_DEFS:
        head = f"class {_class_name(definition, 'Fields')}(TypedDict, total=False):\n"
    else:
        required = set(schema.get("required", []))
        if required not in (set(), set(props)):
            sys.exit(f"fields.py: {definition} has some required fields; map it by hand")
        total = "" if required else ", total=False"
        head = f"class {_class_name(definition)}(TypedDict{total}):\n"
    body = _docstring(str(schema.get("description", definition)))
    for name, node in props.items():
        body += f"\n    {name}: {_value_type(node, refs, defs)}\n"
        if node.get("description"):
            body += _docstring(str(node["description"]))
    return head + body


def _fields_module() -> str:
    """Source of ``fields.py``: the builders' keyword arguments as TypedDicts."""
    schema = json.loads((SPEC / "schemas" / REPORTING_SCHEMA).read_text(encoding="utf-8"))
    defs = schema["$defs"]
    refs: list[str] = []
    classes = [_typed_dict(defs, name, refs) for name in BUILDER_DEFS]
    done: list[str] = []
    while len(done) < len(refs):  # referenced objects, each once, before their first use
        name = refs[len(done)]
        done.append(name)
        classes.insert(0, _typed_dict(defs, name, refs))
    names = [_class_name(n) for n in reversed(done)] + [
        _class_name(n, "Fields") for n in BUILDER_DEFS
    ]
    table = "".join(f"    {n!r}: {_class_name(n, 'Fields')},\n" for n in BUILDER_DEFS)
    return (
        banner(f"spec/schemas/{REPORTING_SCHEMA.as_posix()}")
        + '"""The report builders\' keyword arguments, one TypedDict per $defs object of\n'
        "reporting.schema.json.\n\n"
        "``trainrecord.report.config(kind, **values)``, ``validation_entry`` and "
        "``epoch_entry``\ntake ``**values: Unpack[...]`` of these, so an IDE completes the "
        "field names and a type\nchecker flags a misspelt one or a value of the wrong type. "
        "Every key is optional\n(``total=False``): the builder fills a missing field with "
        "null. Bounds (minimum,\nminLength, ...) are not types: the builders and the schema "
        "check them at run time.\n"
        '"""\n\n'
        "from __future__ import annotations\n\n"
        "from typing import Any, Literal, TypedDict\n\n"
        "__all__ = [\n"
        + "".join(f"    {n!r},\n" for n in ["FIELDS", *names])
        + "]\n\n\n"
        + "\n\n".join(classes)
        + "\n\nFIELDS: dict[str, Any] = {\n"
        + table
        + "}\n"
        + '"""Each builder $defs name to its TypedDict."""\n'
    )


def generate_python(dest: Path) -> None:
    """Write the ``trainrecord_spec`` package under ``dest/python``."""
    pkg = dest / "python" / PACKAGE
    pkg.mkdir(parents=True)
    raw = Path(tempfile.mkdtemp(prefix="trainrecord-codegen-"))
    try:
        out = raw / "models"
        proc = subprocess.run(
            [
                _codegen_bin(),
                "--input",
                str(_codegen_input(raw / "schemas")),
                "--output",
                str(out),
                *CODEGEN_FLAGS,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            sys.exit(f"datamodel-codegen failed:\n{proc.stderr}")
        for path in sorted(out.rglob("*.py")):
            rel = path.relative_to(out)
            body, source = _strip_header(path.read_text(encoding="utf-8"))
            src = f"spec/schemas/{source}" if source and source != "schemas" else "spec/schemas"
            target = pkg / "models" / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if rel.name == "__init__.py" and not body.strip():
                body = '"""Generated models, one module per schema file."""\n'
            body = body.replace(_MISSING_IMPORT, _MISSING_COMPAT)
            target.write_text(banner(src) + body, encoding="utf-8")
    finally:
        shutil.rmtree(raw, ignore_errors=True)
    init = pkg / "models" / "__init__.py"
    if not init.exists():
        init.parent.mkdir(parents=True, exist_ok=True)
        init.write_text(
            banner("spec/schemas") + '"""Generated models, one module per schema file."""\n',
            encoding="utf-8",
        )
    for name in ("_base.py", "__init__.py"):
        text = (TEMPLATES / name).read_text(encoding="utf-8")
        (pkg / name).write_text(banner(f"tools/templates/{name}") + text, encoding="utf-8")
    (pkg / "_models.py").write_text(_model_table(pkg), encoding="utf-8")
    (pkg / "fields.py").write_text(_fields_module(), encoding="utf-8")
    (pkg / "py.typed").write_text("", encoding="utf-8")
    for data in DATA_DIRS:
        src_dir = SPEC / data
        if src_dir.is_dir():
            for path in sorted(src_dir.rglob("*.json")):
                target = pkg / data / path.relative_to(src_dir)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)


def generate(dest: Path) -> None:
    """Generate every target language into ``dest``."""
    generate_python(dest)
    extra = Path(__file__).resolve().parent / "generate_typescript.py"
    if extra.exists():  # the TypeScript target, when present, writes dest/typescript
        subprocess.run([sys.executable, str(extra), "--out", str(dest / "typescript")], check=True)


def _files(root: Path) -> set[str]:
    skip = {"__pycache__", "node_modules"}
    found = set()
    for path in root.rglob("*"):
        if path.is_file() and not skip.intersection(path.relative_to(root).parts):
            found.add(path.relative_to(root).as_posix())
    return found


def compare(expected: Path, actual: Path) -> list[str]:
    """Differences between a fresh generation and the committed tree."""
    want, have = _files(expected), _files(actual)
    out = [f"missing: {p}" for p in sorted(want - have)]
    out += [f"extra:   {p}" for p in sorted(have - want)]
    out += [
        f"changed: {p}"
        for p in sorted(want & have)
        if not filecmp.cmp(expected / p, actual / p, shallow=False)
    ]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--out", type=Path, help="write generated code into this folder")
    group.add_argument("--check", type=Path, help="compare this folder with a fresh generation")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="trainrecord-generated-") as tmp:
        fresh = Path(tmp) / "generated"
        generate(fresh)
        if args.check:
            diffs = compare(fresh, args.check)
            if diffs:
                print(
                    f"{args.check} is out of step with spec/ ({len(diffs)} files):", file=sys.stderr
                )
                for line in diffs:
                    print(f"  {line}", file=sys.stderr)
                print("run make generate and commit", file=sys.stderr)
                return 1
            print(f"{args.check} matches spec/")
            return 0
        for sub in sorted(os.listdir(fresh)):
            target = args.out / sub
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(fresh / sub, target)
        print(f"generated {args.out} from spec/")
        return 0


if __name__ == "__main__":
    sys.exit(main())
