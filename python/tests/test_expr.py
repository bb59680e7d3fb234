"""The expression language on the shared cases (tests/report/testdata/expr_cases.json), which
src/report/expr_test.cpp runs too."""

import json
import os
import unittest

from kreplay.expr import Expr, ExprError, expand_placeholders, format_value, placeholder_names

CASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "report",
                     "testdata", "expr_cases.json")


class SharedCases(unittest.TestCase):
    def setUp(self):
        with open(os.environ.get("KREPLAY_EXPR_CASES", CASES)) as f:
            self.doc = json.load(f)

    def test_cases(self):
        vars_ = self.doc["vars"]
        self.assertGreater(len(self.doc["cases"]), 30)
        for case in self.doc["cases"]:
            text = case["expr"]
            if "error" in case:
                with self.assertRaises(ExprError, msg=text) as e:
                    Expr(text)
                self.assertIn("column", str(e.exception))
                continue
            value = Expr(text).eval(vars_.get)
            if case["value"] is None:
                self.assertIsNone(value, text)
            else:
                self.assertEqual(value, case["value"], text)

    def test_format_value(self):
        for value, text in self.doc["format"]:
            self.assertEqual(format_value(value), text, value)

    def test_names_and_placeholders(self):
        self.assertEqual(Expr("max(b, a) + a * min(c.d, 1) / launch.threads").names,
                         ["b", "a", "c.d", "launch.threads"])
        lookup = {"x": 85.25}.get
        self.assertEqual(expand_placeholders("DRAM at {x}% ({y}) {{literal}}", lookup),
                         "DRAM at 85.25% (n/a) {literal}")
        self.assertEqual(placeholder_names("a {x} b {y.z} {{no}}"), ["x", "y.z"])


if __name__ == "__main__":
    unittest.main()
