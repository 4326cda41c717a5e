#!/usr/bin/env python3
"""Nothing a student must not read is inside a release (issue 21, item 1).

    tests/ol/release_leaks.py COURSE_ROOT RELEASE LESSON...

Fails (exit 1, each leak printed) when the release holds
  - a file under reference/, oracle/ or tests/hidden/, a .mutant or .wheat
    file, or a lesson's model-answer folder;
  - a lesson.json that still names model_tests, oracle or hidden_tests;
  - in any text file (compiled objects are binary: their string constants
    are messages students see anyway), a distinctive line of a secret:
    every file under reference/ (the lessons, the runtime, the model
    answers), every hidden test, and every line a mutant or wheat adds.
A line is distinctive when, stripped, it has at least 24 characters and
appears in no file the release ships on purpose (stubs, contracts, course
tests, chapters), so a signature the stub shares is not taken for a leak.
"""
import json
import os
import sys

MIN_LEN = 24
SECRET_DIRS = ("reference/", "oracle/", "tests/hidden/")


def text_files(top):
    for dirpath, _, names in os.walk(top):
        for name in sorted(names):
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                data = f.read()
            if b"\0" in data:
                continue
            yield os.path.relpath(path, top), data.decode("utf-8", "replace")


def lines_of(text):
    return {line.strip() for line in text.splitlines() if len(line.strip()) >= MIN_LEN}


def main():
    root, release, lessons = sys.argv[1], sys.argv[2], sys.argv[3:]
    problems = []

    for dirpath, dirs, names in os.walk(release):
        for name in dirs + names:
            rel = os.path.relpath(os.path.join(dirpath, name), release)
            if rel.startswith(SECRET_DIRS) or rel + "/" in SECRET_DIRS:
                problems.append(f"{rel}: a secret folder's file is in the release")
            if name.endswith((".mutant", ".wheat")) or name in ("mutants", "wheats"):
                problems.append(f"{rel}: mutants and wheats go out only compiled")

    secrets = {}  # distinctive line -> where it comes from
    for top in ("reference", "tests/hidden"):
        for rel, text in text_files(os.path.join(root, top)):
            for line in lines_of(text):
                secrets.setdefault(line, f"{top}/{rel}")
    for lesson in lessons:
        with open(os.path.join(root, "course", lesson, "lesson.json")) as f:
            meta = json.load(f)
        with open(os.path.join(release, "course", lesson, "lesson.json")) as f:
            shipped = json.load(f)
        for key in ("model_tests", "oracle", "hidden_tests"):
            if key in shipped:
                problems.append(f"course/{lesson}/lesson.json: still names \"{key}\"")
        model = meta.get("model_tests")
        if model and os.path.exists(os.path.join(release, model)):
            problems.append(f"{model}: the model answers are in the release")
        for kind in ("mutants", "wheats"):
            folder = os.path.join(root, "course", lesson, kind)
            for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
                with open(os.path.join(folder, name)) as f:
                    diff = f.read().split("\n---\n", 1)[-1]
                for line in diff.splitlines():
                    if line.startswith("+") and not line.startswith("+++"):
                        body = line[1:].strip()
                        if len(body) >= MIN_LEN:
                            secrets.setdefault(body, f"course/{lesson}/{kind}/{name}")

    # what the release ships on purpose may share a line with a secret
    shared_on_purpose = set()
    for top in ("stubs", "contracts", "tests", "course"):
        for rel, text in text_files(os.path.join(root, top)):
            if not f"{top}/{rel}".startswith("tests/hidden/"):
                shared_on_purpose |= lines_of(text)
    distinctive = {line: src for line, src in secrets.items() if line not in shared_on_purpose}

    for rel, text in text_files(release):
        for line in lines_of(text):
            if line in distinctive:
                problems.append(f"{rel}: holds a line of {distinctive[line]}: {line[:80]}")

    for p in problems:
        print(f"LEAK {p}")
    files = len({src for src in distinctive.values()})
    print(f"{len(distinctive)} distinctive lines of {files} secret files and variants, "
          f"{'none' if not problems else len(problems)} found in the release")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
