"""The expression language of section files: derived values and rule conditions.

The same language as src/report/expr.hpp (the grammar is documented there); both run the cases
of tests/report/testdata/expr_cases.json. Values are floats; an unavailable value is None, and so
is every expression that uses one, except if() (only the branch taken counts) and and/or when
their left side decides. Division by zero, NaN and infinities are unavailable too.
"""

import math
import re

__all__ = ["Expr", "ExprError", "format_value", "expand_placeholders", "placeholder_names"]

_FUNCTIONS = ("min", "max", "floor", "ceil", "abs", "sqrt", "if")
_NAME_START = re.compile(r"[A-Za-z_]")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


class ExprError(ValueError):
    pass


def _finite(v):
    return v if v is not None and math.isfinite(v) else None


class _Parser:
    def __init__(self, text):
        self.text = text
        self.pos = 0
        self.names = []

    def fail(self, what, at=None):
        at = self.pos if at is None else at
        raise ExprError('expression "%s": %s at column %d' % (self.text, what, at + 1))

    def skip(self):
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self, token):
        self.skip()
        return self.text.startswith(token, self.pos)

    def keyword(self, word):
        self.skip()
        if not self.text.startswith(word, self.pos):
            return False
        end = self.pos + len(word)
        if end < len(self.text) and (self.text[end].isalnum() or self.text[end] in "_."):
            return False
        self.pos = end
        return True

    def parse_all(self):
        node = self.parse_or()
        self.skip()
        if self.pos != len(self.text):
            self.fail("unexpected '%s'" % self.text[self.pos])
        return node

    def parse_or(self):
        left = self.parse_and()
        while self.keyword("or"):
            left = ("bin", "or", left, self.parse_and())
        return left

    def parse_and(self):
        left = self.parse_not()
        while self.keyword("and"):
            left = ("bin", "and", left, self.parse_not())
        return left

    def parse_not(self):
        if self.keyword("not"):
            return ("un", "not", self.parse_not())
        return self.parse_compare()

    def parse_compare(self):
        left = self.parse_sum()
        for op in ("<=", ">=", "==", "!=", "<", ">"):
            if self.peek(op):
                self.pos += len(op)
                return ("bin", op, left, self.parse_sum())
        return left

    def parse_sum(self):
        left = self.parse_product()
        while self.peek("+") or self.peek("-"):
            op = self.text[self.pos]
            self.pos += 1
            left = ("bin", op, left, self.parse_product())
        return left

    def parse_product(self):
        left = self.parse_unary()
        while self.peek("*") or self.peek("/"):
            op = self.text[self.pos]
            self.pos += 1
            left = ("bin", op, left, self.parse_unary())
        return left

    def parse_unary(self):
        if self.peek("-"):
            self.pos += 1
            return ("un", "-", self.parse_unary())
        return self.parse_primary()

    def parse_primary(self):
        self.skip()
        t = self.text
        if self.pos >= len(t):
            self.fail("a value is missing")
        c = t[self.pos]
        if c == "(":
            self.pos += 1
            inner = self.parse_or()
            if not self.peek(")"):
                self.fail("')' expected")
            self.pos += 1
            return inner
        if c.isdigit() or c == ".":
            start = self.pos
            while self.pos < len(t) and (t[self.pos].isdigit() or t[self.pos] == "."):
                self.pos += 1
            if self.pos < len(t) and t[self.pos] in "eE":
                save = self.pos
                self.pos += 1
                if self.pos < len(t) and t[self.pos] in "+-":
                    self.pos += 1
                if self.pos < len(t) and t[self.pos].isdigit():
                    while self.pos < len(t) and t[self.pos].isdigit():
                        self.pos += 1
                else:
                    self.pos = save
            literal = t[start:self.pos]
            try:
                return ("num", float(literal))
            except ValueError:
                self.fail('bad number "%s"' % literal, start)
        if _NAME_START.match(c):
            start = self.pos
            name = _NAME.match(t, self.pos).group(0)
            self.pos += len(name)
            if name in ("and", "or", "not"):
                self.fail("'%s' needs a value before it" % name, start)
            if self.peek("("):
                if name not in _FUNCTIONS:
                    self.fail("unknown function '%s' (min, max, floor, ceil, abs, sqrt, if)" % name,
                              start)
                self.pos += 1
                args = []
                while True:
                    args.append(self.parse_or())
                    if self.peek(","):
                        self.pos += 1
                        continue
                    if self.peek(")"):
                        self.pos += 1
                        break
                    self.fail("',' or ')' expected")
                if (name == "if" and len(args) != 3) or (
                        name not in ("min", "max", "if") and len(args) != 1):
                    self.fail("%s() takes %d argument%s" % (name, 3 if name == "if" else 1,
                                                            "s" if name == "if" else ""), start)
                return ("call", name, args)
            if name not in self.names:
                self.names.append(name)
            return ("name", name)
        self.fail("unexpected '%s'" % c)


def _eval(node, lookup):
    kind = node[0]
    if kind == "num":
        return node[1]
    if kind == "name":
        return _finite(lookup(node[1]))
    if kind == "un":
        v = _eval(node[2], lookup)
        if v is None:
            return None
        return (1.0 if v == 0 else 0.0) if node[1] == "not" else -v
    if kind == "bin":
        op = node[1]
        a = _eval(node[2], lookup)
        if op == "and" and a is not None and a == 0:
            return 0.0
        if op == "or" and a is not None and a != 0:
            return 1.0
        if a is None:
            return None
        b = _eval(node[3], lookup)
        if b is None:
            return None
        if op in ("and", "or"):
            return 1.0 if b != 0 else 0.0
        try:
            if op == "+":
                return _finite(a + b)
            if op == "-":
                return _finite(a - b)
            if op == "*":
                return _finite(a * b)
            if op == "/":
                return None if b == 0 else _finite(a / b)
        except OverflowError:
            return None
        return 1.0 if {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b,
                       "!=": a != b}[op] else 0.0
    if kind == "call":
        name, args = node[1], node[2]
        if name == "if":
            c = _eval(args[0], lookup)
            if c is None:
                return None
            return _eval(args[1] if c != 0 else args[2], lookup)
        values = []
        for arg in args:
            v = _eval(arg, lookup)
            if v is None:
                return None
            values.append(v)
        if name == "min":
            m = values[0]
            for x in values:
                m = x if x < m else m
            return m
        if name == "max":
            m = values[0]
            for x in values:
                m = x if x > m else m
            return m
        if name == "floor":
            return float(math.floor(values[0]))
        if name == "ceil":
            return float(math.ceil(values[0]))
        if name == "abs":
            return abs(values[0])
        if name == "sqrt":
            return None if values[0] < 0 else _finite(math.sqrt(values[0]))
    return None


class Expr:
    """A parsed expression: Expr("a / b").eval(lookup) with lookup(name) -> float or None."""

    def __init__(self, text):
        parser = _Parser(text)
        self.text = text
        self._root = parser.parse_all()
        self.names = parser.names

    def eval(self, lookup):
        return _eval(self._root, lookup)


def format_value(value):
    """How reports print a value (src/report/expr.cpp, format_value)."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if value == 0:
        return "0"
    a = abs(value)
    if value == math.trunc(value) and a < 1e15:
        return "%.0f" % value
    if a < 0.01:
        return "%.3g" % value
    if a >= 1000:
        return "%.1f" % value
    return "%.2f" % value


def _scan(text, on_text, on_name):
    i = 0
    while i < len(text):
        c = text[i]
        if c in "{}" and i + 1 < len(text) and text[i + 1] == c:
            on_text(c)
            i += 2
            continue
        if c == "{":
            end = text.find("}", i + 1)
            if end >= 0:
                on_name(text[i + 1:end])
                i = end + 1
                continue
        on_text(c)
        i += 1


def expand_placeholders(text, lookup):
    out = []
    _scan(text, out.append, lambda name: out.append(format_value(lookup(name))))
    return "".join(out)


def placeholder_names(text):
    out = []
    _scan(text, lambda _: None, out.append)
    return out
