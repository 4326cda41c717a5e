/* ol fixtures L7.x [--check]: reruns the lesson's oracle (Debian's Python
 * with torch) to regenerate its golden data, or, with --check, regenerates
 * into a scratch folder and compares with the committed fixtures tensor by
 * tensor. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "opts.h"
#include "proc.h"

static const char HELP[] =
    "usage: ol fixtures L7.x [--check] [--workspace DIR]\n"
    "\n"
    "Runs the lesson's oracle, /usr/bin/python3 oracle/L7.x/make_fixtures.py OUT_DIR,\n"
    "from the course root. The script writes OUT_DIR/L7.x/; ol runs it into a\n"
    "scratch folder, then copies each file into fixtures/L7.x/ (by rename: never a\n"
    "partial file).\n"
    "\n"
    "  --check   regenerate into the scratch folder only, and compare with the\n"
    "            committed fixtures: every tensor of every .safetensors (names,\n"
    "            dtypes, shapes, values: identical, within the tolerance, or\n"
    "            different, with the element worst against its tolerance), every\n"
    "            .json key, and every other file byte for byte. Nothing is written.\n"
    "            An element x (committed) passes when |made - x| <= 1e-5|x| +\n"
    "            1e-6 max(1, max|tensor|): the absolute term scales with the\n"
    "            tensor's largest value, as a sum's rounding error (another CPU's\n"
    "            reduction order) scales with its summands.\n"
    "\n"
    "Without --check, each rewritten file says what changed (tensors or keys).\n"
    "\n"
    "Exit status: 0 regenerated, or identical (within the tolerance) with --check;\n"
    "1 --check found a difference or the oracle failed; 2 usage error.\n";

/* ---- a minimal safetensors reader: enough to compare two files ---- */

typedef struct {
    cJSON *header;        /* name -> {dtype, shape, data_offsets} */
    const unsigned char *data;
    size_t data_len;
    char *bytes;          /* the whole file */
} st_file;

static int st_open(const char *path, st_file *f, char **err) {
    memset(f, 0, sizeof *f);
    size_t len = 0;
    f->bytes = read_file(path, &len);
    if (!f->bytes) {
        *err = xasprintf("cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    uint64_t n = 0;
    for (int i = 7; len >= 8 && i >= 0; i--) n = (n << 8) | (unsigned char)f->bytes[i];
    if (len < 8 || n > len - 8) {
        *err = xasprintf("%s is not a safetensors file (the header length is wrong)", path);
        return -1;
    }
    f->header = cJSON_ParseWithLength(f->bytes + 8, (size_t)n);
    if (!cJSON_IsObject(f->header)) {
        *err = xasprintf("%s: the safetensors header is not a JSON object", path);
        return -1;
    }
    f->data = (const unsigned char *)f->bytes + 8 + n;
    f->data_len = len - 8 - (size_t)n;
    return 0;
}

static void st_close(st_file *f) {
    cJSON_Delete(f->header);
    free(f->bytes);
    memset(f, 0, sizeof *f);
}

typedef struct {
    const char *dtype;
    cJSON *shape;
    const unsigned char *data;
    size_t len;
} st_tensor;

static int st_get(const st_file *f, const cJSON *entry, st_tensor *t) {
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(entry, "dtype");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(entry, "data_offsets");
    t->shape = cJSON_GetObjectItemCaseSensitive(entry, "shape");
    if (!cJSON_IsString(dtype) || !cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2) return -1;
    double b = cJSON_GetArrayItem(off, 0)->valuedouble, e = cJSON_GetArrayItem(off, 1)->valuedouble;
    if (b < 0 || e < b || e > (double)f->data_len) return -1;
    t->dtype = dtype->valuestring;
    t->data = f->data + (size_t)b;
    t->len = (size_t)(e - b);
    return 0;
}

/* Element i as a double, for the float dtypes; NAN for others. */
static double element(const st_tensor *t, size_t i) {
    if (!strcmp(t->dtype, "F32")) {
        float v;
        memcpy(&v, t->data + 4 * i, 4);
        return v;
    }
    if (!strcmp(t->dtype, "F64")) {
        double v;
        memcpy(&v, t->data + 8 * i, 8);
        return v;
    }
    if (!strcmp(t->dtype, "BF16")) {
        uint32_t bits = (uint32_t)(t->data[2 * i] | (t->data[2 * i + 1] << 8)) << 16;
        float v;
        memcpy(&v, &bits, 4);
        return v;
    }
    return NAN;
}

static size_t dtype_size(const char *d) {
    if (!strcmp(d, "F64") || !strcmp(d, "I64") || !strcmp(d, "U64")) return 8;
    if (!strcmp(d, "F32") || !strcmp(d, "I32") || !strcmp(d, "U32")) return 4;
    if (!strcmp(d, "F16") || !strcmp(d, "BF16") || !strcmp(d, "I16") || !strcmp(d, "U16")) return 2;
    return 1;
}

/* The rule --check compares floats by: |made - committed| <= RTOL |committed| +
 * ATOL max(1, max |committed tensor|). The absolute term scales with the tensor's
 * largest magnitude because a sum's rounding error scales with its summands, not
 * its result: a near-zero gradient summed from large terms differs between CPUs
 * (another reduction order) by far more than 1e-6. */
#define RTOL 1e-5
#define ATOL 1e-6
#define RULE "1e-5|x| + 1e-6 max(1, max|tensor|)"

/* What changed between two tensors of a name, for one line of output. */
typedef struct {
    int same, close_, diffs;
    double worst; /* of the close ones: the largest |difference| / tolerance */
    strlist changed, added, removed; /* names, for `ol fixtures` without --check */
} st_diff;

static void st_diff_free(st_diff *d) {
    sl_free(&d->changed);
    sl_free(&d->added);
    sl_free(&d->removed);
}

/* Compares two float tensors of one shape. Returns true when every element is
 * within the rule; else prints the element that fails worst against its
 * tolerance (not the largest difference, which may be within a large one). */
static bool close_enough(const char *name, const char *tensor, const st_tensor *x,
                         const st_tensor *y, bool print, double *ratio_out) {
    size_t n = x->len / dtype_size(x->dtype), worst_at = 0;
    double scale = 1; /* finite values only: a mask's -inf must not widen every tolerance */
    for (size_t i = 0; i < n; i++)
        if (isfinite(element(y, i)) && fabs(element(y, i)) > scale) scale = fabs(element(y, i));
    double worst = 0; /* |difference| / tolerance */
    for (size_t i = 0; i < n; i++) {
        double p = element(x, i), q = element(y, i);
        double d = (p == q || (isnan(p) && isnan(q))) ? 0 : fabs(p - q); /* inf == inf */
        double ratio = isnan(d) ? INFINITY : d / (RTOL * fabs(q) + ATOL * scale);
        if (ratio > worst) {
            worst = ratio;
            worst_at = i;
        }
    }
    *ratio_out = worst;
    if (worst <= 1) return true;
    if (print) {
        double p = element(x, worst_at), q = element(y, worst_at);
        printf("  %s: tensor %s differs: worst at flat index %zu, %.9g vs committed %.9g: "
               "|difference| %.3g is %.3g x its tolerance %.3g (" RULE ", max|tensor| %.3g)\n",
               name, tensor, worst_at, p, q, fabs(p - q), worst,
               RTOL * fabs(q) + ATOL * scale, scale);
    }
    return false;
}

/* Compares two safetensors files tensor by tensor into *d; with print, says
 * each difference (--check). Returns the number of differences. */
static int diff_safetensors(const char *name, const char *made, const char *committed,
                            bool print, st_diff *d) {
    memset(d, 0, sizeof *d);
    st_file a, b;
    char *err = NULL;
    if (st_open(made, &a, &err) != 0 || st_open(committed, &b, &err) != 0) {
        if (print) printf("  %s: %s\n", name, err);
        free(err);
        st_close(&a);
        return d->diffs = 1;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, a.header) {
        if (!strcmp(e->string, "__metadata__")) continue;
        const cJSON *other = cJSON_GetObjectItemCaseSensitive(b.header, e->string);
        st_tensor x, y;
        char *why = NULL;
        if (!other) {
            sl_push(&d->added, e->string);
            why = xasprintf("tensor %s is new (not in the committed file)", e->string);
        } else if (st_get(&a, e, &x) != 0 || st_get(&b, other, &y) != 0) {
            why = xasprintf("tensor %s has a malformed header entry", e->string);
        } else if (strcmp(x.dtype, y.dtype) != 0) {
            why = xasprintf("tensor %s is %s, committed %s", e->string, x.dtype, y.dtype);
        } else if (!cJSON_Compare(x.shape, y.shape, true)) {
            char *s1 = cJSON_PrintUnformatted(x.shape), *s2 = cJSON_PrintUnformatted(y.shape);
            why = xasprintf("tensor %s has shape %s, committed %s", e->string, s1, s2);
            free(s1);
            free(s2);
        } else if (x.len != y.len) {
            why = xasprintf("tensor %s has %zu bytes, committed %zu", e->string, x.len, y.len);
        } else if (memcmp(x.data, y.data, x.len) == 0) {
            d->same++;
            continue;
        } else {
            bool numeric = !strcmp(x.dtype, "F32") || !strcmp(x.dtype, "F64") ||
                           !strcmp(x.dtype, "BF16");
            double ratio = 0;
            if (numeric && close_enough(name, e->string, &x, &y, print, &ratio)) {
                d->close_++;
                if (ratio > d->worst) d->worst = ratio;
            } else {
                if (!numeric && print)
                    printf("  %s: tensor %s (%s) differs\n", name, e->string, x.dtype);
                d->diffs++;
            }
            sl_push(&d->changed, e->string);
            continue;
        }
        if (other) sl_push(&d->changed, e->string);
        if (print) printf("  %s: %s\n", name, why);
        free(why);
        d->diffs++;
    }
    cJSON_ArrayForEach(e, b.header) {
        if (strcmp(e->string, "__metadata__") != 0 &&
            !cJSON_GetObjectItemCaseSensitive(a.header, e->string)) {
            if (print)
                printf("  %s: tensor %s is committed but the oracle no longer makes it\n", name,
                       e->string);
            sl_push(&d->removed, e->string);
            d->diffs++;
        }
    }
    if (!cJSON_Compare(cJSON_GetObjectItemCaseSensitive(a.header, "__metadata__"),
                       cJSON_GetObjectItemCaseSensitive(b.header, "__metadata__"), true)) {
        if (print) printf("  %s: the __metadata__ differs\n", name);
        sl_push(&d->changed, "__metadata__");
        d->diffs++;
    }
    st_close(&a);
    st_close(&b);
    return d->diffs;
}

/* --check of one safetensors file: each difference, then a summary line. */
static int compare_safetensors(const char *name, const char *made, const char *committed) {
    st_diff d;
    int diffs = diff_safetensors(name, made, committed, true, &d);
    printf("  %s: %d tensor%s identical", name, d.same, d.same == 1 ? "" : "s");
    if (d.close_)
        printf(", %d within " RULE " (at worst %.2g x it)", d.close_, d.worst);
    if (diffs) printf(", %d difference%s (above)", diffs, diffs == 1 ? "" : "s");
    printf("\n");
    st_diff_free(&d);
    return diffs;
}

/* What a rewrite of a .safetensors file changes, briefly: "tensors changed:
 * a, b; added: c; removed: d" (at most a few names of each). */
static char *safetensors_changes(const char *made, const char *committed) {
    st_diff d;
    diff_safetensors("", made, committed, false, &d);
    strbuf out = {0};
    const strlist *lists[] = {&d.changed, &d.added, &d.removed};
    const char *what[] = {"changed", "added", "removed"};
    for (int k = 0; k < 3; k++) {
        if (!lists[k]->n) continue;
        sb_printf(&out, "%s%s%s: ", out.len ? "; " : "", out.len ? "" : "tensors ", what[k]);
        for (int i = 0; i < lists[k]->n && i < 4; i++)
            sb_printf(&out, "%s%s", i ? ", " : "", lists[k]->v[i]);
        if (lists[k]->n > 4) sb_printf(&out, " and %d more", lists[k]->n - 4);
    }
    st_diff_free(&d);
    return out.len ? sb_take(&out) : (sb_free(&out), xstrdup("changed"));
}

static int compare_json(const char *name, const char *made, const char *committed) {
    char *ta = read_file(made, NULL), *tb = read_file(committed, NULL);
    cJSON *a = ta ? cJSON_Parse(ta) : NULL, *b = tb ? cJSON_Parse(tb) : NULL;
    int diffs = 0;
    if (!a || !b) {
        diffs = ta && tb && strcmp(ta, tb) == 0 ? 0 : 1;
        if (diffs) printf("  %s: differs (not both JSON)\n", name);
    } else if (!cJSON_Compare(a, b, true)) {
        const cJSON *e;
        cJSON_ArrayForEach(e, a) {
            const cJSON *o = cJSON_GetObjectItemCaseSensitive(b, e->string);
            if (!o) {
                printf("  %s: \"%s\" is new (not in the committed file)\n", name,
                       e->string ? e->string : "?");
                diffs++;
            } else if (!cJSON_Compare(e, o, true)) {
                char *v1 = cJSON_PrintUnformatted(e), *v2 = cJSON_PrintUnformatted(o);
                printf("  %s: \"%s\" is %.60s%s, committed %.60s%s\n", name,
                       e->string ? e->string : "?", v1, strlen(v1) > 60 ? "..." : "", v2,
                       strlen(v2) > 60 ? "..." : "");
                free(v1);
                free(v2);
                diffs++;
            }
        }
        cJSON_ArrayForEach(e, b) {
            if (!cJSON_GetObjectItemCaseSensitive(a, e->string)) {
                printf("  %s: \"%s\" is committed but no longer made\n", name,
                       e->string ? e->string : "?");
                diffs++;
            }
        }
        if (!diffs) diffs = 1;
    } else {
        printf("  %s: identical\n", name);
    }
    cJSON_Delete(a);
    cJSON_Delete(b);
    free(ta);
    free(tb);
    return diffs;
}

/* What a rewrite of a .json file changes, briefly: its top-level keys. */
static char *json_changes(const char *made, const char *committed) {
    char *ta = read_file(made, NULL), *tb = read_file(committed, NULL);
    cJSON *a = ta ? cJSON_Parse(ta) : NULL, *b = tb ? cJSON_Parse(tb) : NULL;
    strbuf out = {0};
    if (cJSON_IsObject(a) && cJSON_IsObject(b)) {
        strlist changed = {0}, added = {0}, removed = {0};
        const cJSON *e;
        cJSON_ArrayForEach(e, a) {
            const cJSON *o = cJSON_GetObjectItemCaseSensitive(b, e->string);
            if (!o) sl_push(&added, e->string);
            else if (!cJSON_Compare(e, o, true)) sl_push(&changed, e->string);
        }
        cJSON_ArrayForEach(e, b) if (!cJSON_GetObjectItemCaseSensitive(a, e->string))
            sl_push(&removed, e->string);
        const strlist *lists[] = {&changed, &added, &removed};
        const char *what[] = {"changed", "added", "removed"};
        for (int k = 0; k < 3; k++) {
            if (!lists[k]->n) continue;
            char *names = sl_join(lists[k], ", ");
            sb_printf(&out, "%s%s%s: %s", out.len ? "; " : "", out.len ? "" : "keys ", what[k],
                      names);
            free(names);
        }
        sl_free(&changed);
        sl_free(&added);
        sl_free(&removed);
    }
    cJSON_Delete(a);
    cJSON_Delete(b);
    free(ta);
    free(tb);
    /* the same keys and values written otherwise (spaces, order) */
    return out.len ? sb_take(&out) : (sb_free(&out), xstrdup("changed: formatting only"));
}

static int compare_bytes(const char *name, const char *made, const char *committed) {
    size_t la, lb;
    char *a = read_file(made, &la), *b = read_file(committed, &lb);
    int diff = !a || !b || la != lb || memcmp(a, b, la) != 0;
    printf("  %s: %s\n", name, diff ? "differs" : "identical");
    free(a);
    free(b);
    return diff;
}

static bool same_bytes(const char *a_path, const char *b_path) {
    size_t la, lb;
    char *a = read_file(a_path, &la), *b = read_file(b_path, &lb);
    bool same = a && b && la == lb && memcmp(a, b, la) == 0;
    free(a);
    free(b);
    return same;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Every file under dir, as paths relative to it ("a.json", "ckpt/config.json"),
 * sorted: a lesson's fixtures may hold folders (L7.9's checkpoints). */
static void list_tree(const char *dir, const char *rel, strlist *out) {
    char *here = rel[0] ? path_join(dir, rel) : xstrdup(dir);
    strlist files = {0};
    list_files(here, "", &files);
    for (int i = 0; i < files.n; i++)
        sl_push_owned(out, rel[0] ? xasprintf("%s/%s", rel, path_base(files.v[i]))
                                  : xstrdup(path_base(files.v[i])));
    sl_free(&files);
    DIR *d = opendir(here);
    strlist subdirs = {0};
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char *full = path_join(here, e->d_name);
        if (e->d_name[0] != '.' && is_dir(full))
            sl_push_owned(&subdirs, rel[0] ? xasprintf("%s/%s", rel, e->d_name)
                                           : xstrdup(e->d_name));
        free(full);
    }
    if (d) closedir(d);
    sl_sort(&subdirs);
    for (int i = 0; i < subdirs.n; i++) list_tree(dir, subdirs.v[i], out);
    sl_free(&subdirs);
    free(here);
}

int cmd_fixtures(int argc, char **argv) {
    const char *workspace = NULL;
    bool check = false;
    const ol_option opts[] = {
        {"workspace", 'w', "DIR", &workspace, NULL}, {"check", 0, NULL, NULL, &check}, {0}};
    char *id;
    int status;
    if (!opts_one_lesson("fixtures", argc, argv, opts, HELP, "L7.1 --check", &id, &status))
        return status;
    ol_ctx ctx;
    lesson l;
    /* the fixtures folder is what this makes: it may be missing */
    int opened = open_lesson_flags(&ctx, &l, workspace, id, LESSON_FIXTURES_MAY_BE_MISSING);
    free(id);
    if (opened != 0) return OL_USAGE;
    int rc = OL_PASS;
    char *script = l.oracle ? xasprintf("%s/%s/make_fixtures.py", ctx.root, l.oracle) : NULL;
    char *committed = l.fixtures ? path_join(ctx.root, l.fixtures) : NULL;
    char *tmp = NULL, *scratch = NULL;
    if (!script || !committed) {
        ol_error("%s/lesson.json names no %s: this lesson has no golden data made by an oracle "
                 "(course/FORMAT.md: \"fixtures\" and \"oracle\")",
                 shown_path(&ctx, l.dir), !script && !committed ? "\"oracle\" and no \"fixtures\""
                                          : !script ? "\"oracle\"" : "\"fixtures\"");
        rc = OL_USAGE;
    } else if (!is_file(script)) {
        ol_error(
            "the oracle %s does not exist (lesson.json \"oracle\" names its folder; the script in "
            "it is make_fixtures.py)",
            shown_path(&ctx, script));
        rc = OL_USAGE;
    } else if (!(tmp = ctx_cache_dir(&ctx, "tmp")) || !(scratch = make_temp_dir(tmp, "fixtures"))) {
        rc = OL_USAGE;
    }
    if (rc == OL_PASS) {
        printf("running the oracle: /usr/bin/python3 %s OUT_DIR\n", shown_path(&ctx, script));
        fflush(stdout);
        proc_job job = {0};
        proc_arg(&job, "/usr/bin/python3");
        proc_arg(&job, script);
        proc_arg(&job, scratch);
        job.cwd = xstrdup(ctx.root);
        job.out_path = xasprintf("%s/oracle.log", tmp);
        if (proc_run(&job) != 0) rc = 130;
        else if (job.exit_code != 0) {
            char *log = read_file(job.out_path, NULL), *what = proc_describe(&job);
            ol_error(
                "the oracle failed (%s):\n%s\nTo rerun it by hand: cd %s && /usr/bin/python3 %s "
                "/tmp/out",
                what, log ? log : "", ctx.root, shown_path(&ctx, script));
            free(log);
            free(what);
            rc = OL_FAIL;
        }
        unlink(job.out_path);
        proc_job_free(&job);
    }
    char *made = rc == OL_PASS ? path_join(scratch, path_base(committed)) : NULL;
    strlist files = {0};
    if (rc == OL_PASS) list_tree(made, "", &files);
    if (rc == OL_PASS && files.n == 0) {
        ol_error("the oracle wrote nothing into OUT_DIR/%s/", path_base(committed));
        rc = OL_FAIL;
    }
    int diffs = 0, written = 0;
    for (int i = 0; rc == OL_PASS && i < files.n; i++) {
        const char *name = files.v[i];   /* relative to the fixtures folder */
        char *fresh = path_join(made, name), *old = path_join(committed, name);
        char *old_dir = xstrdup(old);
        *strrchr(old_dir, '/') = '\0';
        if (check) {
            if (!is_file(old)) {
                printf("  %s: new (not committed)\n", name);
                diffs++;
            } else if (ends_with(name, ".safetensors"))
                diffs += compare_safetensors(name, fresh, old);
            else if (ends_with(name, ".json")) diffs += compare_json(name, fresh, old);
            else diffs += compare_bytes(name, fresh, old);
        } else if (same_bytes(fresh, old)) {
            printf("  %s: unchanged\n", shown_path(&ctx, old));
        } else {
            /* what changed, said before the old file is gone */
            char *what = !is_file(old) ? xstrdup("new")
                         : ends_with(name, ".safetensors") ? safetensors_changes(fresh, old)
                         : ends_with(name, ".json") ? json_changes(fresh, old)
                                                    : xstrdup("changed");
            if (mkdir_p(old_dir) != 0 || copy_file_atomic(fresh, old) != 0) {
                ol_error("cannot write %s: %s", shown_path(&ctx, old), strerror(errno));
                rc = OL_USAGE;
            } else {
                printf("  wrote %s (%s)\n", shown_path(&ctx, old), what);
                written++;
            }
            free(what);
        }
        free(old_dir);
        free(fresh);
        free(old);
    }
    if (rc == OL_PASS) {
        /* committed files the oracle did not make are stale */
        strlist have = {0};
        list_tree(committed, "", &have);
        for (int i = 0; i < have.n; i++) {
            char *fresh = path_join(made, have.v[i]);
            if (!is_file(fresh)) {
                printf(
                    "  %s: committed, but the oracle does not make it (stale: delete it unless a "
                    "test reads it)\n",
                    have.v[i]);
                if (check) diffs++;
            }
            free(fresh);
        }
        sl_free(&have);
        if (check) {
            printf("%s: %s\n", l.id,
                   diffs ? "the committed fixtures differ from what the oracle makes (above)"
                         : "the committed fixtures are what the oracle makes");
            if (diffs)
                printf(
                    "If the oracle changed on purpose, `ol fixtures %s` rewrites them; else find "
                    "what changed the oracle's output (torch version, seed, script).\n",
                    l.id);
            rc = diffs ? OL_FAIL : OL_PASS;
        } else if (written) {
            printf(
                "%s: %d file%s rewritten. Next: `ol mutants verify %s` (the course tests on the "
                "new golden data), then commit %s.\n",
                l.id, written, written == 1 ? "" : "s", l.id, shown_path(&ctx, committed));
        } else {
            printf("%s: the oracle made exactly the committed fixtures; nothing changed\n", l.id);
        }
    }
    if (scratch) remove_tree(scratch, ctx.cache);
    sl_free(&files);
    free(made);
    free(scratch);
    free(tmp);
    free(script);
    free(committed);
    lesson_free(&l);
    ctx_free(&ctx);
    return rc;
}
