#!/usr/bin/env python3
"""For mk/lessons_memory.mk: one word per lesson, ID|MODEL|SOURCE|..., where MODEL is
the model-answer folder under reference/tests/ and the sources (relative to
reference/) are the lesson's and those of every lesson it needs, needs first.
Lessons with extra link flags, or without course tests or model answers, are left out."""
import glob
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
lessons = {}
for path in sorted(glob.glob(os.path.join(ROOT, "course", "*", "lesson.json"))):
    with open(path) as f:
        lesson = json.load(f)
    lessons[lesson["id"]] = lesson


def sources(lesson_id, seen):
    out = []
    for need in lessons[lesson_id].get("needs", []):
        if need in lessons and need not in seen:
            seen.add(need)
            out += sources(need, seen)
    return out + lessons[lesson_id]["sources"]


words = []
for lesson_id, lesson in lessons.items():
    model = lesson.get("model_tests", "")
    if lesson.get("link") or not model.startswith("reference/tests/"):
        continue
    if not glob.glob(os.path.join(ROOT, lesson["course_tests"], "test_*.c")):
        continue
    srcs = []
    for s in sources(lesson_id, {lesson_id}):
        if s not in srcs:
            srcs.append(s)
    words.append("|".join([lesson_id, os.path.basename(model)] + srcs))
print(" ".join(words))
