#!/usr/bin/env python3
"""Checks a results.json against Gradescope's documented format.

    tests/ol/gradescope_format.py results.json [EXPECTED_SCORE]

The format (https://gradescope-autograders.readthedocs.io/en/latest/specs/,
"Output format"): an object with optional score, execution_time, output,
output_format, test_output_format, test_name_format, visibility,
stdout_visibility, extra_data, tests and leaderboard; score is required
when no test has one. Each test has optional score, max_score, status
("passed" or "failed"), name, name_format, number, output, output_format,
tags, visibility, extra_data. Formats: text, html, simple_format, md, ansi;
visibilities: hidden, after_due_date, after_published, visible. Any other
key, type or value is refused. With EXPECTED_SCORE, the score must be it.
Prints the score and the count of tests; exit 1 on any problem.
"""
import json
import sys

FORMATS = {"text", "html", "simple_format", "md", "ansi"}
VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}
NUMBER = (int, float)
TOP = {"score": NUMBER, "execution_time": NUMBER, "output": str, "output_format": str,
       "test_output_format": str, "test_name_format": str, "visibility": str,
       "stdout_visibility": str, "extra_data": dict, "tests": list, "leaderboard": list}
TEST = {"score": NUMBER, "max_score": NUMBER, "status": str, "name": str, "name_format": str,
        "number": str, "output": str, "output_format": str, "tags": list, "visibility": str,
        "extra_data": dict}


def check_fields(obj, spec, where, problems):
    for key, value in obj.items():
        if key not in spec:
            problems.append(f"{where}: unknown key {key!r}")
        elif not isinstance(value, spec[key]) or isinstance(value, bool):
            problems.append(f"{where}: {key} is {type(value).__name__}, not {spec[key]}")
    for key in ("output_format", "test_output_format", "test_name_format", "name_format"):
        if key in obj and obj[key] not in FORMATS:
            problems.append(f"{where}: {key} {obj[key]!r} is not one of {sorted(FORMATS)}")
    for key in ("visibility", "stdout_visibility"):
        if key in obj and obj[key] not in VISIBILITY:
            problems.append(f"{where}: {key} {obj[key]!r} is not one of {sorted(VISIBILITY)}")


def main():
    with open(sys.argv[1]) as f:
        r = json.load(f)
    problems = []
    if not isinstance(r, dict):
        sys.exit(f"FAIL {sys.argv[1]}: not a JSON object")
    check_fields(r, TOP, "results", problems)
    tests = r.get("tests", [])
    for i, t in enumerate(tests if isinstance(tests, list) else []):
        if not isinstance(t, dict):
            problems.append(f"tests[{i}]: not an object")
            continue
        check_fields(t, TEST, f"tests[{i}] {t.get('name', '')!r}", problems)
        if "status" in t and t["status"] not in ("passed", "failed"):
            problems.append(f"tests[{i}]: status {t['status']!r} is not passed or failed")
        if "score" in t and "max_score" in t and t["score"] > t["max_score"] and t["max_score"] > 0:
            problems.append(f"tests[{i}]: score {t['score']} above max_score {t['max_score']}")
        if "tags" in t and not all(isinstance(x, str) for x in t["tags"]):
            problems.append(f"tests[{i}]: tags must be strings")
    if "score" not in r and not any("score" in t for t in tests):
        problems.append("results: no score, and no test has one")
    total = sum(t.get("max_score", 0) for t in tests)
    if len(sys.argv) > 2 and abs(r.get("score", -1) - float(sys.argv[2])) > 1e-9:
        problems.append(f"score {r.get('score')} is not the expected {sys.argv[2]}")
    for p in problems:
        print(f"FAIL {sys.argv[1]}: {p}")
    print(f"score {r.get('score')} of {total}, {len(tests)} tests")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
