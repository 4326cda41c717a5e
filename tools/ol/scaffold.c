#include "scaffold.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

const char *const CHAPTER_SECTIONS[] = {"Overview",
                                        "Key Takeaways",
                                        "How to work this chapter",
                                        "1. Why now",
                                        "2. Principles",
                                        "3. Worked example by hand",
                                        "4. The interface",
                                        "What the tests check",
                                        "Your graded tests",
                                        "5. Pitfalls",
                                        "6. Where it's used next",
                                        "Going further",
                                        NULL};

void chapter_missing_sections(const char *text, strlist *missing) {
    for (int i = 0; CHAPTER_SECTIONS[i]; i++) {
        const char *want = CHAPTER_SECTIONS[i];
        bool found = false;
        for (const char *line = text; line && *line && !found;) {
            const char *p = line;
            if (*p == '#') {
                while (*p == '#') p++;
                while (*p == ' ') p++;
                found = strncmp(p, want, strlen(want)) == 0;
            }
            line = strchr(line, '\n');
            if (line) line++;
        }
        if (!found) sl_push(missing, want);
    }
}

/* The example a lesson does not provide: it shows the shape, asserts nothing. */
static char *generic_example(const lesson *l) {
    strbuf b = {0};
    sb_printf(&b,
              "/* Your tests for %s, %s.\n"
              " *\n"
              " * Write Check tests in any .c file of this folder:\n"
              " *     START_TEST(test_what_it_proves) { ... } END_TEST\n"
              " * ol finds and registers them. Include only contract headers, <check.h>\n"
              " * and standard C headers. `ol check %s` runs them against the reference\n"
              " * (they must pass) and against buggy variants of it (they should fail). */\n"
              "#include <check.h>\n"
              "#include \"tinyllm/testing.h\"\n",
              l->id, l->title, l->id);
    for (int i = 0; i < l->contracts.n; i++) sb_printf(&b, "#include \"%s\"\n", l->contracts.v[i]);
    sb_add(&b, "\n"
               "START_TEST(test_example)\n"
               "{\n"
               "    /* Call the contract's functions on an input small enough to work by\n"
               "     * hand, and compare: tl_assert_close(actual, expected, rtol, atol). */\n"
               "}\n"
               "END_TEST\n");
    return sb_take(&b);
}

char *example_test_text(ol_ctx *ctx, const lesson *l, char **name) {
    if (l->example_test) {
        char *from = path_join(ctx->root, l->example_test);
        char *text = read_file(from, NULL);
        free(from);
        *name = xstrdup(path_base(l->example_test));
        if (text) return text;
        free(*name);
    }
    *name = xstrdup("test_example.c");
    return generic_example(l);
}

/* ---- the stub ---- */

/* "a, b, c" broken after commas so no line passes 100 columns; following
 * lines start at `indent`. */
static void add_wrapped(strbuf *b, const char *text, int first_col, int indent) {
    int col = first_col;
    const char *p = text;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t piece = comma ? (size_t)(comma - p) + 1 : strlen(p);
        if (col + (int)piece > 100 && col > indent) {
            /* the piece starts with the space after the last comma */
            while (*p == ' ') {
                p++;
                piece--;
            }
            sb_add(b, "\n");
            for (int i = 0; i < indent; i++) sb_add(b, " ");
            col = indent;
        }
        sb_addn(b, p, piece);
        col += (int)piece;
        p += piece;
    }
}

static const char *failure_value(ret_kind k) {
    switch (k) {
    case RET_SIGNED: return "-1";
    case RET_UNSIGNED: return "0";
    case RET_BOOL: return "false";
    case RET_FLOAT: return "NAN";
    default: return NULL;
    }
}

static void add_function(strbuf *b, const lesson *l, const char *contract, const c_function *f,
                         bool fail_status) {
    const char *paren = strchr(f->signature, '(');
    size_t head = (size_t)(paren - f->signature) + 1;
    sb_addn(b, f->signature, head);
    add_wrapped(b, paren + 1, (int)head, (int)head);
    sb_add(b, " {\n");
    (void)contract;
    char *hint = xasprintf(
        "    /* Start here: the contract says what %s takes, returns and refuses. */", f->name);
    if (strlen(hint) <= 100)
        sb_printf(b, "%s\n", hint);
    else
        sb_printf(
            b,
            "    /* Start here: the contract says what %s takes,\n     * returns and refuses. */\n",
            f->name);
    free(hint);
    if (f->params.n) {
        strbuf voids = {0};
        for (int i = 0; i < f->params.n; i++)
            sb_printf(&voids, "%s(void)%s;", i ? " " : "", f->params.v[i]);
        sb_add(b, "    ");
        /* "(void)a; (void)b;" wraps at the spaces between statements */
        int col = 4;
        char *copy = sb_take(&voids);
        for (char *save = NULL, *w = strtok_r(copy, " ", &save); w;
             w = strtok_r(NULL, " ", &save)) {
            int len = (int)strlen(w);
            if (col > 4 && col + 1 + len > 100) {
                sb_add(b, "\n    ");
                col = 4;
            } else if (col > 4) {
                sb_add(b, " ");
                col++;
            }
            sb_add(b, w);
            col += len;
        }
        free(copy);
        sb_add(b, "\n");
    }
    char *msg = xasprintf("\"not implemented: %s (%s)\"", f->name, l->id);
    if (f->kind == RET_POINTER)
        sb_printf(b, "    return tl_fail(%s);\n", msg);
    else if (f->kind == RET_SIGNED && fail_status)
        sb_printf(b, "    return tl_fail_status(%s);\n", msg);
    else if (f->kind == RET_VOID)
        sb_printf(b, "    tl_fail(%s);\n", msg);
    else if (failure_value(f->kind))
        sb_printf(b, "    tl_fail(%s);\n    return %s;\n", msg, failure_value(f->kind));
    else
        sb_printf(b, "    tl_fail(%s);\n    return (%s){0};\n", msg, f->ret);
    free(msg);
    sb_add(b, "}\n");
}

char *stub_text(const lesson *l, const char *source, const char *contract, const c_function *f,
                int n, bool fail_status) {
    strbuf b = {0};
    sb_printf(&b,
              "/* %s: your implementation of %s (%s).\n"
              " *\n"
              " * The contract, with each function's shapes, dtypes, errors and ownership:\n"
              " *     contracts/%s\n"
              " * The chapter (course/%s/README.md) explains the math. Build from the ops\n"
              " * of tinyllm/ops.h, so autograd works, and never write into a tensor's\n"
              " * data. Replace each tl_fail below, then run `ol tests %s`.\n"
              " */\n",
              path_base(source), l->title, l->id, contract, l->id, l->id);
    bool floats = false;
    for (int i = 0; i < n; i++) floats = floats || f[i].kind == RET_FLOAT;
    if (floats) sb_add(&b, "#include <math.h>\n\n");
    sb_printf(&b, "#include \"%s\"\n\n#include \"tinyllm/tensor.h\"\n", contract);
    for (int i = 0; i < n; i++) {
        sb_add(&b, "\n");
        add_function(&b, l, contract, &f[i], fail_status);
    }
    return sb_take(&b);
}

/* The contract a source implements: the one of the same name (x.c, x.h),
 * else the only one. NULL when there is none to tell. */
static const char *contract_of(const lesson *l, const char *source) {
    char *want = xstrdup(source);
    want[strlen(want) - 1] = 'h';
    const char *found = NULL;
    for (int i = 0; i < l->contracts.n && !found; i++)
        if (!strcmp(l->contracts.v[i], want)) found = l->contracts.v[i];
    free(want);
    if (!found && l->contracts.n == 1 && l->sources.n == 1) found = l->contracts.v[0];
    return found;
}

static bool runtime_has_fail_status(ol_ctx *ctx) {
    char *path = path_join(ctx->root, "contracts/tinyllm/tensor.h");
    char *text = read_file(path, NULL);
    bool yes = text && strstr(text, "tl_fail_status(");
    free(text);
    free(path);
    return yes;
}

/* Creates path (and its folder) with text unless it exists: 1 written, 0
 * kept, -1 error (said). */
static int create_once(ol_ctx *ctx, const char *path, const char *text) {
    char *dir = path_dirname(path);
    int made = mkdir_p(dir);
    free(dir);
    if (made == 0 && write_file_new(path, text, strlen(text)) == 0) return 1;
    if (made == 0 && errno == EEXIST) return 0;
    ol_error("cannot write %s: %s", shown_path(ctx, path), strerror(errno));
    return -1;
}

static int stub_one(ol_ctx *ctx, const lesson *l, const char *source, bool fail_status) {
    const char *contract = contract_of(l, source);
    if (!contract) {
        ol_error(
            "%s: which contract does %s implement? name it tinyllm/...%s.h like the source, in "
            "lesson.json \"contracts\"",
            l->id, source, "");
        return OL_USAGE;
    }
    char *hpath = xasprintf("%s/contracts/%s", ctx->root, contract);
    char *header = read_file(hpath, NULL);
    free(hpath);
    if (!header) {
        ol_error("contracts/%s cannot be read: %s", contract, strerror(errno));
        return OL_USAGE;
    }
    c_function *f = NULL;
    int n = 0;
    char *err = NULL;
    int rc = OL_PASS;
    if (cdecl_prototypes(header, &f, &n, &err) != 0) {
        ol_error("contracts/%s:%s", contract, err);
        free(err);
        free(header);
        return OL_USAGE;
    }
    free(header);
    char *text = stub_text(l, source, contract, f, n, fail_status);
    char *path = xasprintf("%s/stubs/%s", ctx->root, source);
    char *have = read_file(path, NULL);
    if (!have) {
        if (create_once(ctx, path, text) < 0)
            rc = OL_USAGE;
        else
            printf("wrote   stubs/%s (%d function%s of contracts/%s)\n", source, n,
                   n == 1 ? "" : "s", contract);
    } else if (!strcmp(have, text)) {
        printf("same    stubs/%s (what the contract's %d prototype%s give)\n", source, n,
               n == 1 ? "" : "s");
    } else {
        strlist defined = {0}, missing = {0};
        cdecl_definitions(have, &defined);
        /* untouched: exactly what ol writes for the functions it defines (an earlier header's stub)
         */
        c_function *old = xcalloc((size_t)n + 1, sizeof *old);
        int nold = 0;
        for (int i = 0; i < n; i++)
            if (sl_contains(&defined, f[i].name))
                old[nold++] = f[i];
            else
                sl_push(&missing, f[i].name);
        char *before = stub_text(l, source, contract, old, nold, fail_status);
        free(old); /* its entries are f's */
        if (!strcmp(before, have)) {
            if (write_file_atomic(path, text, strlen(text)) != 0) {
                ol_error("cannot write stubs/%s: %s", source, strerror(errno));
                rc = OL_USAGE;
            } else {
                char *names = sl_join(&missing, ", ");
                printf("wrote   stubs/%s (as ol wrote it, plus %s)\n", source, names);
                free(names);
            }
        } else if (!missing.n) {
            printf("kept    stubs/%s (edited by hand; it defines every function of contracts/%s)\n",
                   source, contract);
        } else {
            char *names = sl_join(&missing, ", ");
            printf("kept    stubs/%s: it is edited by hand, so it is not overwritten; it lacks %s. "
                   "Add %s:\n\n",
                   source, names, missing.n == 1 ? "this" : "these");
            free(names);
            for (int i = 0; i < n; i++)
                if (sl_contains(&missing, f[i].name)) {
                    strbuf one = {0};
                    add_function(&one, l, contract, &f[i], fail_status);
                    printf("%s\n", one.s);
                    sb_free(&one);
                }
            rc = OL_FAIL;
        }
        free(before);
        sl_free(&defined);
        sl_free(&missing);
    }
    free(have);
    free(path);
    free(text);
    cdecl_free(f, n);
    return rc;
}

int scaffold_stubs(ol_ctx *ctx, const lesson *l) {
    bool fail_status = runtime_has_fail_status(ctx);
    int rc = OL_PASS;
    for (int i = 0; i < l->sources.n; i++) {
        int r = stub_one(ctx, l, l->sources.v[i], fail_status);
        if (r > rc) rc = r;
    }
    return rc;
}

/* ---- a new lesson ---- */

static bool module_part_ok(const char *s, size_t n) {
    if (n == 0 || !(islower((unsigned char)s[0]))) return false;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '_'))
            return false;
    return true;
}

static char *chapter_text(const lesson *l, const char *module) {
    strbuf b = {0};
    sb_printf(&b, "# %s %s\n\n", l->id, l->title);
    sb_printf(
        &b,
        "## Overview\n\n"
        "| | |\n|---|---|\n"
        "| Module | %s · build · C · time, plus your graded tests (rung %s) |\n"
        "| You build | `c/%s`: the functions of the contract; and your own tests in `c/%s/` |\n"
        "| Contract | `contracts/%s` |\n"
        "| Tests | `tests/%s/` (what they check: section 4); golden data in `fixtures/%s/` "
        "(`oracle/%s/make_fixtures.py`) |\n"
        "| Needs | the lessons and runtime calls it builds on |\n"
        "| Used by | the lessons that build on it |\n\n",
        l->id, l->rung, l->sources.v[0], l->student_tests, l->contracts.v[0], l->id, l->id, l->id);
    sb_add(&b, "## Key Takeaways\n\n- One line per idea, each naming the course test that proves "
               "it (`test_...`).\n\n");
    sb_printf(
        &b,
        "## How to work this chapter\n\n```sh\n"
        "ol start %s              # the stub in c/%s; your test folder and rung\n"
        "ol tests %s              # the course tests (-k NAME for one)\n"
        "# write your tests in c/%s/, then:\n"
        "ol check %s              # course tests, then the mutation grade of your tests\n"
        "ol diff  %s              # after passing: your code against the reference\n```\n\n---\n\n",
        l->id, l->sources.v[0], l->id, l->student_tests, l->id, l->id);
    sb_add(&b, "## 1. Why now\n\nWhere this module sits in a modern decoder, and what breaks "
               "without it.\n\n");
    sb_add(&b,
           "## 2. Principles\n\nThe math, as Hugging Face computes it (docs/hf-numerics.md).\n\n"
           "| Symbol | Meaning | Shape |\n|---|---|---|\n| | | |\n\n");
    sb_add(
        &b,
        "## 3. Worked example by hand\n\nA small input worked on paper; a course test reproduces "
        "these numbers.\n\n");
    sb_printf(&b, "## 4. The interface\n\nThe contract, `contracts/%s` (module `%s`).\n\n",
              l->contracts.v[0], module);
    sb_add(&b, "### What the tests check\n\n| Test | KIND | Checks | Why it matters downstream |\n"
               "|---|---|---|---|\n| | | | |\n\n");
    sb_printf(
        &b,
        "### Your graded tests (rung %s)\n\nThe oracles you may use (the fixtures, hand examples, "
        "properties) and what the rung asks.\n\n",
        l->rung);
    sb_add(&b, "## 5. Pitfalls\n\n| Pitfall | Symptom | Caught by |\n|---|---|---|\n| | | (mutant "
               "s01) |\n\n");
    sb_add(&b, "## 6. Where it's used next\n\nThe lessons that call this module.\n\n");
    sb_add(&b, "## Going further\n\nProduction equivalents, with file paths.\n");
    return sb_take(&b);
}

static char *contract_text(const lesson *l, const char *module) {
    strbuf guard = {0};
    sb_add(&guard, "TINYLLM_");
    for (const char *p = module; *p; p++) {
        char c = *p == '/' ? '_' : (char)toupper((unsigned char)*p);
        sb_addn(&guard, &c, 1);
    }
    sb_add(&guard, "_H");
    char *text =
        xasprintf("/* tinyllm/%s.h: %s (%s).\n"
                  " *\n"
                  " * What it computes, as Hugging Face computes it (the formula in a comment),\n"
                  " * then each struct and function with its shapes, dtypes, errors and\n"
                  " * ownership, as contracts/tinyllm/modern/rmsnorm.h does.\n"
                  " *\n"
                  " * Errors: a function that fails returns NULL (or -1) with a message from\n"
                  " * tl_error() that names the function and what was wrong. A NULL tensor input\n"
                  " * keeps the message of the call that produced it.\n"
                  " */\n"
                  "#ifndef %s\n#define %s\n\n#include \"tinyllm/tensor.h\"\n\n#endif\n",
                  module, l->title, l->id, guard.s, guard.s);
    sb_free(&guard);
    return text;
}

static char *oracle_text(const lesson *l, const char *name) {
    /* a seed of its own per lesson, from the id's digits: L7.2 -> 20240072 */
    unsigned digits = 0;
    for (const char *p = l->id; *p; p++)
        if (isdigit((unsigned char)*p)) digits = (digits * 10 + (unsigned)(*p - '0')) % 10000u;
    unsigned seed = 20240000u + digits;
    return xasprintf(
        "#!/usr/bin/python3\n"
        "\"\"\"Golden data for %s (%s).\n"
        "\n"
        "Run from the repository root:  /usr/bin/python3 oracle/%s/make_fixtures.py OUT_DIR\n"
        "Writes OUT_DIR/%s/%s.json and, once build() makes tensors,\n"
        "OUT_DIR/%s/%s.safetensors; the course's own copy lives in fixtures/.\n"
        "\n"
        "The oracle: re-implement what the lesson computes from the transformers\n"
        "sources (name the version and the file here and in ORACLE_SEMANTICS), run\n"
        "it in float32 with torch, and store the inputs and outputs the course tests\n"
        "compare with. Reproducible: one seeded generator, one thread, and a writer\n"
        "that sorts everything (`ol fixtures %s --check`).\n"
        "\"\"\"\n"
        "import os\nimport sys\n\nimport numpy as np\nimport torch\n\n"
        "# HF's file layout, written once for every oracle: oracle/common/fixture_io.py\n"
        "sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), \"..\", "
        "\"common\"))\n"
        "from fixture_io import safetensors_bytes, write_atomic, write_json  # noqa: E402\n\n"
        "SEED = %u\n"
        "ORACLE_SEMANTICS = \"not written yet: the transformers version and file this follows\"\n"
        "# Per-test tolerances, read by the course tests and the model answers:\n"
        "# {\"test_name\": {\"rtol\": ..., \"atol\": ...}}, with what was measured.\n"
        "TOLERANCES = {}\n\n\n"
        "def build(gen):\n"
        "    \"\"\"The tensors to store, by name, as float32 numpy arrays.\"\"\"\n"
        "    return {}\n\n\n"
        "def main(argv):\n"
        "    if len(argv) != 2:\n"
        "        sys.exit(\"usage: %%s OUT_DIR   (writes OUT_DIR/%s/%s.*)\" %% argv[0])\n"
        "    torch.set_num_threads(1)\n"
        "    gen = torch.Generator().manual_seed(SEED)\n"
        "    tensors = build(gen)\n"
        "    out_dir = os.path.join(argv[1], \"%s\")\n"
        "    os.makedirs(out_dir, exist_ok=True)\n"
        "    if tensors:\n"
        "        write_atomic(os.path.join(out_dir, \"%s.safetensors\"), "
        "safetensors_bytes(tensors))\n"
        "    meta = {\n"
        "        \"lesson\": \"%s\",\n"
        "        \"oracle\": \"oracle/%s/make_fixtures.py\",\n"
        "        \"oracle_semantics\": ORACLE_SEMANTICS,\n"
        "        \"torch_version\": torch.__version__,\n"
        "        \"numpy_version\": np.__version__,\n"
        "        \"seed\": SEED,\n"
        "        \"tensors\": sorted(tensors),\n"
        "        \"tolerances\": TOLERANCES,\n"
        "    }\n"
        "    write_json(os.path.join(out_dir, \"%s.json\"), meta)\n\n\n"
        "if __name__ == \"__main__\":\n"
        "    main(sys.argv)\n",
        l->id, l->title, l->id, l->id, name, l->id, name, l->id, seed, l->id, name, l->id, name,
        l->id, l->id, name);
}

static char *json_string(const char *s) {
    strbuf b = {0};
    sb_add(&b, "\"");
    for (const char *p = s; *p; p++) {
        if (*p == '"' || *p == '\\')
            sb_printf(&b, "\\%c", *p);
        else if ((unsigned char)*p < 0x20)
            sb_printf(&b, "\\u%04x", (unsigned char)*p);
        else
            sb_addn(&b, p, 1);
    }
    sb_add(&b, "\"");
    return sb_take(&b);
}

static char *lesson_json_text(const lesson *l) {
    strbuf b = {0};
    char *title = json_string(l->title);
    sb_printf(&b,
              "{\n  \"id\": \"%s\",\n  \"slug\": \"%s\",\n  \"title\": %s,\n  \"rung\": \"%s\",\n"
              "  \"draft\": true,\n  \"needs\": [",
              l->id, l->slug, title, l->rung);
    free(title);
    for (int i = 0; i < l->needs.n; i++) sb_printf(&b, "%s\"%s\"", i ? ", " : "", l->needs.v[i]);
    sb_printf(
        &b,
        "],\n  \"sources\": [\"%s\"],\n  \"contracts\": [\"%s\"],\n"
        "  \"course_tests\": \"%s\",\n  \"student_tests\": \"%s\",\n  \"model_tests\": \"%s\",\n"
        "  \"fixtures\": \"%s\",\n  \"oracle\": \"%s\",\n  \"required_pitfalls\": [],\n"
        "  \"link\": [],\n  \"test_timeout_seconds\": 10\n}\n",
        l->sources.v[0], l->contracts.v[0], l->course_tests, l->student_tests, l->model_tests,
        l->fixtures, l->oracle);
    return sb_take(&b);
}

/* The options as a lesson; -1 with the usage problem said. */
static int plan(ol_ctx *ctx, const char *id, const scaffold_options *o, lesson *l, char **name) {
    memset(l, 0, sizeof *l);
    const char *slash = o->module ? strchr(o->module, '/') : NULL;
    if (!lesson_id_valid(id)) {
        ol_error("\"%s\" is not a lesson id: a letter, then letters, digits, '.', '-' or '_' (like "
                 "L7.2)",
                 id);
        return -1;
    }
    if (!o->title || !*o->title || strpbrk(o->title, "\n\r\t")) {
        ol_error("ol lesson new: --title TEXT is required, one line (what `ol list` shows)");
        return -1;
    }
    if (!slash || strchr(slash + 1, '/') ||
        !module_part_ok(o->module, (size_t)(slash - o->module)) ||
        !module_part_ok(slash + 1, strlen(slash + 1))) {
        ol_error(
            "ol lesson new: --module AREA/NAME is required, lower-case letters, digits and '_' "
            "(like modern/gated_mlp: contracts/tinyllm/modern/gated_mlp.h)");
        return -1;
    }
    const char *rung = o->rung ? o->rung : "R3";
    if (!rung_level(rung)) {
        ol_error("ol lesson new: --rung \"%s\" is not one of R1 to R5", rung);
        return -1;
    }
    char *json = xasprintf("%s/course/%s/lesson.json", ctx->root, id);
    bool taken = is_file(json);
    free(json);
    if (taken) {
        ol_error("course/%s/lesson.json exists already: %s is a lesson (`ol lesson show %s`); ol "
                 "lesson new "
                 "never overwrites",
                 id, id, id);
        return -1;
    }
    /* a module of another lesson: its files would be "kept" and built twice */
    char *src = xasprintf("tinyllm/%s.c", o->module), *hdr = xasprintf("tinyllm/%s.h", o->module);
    char *owner = lesson_owner(ctx->root, "sources", src, NULL);
    const char *listed = src;
    if (!owner) {
        owner = lesson_owner(ctx->root, "contracts", hdr, NULL);
        listed = hdr;
    }
    if (owner)
        ol_error("ol lesson new: --module %s belongs to %s (course/%s/lesson.json lists %s): "
                 "choose another module, or extend %s",
                 o->module, owner, owner, listed, owner);
    free(src);
    free(hdr);
    if (owner) {
        free(owner);
        return -1;
    }
    if (o->needs) {
        char *copy = xstrdup(o->needs);
        for (char *save = NULL, *w = strtok_r(copy, ", ", &save); w;
             w = strtok_r(NULL, ", ", &save)) {
            lesson dep;
            char *err = NULL;
            if (lesson_load(ctx->root, w, &dep, &err) != 0) {
                ol_error("--needs %s: %s", w, err);
                free(err);
                free(copy);
                lesson_free(l);
                return -1;
            }
            lesson_free(&dep);
            if (!sl_contains(&l->needs, w)) sl_push(&l->needs, w);
        }
        free(copy);
    }
    *name = xstrdup(slash + 1);
    l->id = xstrdup(id);
    l->title = xstrdup(o->title);
    l->rung = xstrdup(rung);
    l->level = rung_level(rung);
    /* l7-2-gated-mlp: the id in lower case with '-' for '.', then the module's name */
    strbuf slug = {0};
    for (const char *p = id; *p; p++) {
        char c = *p == '.' || *p == '_' ? '-' : (char)tolower((unsigned char)*p);
        sb_addn(&slug, &c, 1);
    }
    sb_add(&slug, "-");
    for (const char *p = *name; *p; p++) {
        char c = *p == '_' ? '-' : *p;
        sb_addn(&slug, &c, 1);
    }
    l->slug = sb_take(&slug);
    sl_push_owned(&l->sources, xasprintf("tinyllm/%s.c", o->module));
    sl_push_owned(&l->contracts, xasprintf("tinyllm/%s.h", o->module));
    l->course_tests = xasprintf("tests/%s", id);
    l->student_tests = xasprintf("tests/%s", l->slug);
    l->model_tests = xasprintf("reference/tests/%s", l->slug);
    l->fixtures = xasprintf("fixtures/%s", id);
    l->oracle = xasprintf("oracle/%s", id);
    return 0;
}

/* Runs the new oracle once, into fixtures/: the skeleton's metadata. */
static int run_oracle(ol_ctx *ctx, const lesson *l) {
    char *tmp = ctx_cache_dir(ctx, "tmp");
    if (!tmp) return OL_USAGE;
    proc_job job = {0};
    proc_arg(&job, "/usr/bin/python3");
    proc_argf(&job, "%s/make_fixtures.py", l->oracle);
    proc_arg(&job, "fixtures");
    job.cwd = xstrdup(ctx->root);
    job.out_path = xasprintf("%s/oracle-new.%ld.log", tmp, (long)getpid());
    int rc = OL_PASS;
    if (proc_run(&job) != 0)
        rc = 130;
    else if (job.exit_code != 0) {
        char *log = read_file(job.out_path, NULL), *what = proc_describe(&job);
        ol_error("the new oracle failed (%s):\n%s\nThe rest of the skeleton is written; fix the "
                 "oracle, then "
                 "run `ol fixtures %s`",
                 what, log ? log : "", l->id);
        free(log);
        free(what);
        rc = OL_FAIL;
    }
    unlink(job.out_path);
    proc_job_free(&job);
    free(tmp);
    return rc;
}

int scaffold_lesson(ol_ctx *ctx, const char *id, const scaffold_options *o) {
    lesson l;
    char *name = NULL;
    if (plan(ctx, id, o, &l, &name) != 0) return OL_USAGE;
    const char *module = o->module;
    char *src = l.sources.v[0], *contract = l.contracts.v[0];
    struct {
        char *path, *text;
        const char *what;
    } files[] = {
        {xasprintf("course/%s/lesson.json", id), lesson_json_text(&l), "the lesson (a draft)"},
        {xasprintf("course/%s/README.md", id), chapter_text(&l, module),
         "the chapter: every section"},
        {xasprintf("contracts/%s", contract), contract_text(&l, module),
         "the contract: write it first"},
        {xasprintf("reference/%s", src),
         xasprintf("/* %s: the reference of %s (%s).\n *\n * Short and readable, like llama2.c's "
                   "run.c, composed "
                   "from the runtime's ops\n * (tinyllm/ops.h) so autograd works; `ol diff` shows "
                   "it beside the "
                   "student's\n * code after a pass, so keep lines at most 100 columns.\n "
                   "*/\n#include \"%s\"\n\n"
                   "#include \"tinyllm/ops.h\"\n",
                   path_base(src), l.title, id, contract),
         "the reference"},
        {xasprintf("tests/%s/test_%s.c", id, name),
         xasprintf("/* %s: the course tests of %s, one file per concern. Each file states at\n * "
                   "its top the "
                   "property it checks; START_TEST blocks only (ol registers them).\n * Golden "
                   "tests read "
                   "fixtures/%s/ (tinyllm/testing.h: tl_fixture_load) with the\n * tolerance its "
                   "JSON stores "
                   "for the test. */\n#include <check.h>\n#include \"tinyllm/testing.h\"\n#include "
                   "\"%s\"\n",
                   id, l.title, id, contract),
         "the course tests' first file"},
        {xasprintf("%s/test_my_%s.c", l.model_tests, name),
         xasprintf(
             "/* The model answer: student tests of %s that reach rung %s, written as a\n * good "
             "student "
             "would (oracles from the fixtures, hand examples, properties),\n * never from a "
             "mutant's "
             "diff. */\n#include <check.h>\n#include \"tinyllm/testing.h\"\n#include \"%s\"\n",
             id, l.rung, contract),
         "the model answers' first file"},
        {xasprintf("%s/make_fixtures.py", l.oracle), oracle_text(&l, name), "the oracle, seeded"},
    };
    size_t nfiles = sizeof files / sizeof *files;
    int rc = OL_PASS;
    printf("ol lesson new %s: %s (rung %s, module %s)\n", id, l.title, l.rung, module);
    /* the lesson.json last: until it is there, nothing reads the lesson */
    for (size_t k = 1; k <= nfiles && rc == OL_PASS; k++) {
        size_t i = k % nfiles;
        char *path = path_join(ctx->root, files[i].path);
        int made = create_once(ctx, path, files[i].text);
        if (made < 0)
            rc = OL_USAGE;
        else
            printf("%s %s  (%s)\n", made ? "wrote  " : "kept   ", files[i].path, files[i].what);
        free(path);
        if (i == 2 && rc == OL_PASS) { /* after the contract: the stub it implies */
            rc = scaffold_stubs(ctx, &l);
            if (rc == OL_FAIL) rc = OL_PASS; /* a stub of one's own is kept, and said */
        }
    }
    if (rc == OL_PASS) rc = run_oracle(ctx, &l);
    for (size_t i = 0; i < nfiles; i++) {
        free(files[i].path);
        free(files[i].text);
    }
    lesson check;
    char *err = NULL;
    if (rc == OL_PASS && lesson_load(ctx->root, id, &check, &err) != 0) {
        ol_error("the new lesson does not validate: %s", err);
        free(err);
        rc = OL_USAGE;
    } else if (rc == OL_PASS) {
        lesson_free(&check);
        printf("wrote   %s/ (the oracle's first run)\n\n", l.fixtures);
        printf(
            "%s is a draft: `ol list` and `ol start` hide it from students until lesson.json says\n"
            "\"draft\": false. Next:\n"
            "  1. write contracts/%s, then `ol lesson stub %s` (the stub from its prototypes)\n"
            "  2. the reference, the course tests (tests/%s/) and the oracle (`ol fixtures %s`)\n"
            "  3. a mutant per pitfall (`ol mutants new %s ...`), wheats, the model answers\n"
            "`ol mutants verify %s` checks it at every step; `make test-lessons LESSON=%s` proves "
            "it.\n",
            id, contract, id, id, id, id, id, id);
    }
    free(name);
    lesson_free(&l);
    return rc;
}
