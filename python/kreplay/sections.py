"""Sections and sets (share/kreplay/sections/*.yaml), read as src/report/sections.cpp reads them.

The C++ loader checks every file strictly (`kreplay --list-sections` reports a broken one); this
one reads the same fields the same way and trusts the files.
"""

import glob
import os
import re
import shutil

import yaml

from .expr import Expr

__all__ = ["Catalog", "Section", "default_section_folders", "is_field_name"]

FIELD_PREFIXES = ("launch.", "device.")


def is_field_name(name):
    return name.startswith(FIELD_PREFIXES)


def _text(value):
    """Scalars as the C++ loader keeps them: newlines as blanks, runs of blanks as one."""
    if value is None:
        return ""
    s = str(value) if not isinstance(value, bool) else ("true" if value else "false")
    out = []
    for c in s.replace("\n", " "):
        if c == " " and out and out[-1] == " ":
            continue
        out.append(c)
    return "".join(out).rstrip(" ")


class Metric:
    def __init__(self, d):
        self.name = _text(d.get("name"))
        self.alias = _text(d.get("as"))
        self.label = _text(d.get("label"))
        self.unit = _text(d.get("unit"))
        self.field = is_field_name(self.name)


class Derived:
    def __init__(self, d):
        self.name = _text(d.get("name"))
        self.label = _text(d.get("label"))
        self.unit = _text(d.get("unit"))
        self.expr = Expr(_text(d.get("expr")))


class Rule:
    def __init__(self, d):
        self.name = _text(d.get("name"))
        self.severity = _text(d.get("severity")) or "warning"
        self.when = Expr(_text(d.get("when")))
        self.advice = _text(d.get("advice"))


class Section:
    def __init__(self, d, path):
        self.file = path
        self.name = _text(d.get("name"))
        self.title = _text(d.get("title"))
        self.description = _text(d.get("description"))
        self.order = int(d.get("order", 100))
        self.requires = _text(d.get("requires"))
        self.metrics = [Metric(m) for m in d.get("metrics") or []]
        self.derived = [Derived(x) for x in d.get("derived") or []]
        self.rules = [Rule(r) for r in d.get("rules") or []]
        self.chart = d.get("chart") or {}

    def counters(self):
        return [m.name for m in self.metrics if not m.field]

    def __repr__(self):
        return "Section(%s)" % self.name


class Catalog:
    """Sections and sets of one or more folders; a later folder replaces same-named entries."""

    def __init__(self, folders):
        sections = {}
        self.sets = {}
        for folder in folders:
            if not os.path.isdir(folder):
                raise FileNotFoundError("section folder %s does not exist" % folder)
            for path in sorted(glob.glob(os.path.join(folder, "*.yaml"))):
                with open(path, encoding="utf-8") as f:
                    doc = yaml.safe_load(f)
                if os.path.basename(path) == "sets.yaml":
                    for s in doc.get("sets") or []:
                        self.sets[_text(s["name"])] = {
                            "name": _text(s["name"]),
                            "description": _text(s.get("description")),
                            "sections": [_text(x) for x in s.get("sections") or []]}
                else:
                    section = Section(doc, path)
                    sections[section.name] = section
        ordered = [sections[name] for name in sorted(sections)]
        self.sections = sorted(ordered, key=lambda s: s.order)  # stable, as std::stable_sort

    def section(self, name):
        for s in self.sections:
            if s.name == name:
                return s
        return None

    def resolve(self, set_name="", specs=()):
        """--set and --section (names or regex:EXPR) -> sections in catalog order."""
        wanted = set()
        if set_name:
            if set_name not in self.sets:
                raise KeyError('unknown set "%s"; the sets are %s' % (set_name, ", ".join(self.sets)))
            wanted.update(self.sets[set_name]["sections"])
        names = [s.name for s in self.sections]
        for spec in specs:
            if spec.startswith("regex:"):
                pattern = re.compile(spec[6:])
                hits = [n for n in names if pattern.search(n)]
                if not hits:
                    raise KeyError('section "%s" matches no section' % spec)
                wanted.update(hits)
            else:
                if spec not in names:
                    raise KeyError('unknown section "%s"' % spec)
                wanted.add(spec)
        return [s for s in self.sections if s.name in wanted]


def default_section_folders():
    """Where kreplay's own sections are, for this package (see README)."""
    env = os.environ.get("KREPLAY_SECTIONS_DIR")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    bundled = os.path.join(here, "sections")
    if glob.glob(os.path.join(bundled, "*.yaml")):
        return [bundled]
    exe = shutil.which("kreplay")
    if exe:
        share = os.path.join(os.path.dirname(os.path.realpath(exe)), "..", "share", "kreplay",
                             "sections")
        if os.path.isdir(share):
            return [os.path.normpath(share)]
    checkout = os.path.join(here, "..", "..", "share", "kreplay", "sections")
    if os.path.isdir(checkout):
        return [os.path.normpath(checkout)]
    raise FileNotFoundError("cannot find kreplay's section files; pass section_folders=[...] or "
                            "set KREPLAY_SECTIONS_DIR to <prefix>/share/kreplay/sections")
