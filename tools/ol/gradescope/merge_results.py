#!/usr/bin/env python3
"""One Gradescope results.json from the reports run_autograder made.

    merge_results.py --release DIR --reports DIR --seconds N --out FILE LESSON... [--milestone ID]

Each lesson's `ol check --gradescope` tests are kept, named after the
lesson; a lesson with no report (nothing submitted for it, or a harness
that could not grade) is one failed test worth what its rung's stages are
worth, with ol's message. After a pass, a test worth 0 shows the lesson's
reference (the grader's copy of the release holds its source). The output
is each lesson's terminal report. Gradescope's format:
https://gradescope-autograders.readthedocs.io/en/latest/specs/
"""
import argparse
import json
import os

REPORT_MAX = 20000  # characters of one lesson's terminal report


def read(path, default=""):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return default


def stage_points(release, lesson):
    """What `ol check --gradescope` gives a lesson: one point per stage its rung requires."""
    meta = json.loads(read(os.path.join(release, "course", lesson, "lesson.json"), "{}"))
    level = int(str(meta.get("rung", "R1"))[1:] or 1)
    return 2 + (3 if level >= 2 else 0) + (1 if level >= 3 else 0), meta


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--release", required=True)
    ap.add_argument("--reports", required=True)
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--milestone")
    ap.add_argument("lessons", nargs="+")
    a = ap.parse_args()
    tests, outputs, score = [], [], 0.0
    for lesson in a.lessons + ([a.milestone] if a.milestone else []):
        text = read(os.path.join(a.reports, f"{lesson}.txt"))
        if len(text) > REPORT_MAX:
            text = text[:REPORT_MAX // 2] + "\n[... cut ...]\n" + text[-REPORT_MAX // 2:]
        outputs.append(f"== {lesson} ==\n{text.strip()}\n")
        rc = read(os.path.join(a.reports, f"{lesson}.rc"), "2").strip()
        points, meta = stage_points(a.release, lesson)
        try:
            report = json.loads(read(os.path.join(a.reports, f"{lesson}.gradescope.json")))
        except ValueError:
            report = None
        if not report:
            last = [l for l in text.strip().splitlines() if l.strip()][-1:] or ["no report"]
            tests.append({"name": f"{lesson}: not graded", "score": 0, "max_score": points,
                          "status": "failed", "visibility": "visible",
                          "output": f"{lesson} could not be graded: {last[0]}"})
            continue
        for t in report.get("tests", []):
            t = dict(t, name=f"{lesson} {t['name']}")
            score += float(t.get("score", 0))
            tests.append(t)
        if rc == "0" and meta.get("sources"):
            code = []
            for src in meta["sources"]:
                body = read(os.path.join(a.release, "reference", src))
                if body:
                    code.append(f"reference/{src}:\n\n```c\n{body}```\n")
            if code:
                tests.append({"name": f"{lesson}: the reference (your lesson passed)", "score": 0,
                              "max_score": 0, "status": "passed", "visibility": "visible",
                              "output_format": "md", "output": "\n".join(code)})
    results = {"score": score, "execution_time": int(a.seconds), "output": "\n".join(outputs),
               "visibility": "visible", "stdout_visibility": "hidden", "tests": tests}
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(results, f, indent=1)
    os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
