#include "mutant.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prebuilt.h"
#include "proc.h"

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) s[--n] = 0;
    return s;
}

/* "a/reference/x.c\t2024-..." -> "x.c"; NULL when not under reference/. */
static char *diff_path(const char *text, const char *prefix) {
    size_t n = strcspn(text, "\t\n\r");
    char *p = xstrndup(text, n);
    char *s = trim(p);
    size_t lp = strlen(prefix);
    char *out = NULL;
    if (strncmp(s, prefix, lp) == 0 && strncmp(s + lp, "reference/", 10) == 0)
        out = xstrdup(s + lp + 10);
    free(p);
    return out;
}

typedef struct {
    strlist removed, added;
    int first_old; /* the original line of the block's first removed (or next) line */
} block;

static void add_change(mutant *m, const char *file, int line, int col, int end, bool inserted) {
    m->changes = xrealloc(m->changes, (size_t)(m->nchanges + 1) * sizeof *m->changes);
    changed_line *c = &m->changes[m->nchanges++];
    c->file = xstrdup(file);
    c->line = line;
    c->column = col;
    c->end_column = end > col ? end : col + 1;
    c->inserted = inserted;
    c->function = NULL;
}

/* Closes a run of -/+ lines: each removed line is a change, located at the
 * columns where it differs from the line that replaced it. */
static void flush_block(mutant *m, const char *file, block *b, strbuf *replacement) {
    for (int i = 0; i < b->removed.n; i++) {
        const char *r = b->removed.v[i];
        const char *a = i < b->added.n ? b->added.v[i] : NULL;
        int lr = (int)strlen(r), col = 1, end = lr + 1;
        if (a) {
            int la = (int)strlen(a), p = 0, s = 0;
            while (p < lr && p < la && r[p] == a[p]) p++;
            while (s < lr - p && s < la - p && r[lr - 1 - s] == a[la - 1 - s]) s++;
            col = p + 1;
            end = lr - s + 1;
        }
        add_change(m, file, b->first_old + i, col, end, false);
    }
    if (b->removed.n == 0 && b->added.n > 0) add_change(m, file, b->first_old, 1, 2, true);
    for (int i = 0; i < b->added.n; i++) {
        if (replacement->len) sb_add(replacement, "\n");
        sb_add(replacement, trim(b->added.v[i]));
    }
    sl_free(&b->removed);
    sl_free(&b->added);
}

/* The lesson id of a file course/L7.x/mutants/NAME, for a command in a message. */
static char *lesson_of(const char *path) {
    char *dir = path_dirname(path), *up = path_dirname(dir);
    char *id = strchr(path, '/') ? xstrdup(path_base(up)) : xstrdup("L7.x");
    free(dir);
    free(up);
    return id;
}

/* The old and new lines a hunk's body holds, counted up to the next hunk or file
 * header (or the end), as the header's counts should say. */
static void hunk_body(const char *p, int *old_n, int *new_n) {
    int blanks = 0; /* empty lines count as context only when more body follows */
    *old_n = *new_n = 0;
    while (p && *p) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        if (n && p[n - 1] == '\r') n--;
        const char *next = eol ? eol + 1 : p + n;
        if (!strncmp(p, "@@ -", 4) || (!strncmp(p, "--- ", 4) && !strncmp(next, "+++ ", 4)))
            break;
        if (n == 0) {
            blanks++;
        } else if (p[0] == ' ' || p[0] == '-' || p[0] == '+') {
            *old_n += blanks + (p[0] != '+');
            *new_n += blanks + (p[0] != '-');
            blanks = 0;
        } else if (p[0] != '\\') {
            break; /* "diff --git", "index": the next file's lines */
        }
        p = next;
    }
}

/* Reads the diff hunk by hunk, counting each hunk's lines from its header,
 * so a removed line that itself starts with "-- " is not taken for a header. */
static int parse_diff(mutant *m, const char *path, int first_line, char **err) {
    char *copy = xstrdup(m->diff);
    char *file = NULL;
    int old = 0, old_left = 0, new_left = 0, lineno = first_line, hunks = 0, rc = 0;
    block b = {0};
    strbuf replacement = {0};
    for (char *line = copy, *next; line && *line && rc == 0; line = next, lineno++) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        size_t len = strlen(line);
        if (len && line[len - 1] == '\r') line[--len] = 0;
        if (old_left > 0 || new_left > 0) {
            if (line[0] == '\\') continue; /* "\ No newline at end of file" */
            if (line[0] == '-' || line[0] == '+') {
                if (!b.removed.n && !b.added.n) b.first_old = old;
                if (line[0] == '-') {
                    sl_push(&b.removed, line + 1);
                    old++;
                    old_left--;
                } else {
                    sl_push(&b.added, line + 1);
                    new_left--;
                }
            } else { /* context (an empty line: an editor dropped its space) */
                if (b.removed.n || b.added.n) flush_block(m, file, &b, &replacement);
                old++;
                old_left--;
                new_left--;
            }
            if (old_left <= 0 && new_left <= 0 && (b.removed.n || b.added.n))
                flush_block(m, file, &b, &replacement);
            continue;
        }
        if (strncmp(line, "--- ", 4) == 0) {
            free(file);
            file = diff_path(line + 4, "a/");
            if (!file) {
                *err = xasprintf(
                    "%s:%d: the diff must be against reference/ (\"--- a/reference/...\")", path,
                    lineno);
                rc = -1;
            }
        } else if (strncmp(line, "+++ ", 4) == 0) {
            char *to = diff_path(line + 4, "b/");
            if (!to || !file || strcmp(to, file) != 0) {
                *err = xasprintf("%s:%d: \"+++\" must name the same reference file as \"---\"",
                                 path, lineno);
                rc = -1;
            }
            free(to);
        } else if (strncmp(line, "@@ -", 4) == 0) {
            int a = 0, bcount = 1, c = 0, d = 1;
            const char *q = line + 4;
            char *end;
            a = (int)strtol(q, &end, 10);
            if (*end == ',') bcount = (int)strtol(end + 1, &end, 10);
            if (strncmp(end, " +", 2) == 0) {
                c = (int)strtol(end + 2, &end, 10);
                if (*end == ',') d = (int)strtol(end + 1, &end, 10);
            }
            if (!file || strncmp(end, " @@", 3) != 0) {
                *err = xasprintf(
                    "%s:%d: a hunk header must follow \"--- a/reference/...\" and read \"@@ -l,n "
                    "+l,n @@\"",
                    path, lineno);
                rc = -1;
                break;
            }
            (void)c;
            /* counts that disagree with the body would make lines vanish silently here
             * and confuse patch ("malformed patch at line N" of a file no one sees) */
            int body_old, body_new;
            hunk_body(next, &body_old, &body_new);
            if (body_old != bcount || body_new != d) {
                char *id = lesson_of(path);
                *err = xasprintf(
                    "%s:%d: a malformed diff: the hunk header \"%s\" counts %d old and %d new "
                    "lines, but the hunk holds %d and %d: correct its counts, or make the mutant "
                    "again (delete this file; `ol mutants new %s --from EDITED.c ...` writes the "
                    "diff)",
                    path, lineno, line, bcount, d, body_old, body_new, id);
                free(id);
                rc = -1;
                break;
            }
            /* with no old lines, the hunk inserts after line a */
            old = bcount == 0 ? a + 1 : a;
            old_left = bcount;
            new_left = d;
            hunks++;
        }
    }
    if (rc == 0 && file && (b.removed.n || b.added.n)) flush_block(m, file, &b, &replacement);
    sl_free(&b.removed);
    sl_free(&b.added);
    if (rc == 0 && hunks == 0) {
        *err = xasprintf(
            "%s: no hunk (\"@@ -l,n +l,n @@\") after the \"---\" line: the diff is missing", path);
        rc = -1;
    }
    if (rc == 0 && m->nchanges == 0) {
        *err = xasprintf("%s: the diff changes nothing", path);
        rc = -1;
    }
    free(file);
    free(copy);
    m->replacement = sb_take(&replacement);
    return rc;
}

int mutant_parse(const char *path, const char *text, bool wheat, mutant *m, char **err) {
    memset(m, 0, sizeof *m);
    *err = NULL;
    m->wheat = wheat;
    m->path = xstrdup(path);
    const char *id_key = wheat ? "Wheat" : "Mutant";
    const char *p = text;
    int lineno = 1, id_line = 0, pitfall_line = 0;
    bool separated = false;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        char *line = xstrndup(p, n);
        char *t = trim(line);
        p = eol ? eol + 1 : p + n;
        if (strcmp(t, "---") == 0) {
            free(line);
            separated = true;
            lineno++;
            break;
        }
        if (*t && *t != '#') {
            char *colon = strchr(t, ':');
            if (!colon) {
                *err =
                    xasprintf("%s:%d: expected \"Key: value\" or the line \"---\"", path, lineno);
                free(line);
                return -1;
            }
            *colon = 0;
            char *key = trim(t), *value = trim(colon + 1);
            char **slot = NULL;
            if (strcmp(key, id_key) == 0) {
                slot = &m->id;
                id_line = lineno;
            } else if (strcmp(key, "Pitfall") == 0) {
                slot = &m->pitfall;
                pitfall_line = lineno;
            }
            else if (strcmp(key, "Title") == 0) slot = &m->title;
            else if (strcmp(key, "Symptom") == 0) slot = &m->symptom;
            else if (strcmp(key, "Hint") == 0) slot = &m->hint;
            else if (strcmp(key, "Caught-by") == 0 && !wheat) {
                for (char *save = NULL, *w = strtok_r(value, ", ", &save); w;
                     w = strtok_r(NULL, ", ", &save))
                    sl_push(&m->caught_by, w);
            } else {
                *err = xasprintf("%s:%d: unknown key \"%s\" (a %s knows %s)", path, lineno, key,
                                 wheat ? "wheat" : "mutant",
                                 wheat ? "Wheat, Title, Symptom"
                                       : "Mutant, Pitfall, Title, Symptom, Caught-by, Hint");
                free(line);
                return -1;
            }
            if (slot) {
                if (*slot) {
                    *err = xasprintf("%s:%d: \"%s\" is given twice", path, lineno, key);
                    free(line);
                    return -1;
                }
                *slot = xstrdup(value);
            }
        }
        free(line);
        lineno++;
    }
    if (!separated) {
        *err = xasprintf("%s: no line \"---\" between the header and the diff", path);
        return -1;
    }
    if (!m->id || !*m->id) {
        *err = xasprintf("%s: the header has no \"%s:\" id", path, id_key);
        return -1;
    }
    /* what `ol mutants new` refuses, refused in a file written by hand too */
    if (!variant_id_valid(m->id, wheat)) {
        bool other_kind = variant_id_valid(m->id, !wheat);
        *err = xasprintf(
            "%s:%d: \"%s: %s\": a %s's id is '%c' and two or more digits (like %s)%s", path,
            id_line, id_key, m->id, wheat ? "wheat" : "mutant", wheat ? 'w' : 's',
            wheat ? "w03" : "s13",
            !other_kind ? ""
            : wheat     ? "; s.. is a mutant's id: a mutant goes in mutants/ID-NAME.mutant"
                        : "; w.. is a wheat's id: a wheat goes in wheats/ID-NAME.wheat");
        return -1;
    }
    const char *base = path_base(path);
    size_t idn = strlen(m->id);
    if (strncmp(base, m->id, idn) != 0 || (base[idn] != '-' && base[idn] != '.')) {
        *err = xasprintf("%s:%d: the file's name does not start with its id %s: rename it to "
                         "%s-NAME.%s, or fix the id",
                         path, id_line, m->id, m->id, wheat ? "wheat" : "mutant");
        return -1;
    }
    if (m->pitfall && strcmp(m->pitfall, "-") != 0 &&
        (!*m->pitfall || strspn(m->pitfall, "0123456789") != strlen(m->pitfall))) {
        *err = xasprintf("%s:%d: \"Pitfall: %s\": give the number of its row in the chapter's "
                         "pitfall table (section 5), or - for an unnumbered one",
                         path, pitfall_line, m->pitfall);
        return -1;
    }
    if (!m->title || !*m->title) {
        *err = xasprintf("%s: the header has no \"Title:\"", path);
        return -1;
    }
    if (!wheat && m->caught_by.n == 0) {
        *err =
            xasprintf("%s: the header has no \"Caught-by:\" (the course test that kills it)", path);
        return -1;
    }
    if (!m->pitfall) m->pitfall = xstrdup("-");
    if (!m->symptom) m->symptom = xstrdup("");
    m->diff = xstrdup(p);
    m->diff_line = lineno;
    hasher *h = hash_new();
    hash_str(h, text);
    hash_done(h, m->key);
    return parse_diff(m, path, lineno, err);
}

void mutant_free(mutant *m) {
    free(m->id);
    free(m->pitfall);
    free(m->title);
    free(m->symptom);
    free(m->hint);
    sl_free(&m->caught_by);
    free(m->path);
    free(m->diff);
    free(m->replacement);
    for (int i = 0; i < m->nchanges; i++) {
        free(m->changes[i].file);
        free(m->changes[i].function);
    }
    free(m->changes);
    memset(m, 0, sizeof *m);
}

void mutants_free(mutant *m, int n) {
    for (int i = 0; i < n; i++) mutant_free(&m[i]);
    free(m);
}

/* A diff's change with every blank removed: its files and its -/+ lines. */
static char *change_signature(const mutant *m) {
    strbuf b = {0};
    for (const char *line = m->diff; line && *line;) {
        const char *eol = strchr(line, '\n');
        size_t n = eol ? (size_t)(eol - line) : strlen(line);
        bool header = n >= 4 && (!strncmp(line, "--- ", 4) || !strncmp(line, "+++ ", 4));
        if (header || (n && (line[0] == '-' || line[0] == '+'))) {
            for (size_t k = 0; k < n; k++)
                if (!isspace((unsigned char)line[k])) sb_addn(&b, &line[k], 1);
            sb_add(&b, "\n");
        }
        line = eol ? eol + 1 : line + n;
    }
    return sb_take(&b);
}

const mutant *mutant_twin(const mutant *m, const mutant *others, int n) {
    char *mine = change_signature(m);
    const mutant *found = NULL;
    for (int i = 0; i < n && !found; i++) {
        if (&others[i] == m) continue;
        char *theirs = change_signature(&others[i]);
        if (!strcmp(mine, theirs)) found = &others[i];
        free(theirs);
    }
    free(mine);
    return found;
}

char *mutant_twin_error(const mutant *m, const mutant *twin) {
    return xasprintf("%s makes the change %s already makes (spaces aside): it would count twice "
                     "in every score; delete one",
                     m->path, twin->path);
}

void mutants_stray_files(const char *dir, bool wheats, strlist *out) {
    DIR *d = opendir(dir);
    const char *suffix = wheats ? ".wheat" : ".mutant";
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name), k = strlen(suffix);
        bool ours = n > k && strcmp(e->d_name + n - k, suffix) == 0;
        char *full = path_join(dir, e->d_name);
        if (e->d_name[0] != '.' && !ours && is_file(full)) sl_push_owned(out, full);
        else free(full);
    }
    if (d) closedir(d);
    sl_sort(out);
}

int mutants_load(const char *dir, bool wheats, mutant **out, int *n, char **err) {
    *out = NULL;
    *n = 0;
    *err = NULL;
    strlist files = {0};
    if (is_dir(dir)) list_files(dir, wheats ? ".wheat" : ".mutant", &files);
    *out = xcalloc((size_t)files.n + 1, sizeof **out);
    for (int i = 0; i < files.n; i++) {
        char *text = read_file(files.v[i], NULL);
        if (!text) {
            *err = xasprintf("cannot read %s", files.v[i]);
            break;
        }
        mutant *m = &(*out)[*n];
        int rc = mutant_parse(files.v[i], text, wheats, m, err);
        free(text);
        if (rc != 0) {
            mutant_free(m);
            break;
        }
        (*n)++;
        for (int k = 0; k < *n - 1; k++)
            if (strcmp((*out)[k].id, m->id) == 0) {
                *err = xasprintf("%s and %s both have the id %s: ids must be unique in a lesson",
                                 (*out)[k].path, m->path, m->id);
                break;
            }
        const mutant *twin = *err ? NULL : mutant_twin(m, *out, *n - 1);
        if (twin) *err = mutant_twin_error(m, twin);
        if (*err) break;
    }
    sl_free(&files);
    if (*err) {
        mutants_free(*out, *n);
        *out = NULL;
        *n = 0;
        return -1;
    }
    return 0;
}

static char *json_text(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? xstrdup(v->valuestring) : NULL;
}

static int json_int(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valueint : 0;
}

int mutants_load_prebuilt(ol_ctx *ctx, const lesson *l, bool wheats, mutant **out, int *n,
                          char **err) {
    *out = NULL;
    *n = 0;
    cJSON *manifest = prebuilt_manifest(ctx, l, err);
    if (!manifest) return -1;
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(manifest, wheats ? "wheats" : "mutants");
    *out = xcalloc((size_t)cJSON_GetArraySize(list) + 1, sizeof **out);
    const cJSON *e;
    cJSON_ArrayForEach(e, list) {
        mutant *m = &(*out)[*n];
        m->wheat = wheats;
        m->id = json_text(e, "id");
        m->title = json_text(e, "title");
        if (!m->id || !m->title) {
            *err = xasprintf("prebuilt/%s/manifest.json: a %s without \"id\" or \"title\": the "
                             "release is damaged (ask for a new one)",
                             l->id, wheats ? "wheat" : "mutant");
            break;
        }
        m->pitfall = json_text(e, "pitfall");
        if (!m->pitfall) m->pitfall = xstrdup("-");
        m->symptom = json_text(e, "symptom");
        if (!m->symptom) m->symptom = xstrdup("");
        m->hint = json_text(e, "hint");
        m->path = xasprintf("%s/prebuilt/%s/manifest.json (%s)", ctx->root, l->id, m->id);
        m->diff = xstrdup("");
        m->replacement = xstrdup("");
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(e, "changes")) {
            char *file = json_text(c, "file");
            if (file) {
                add_change(m, file, json_int(c, "line"), json_int(c, "column"),
                           json_int(c, "end_column"),
                           cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "inserted")));
                m->changes[m->nchanges - 1].function = json_text(c, "function");
            }
            free(file);
        }
        char *text = cJSON_PrintUnformatted(e);
        hasher *h = hash_new();
        hash_str(h, text);
        hash_done(h, m->key);
        free(text);
        (*n)++;
    }
    cJSON_Delete(manifest);
    if (*err) {
        mutants_free(*out, *n + 1);
        *out = NULL;
        *n = 0;
        return -1;
    }
    return 0;
}

const changed_line *mutant_first_change(const mutant *m) {
    return m->nchanges ? &m->changes[0] : NULL;
}

/* The digest of a patched copy's sources (its seal). */
static void patched_digest(const char *dir, const lesson *l, char out[HASH_HEX]) {
    hasher *h = hash_new();
    hash_str(h, "patched-sources");
    for (int i = 0; i < l->sources.n; i++) {
        char *src = xasprintf("%s/reference/%s", dir, l->sources.v[i]);
        hash_file(h, src);
        free(src);
    }
    hash_done(h, out);
}

/* Every source of l copied to dir/reference/. */
static int copy_sources(ol_ctx *ctx, const lesson *l, const char *dir, char **err) {
    for (int i = 0; i < l->sources.n; i++) {
        char *src = xasprintf("%s/reference/%s", ctx->root, l->sources.v[i]);
        char *dst = xasprintf("%s/reference/%s", dir, l->sources.v[i]);
        char *dst_dir = path_dirname(dst);
        bool ok = mkdir_p(dst_dir) == 0 && copy_file_atomic(src, dst) == 0;
        if (!ok) *err = xasprintf("cannot copy %s into a scratch folder", src);
        free(dst_dir);
        free(src);
        free(dst);
        if (!ok) return -1;
    }
    return 0;
}

/* Applies m's diff in dir with GNU patch: exactly (no offset, no fuzz), or
 * as patch can (offsets, and fuzz up to 2 lines of context). 0, or -1 with
 * *err: what patch said, and the hunks it rejected. */
static int patch_in(const mutant *m, const char *dir, bool exact, char **err) {
    char *diff_file = path_join(dir, "change.diff"), *rejects = path_join(dir, "change.rej");
    if (write_file_atomic(diff_file, m->diff, strlen(m->diff)) != 0) {
        *err = xstrdup("cannot write the diff into a scratch folder");
        free(diff_file);
        free(rejects);
        return -1;
    }
    proc_job job = {0};
    proc_arg(&job, "patch");
    proc_arg(&job, "-p1");
    proc_arg(&job, "--batch");
    proc_arg(&job, "--forward");
    proc_arg(&job, exact ? "--fuzz=0" : "--fuzz=2");
    proc_arg(&job, "--no-backup-if-mismatch");
    proc_argf(&job, "--reject-file=%s", rejects);
    proc_arg(&job, "-i");
    proc_arg(&job, "change.diff");
    job.cwd = xstrdup(dir);
    job.out_path = path_join(dir, "patch.log");
    int rc = proc_run(&job) == 0 ? 0 : -1;
    char *said = read_file(job.out_path, NULL);
    /* an offset means the reference moved under the mutant: its line numbers
     * (reports, coverage) would be wrong too */
    bool moved = exact && said && (strstr(said, "offset") || strstr(said, "fuzz"));
    if (rc == 0 && (job.exit_code != 0 || moved)) {
        char *rej = read_file(rejects, NULL);
        *err = xasprintf("%s%s%s", said ? said : "",
                         rej && *rej ? "the hunk patch could not place:\n" : "", rej ? rej : "");
        free(rej);
        rc = -1;
    } else if (rc != 0) {
        *err = xstrdup("patch was interrupted");
    }
    free(said);
    unlink(job.out_path);
    unlink(rejects);
    unlink(diff_file);
    proc_job_free(&job);
    free(diff_file);
    free(rejects);
    return rc;
}

char *mutant_apply(ol_ctx *ctx, const lesson *l, const mutant *m, char **err) {
    *err = NULL;
    if (prebuilt_release(ctx)) return prebuilt_variant_dir(ctx, l->id, m->id);
    for (int i = 0; i < m->nchanges; i++)
        if (!sl_contains(&l->sources, m->changes[i].file)) {
            *err = xasprintf(
                "%s changes reference/%s, which is not a source of %s (lesson.json \"sources\")",
                m->path, m->changes[i].file, l->id);
            return NULL;
        }
    char key[HASH_HEX];
    hasher *h = hash_new();
    hash_str(h, "patched-1");
    hash_str(h, m->key);
    for (int i = 0; i < l->sources.n; i++) {
        char *src = xasprintf("%s/reference/%s", ctx->root, l->sources.v[i]);
        hash_str(h, l->sources.v[i]);
        hash_file(h, src);
        free(src);
    }
    hash_done(h, key);
    char *base = ctx_cache_dir(ctx, "patched");
    if (!base) {
        *err = xstrdup("cannot create the scratch folder for patched copies");
        return NULL;
    }
    char *dir = path_join(base, key);
    char *done = path_join(dir, ".done");
    /* .done holds the digest of the patched sources: a copy spoiled since is made again */
    char *sealed = read_file(done, NULL), digest[HASH_HEX];
    patched_digest(dir, l, digest);
    bool ready = sealed && strcmp(sealed, digest) == 0;
    free(sealed);
    free(done);
    if (ready) {
        free(base);
        return dir;
    }
    if (is_dir(dir)) remove_tree(dir, ctx->cache);
    char *tmp = make_temp_dir(base, "new");
    int ok = tmp != NULL && copy_sources(ctx, l, tmp, err) == 0;
    char *said = NULL;
    char *bad = NULL;
    if (ok && patch_in(m, tmp, true, &said) != 0 &&
        (bad = strstr(said, "malformed patch at line ")) != NULL) {
        /* patch counts lines of the diff alone: say the .mutant file's line */
        int at = atoi(bad + strlen("malformed patch at line "));
        *err = xasprintf(
            "%s:%d: a malformed diff (patch: %.*s): correct it, or make the mutant again "
            "(delete this file; `ol mutants new %s --from EDITED.c ...` writes the diff)",
            shown_path(ctx, m->path), m->diff_line + at - 1, (int)strcspn(bad, "\n"), bad,
            l->id);
        ok = 0;
    } else if (ok && said) {
        *err = xasprintf(
            "%s no longer applies exactly to the current reference (a stale mutant):\n%s"
            "run `ol mutants rebase %s %s`: it re-anchors the diff on the current reference and "
            "verifies it again",
            shown_path(ctx, m->path), said, l->id, m->id);
        ok = 0;
    }
    free(said);
    if (ok) {
        char *marker = path_join(tmp, ".done"), sum[HASH_HEX];
        patched_digest(tmp, l, sum);
        write_file_atomic(marker, sum, strlen(sum));
        free(marker);
        if (rename(tmp, dir) != 0 && !is_dir(dir)) ok = 0;
    }
    if (tmp && is_dir(tmp)) remove_tree(tmp, ctx->cache);
    free(tmp);
    free(base);
    if (!ok) {
        if (!*err) *err = xasprintf("cannot prepare the patched copy for %s", m->path);
        free(dir);
        return NULL;
    }
    return dir;
}

char *mutant_rebase_diff(ol_ctx *ctx, const lesson *l, const mutant *m, char **err) {
    *err = NULL;
    char *base = ctx_cache_dir(ctx, "tmp");
    char *tmp = base ? make_temp_dir(base, "rebase") : NULL;
    char *said = NULL, *out = NULL;
    if (!tmp) *err = xstrdup("cannot create a scratch folder");
    else if (copy_sources(ctx, l, tmp, err) == 0 && patch_in(m, tmp, false, &said) != 0)
        *err = xasprintf("patch cannot place it even with offsets and fuzz:\n%s", said);
    else if (!*err) {
        /* the new diff: the current reference against the patched copy, file by file */
        strbuf diff = {0};
        strlist files = {0};
        for (int i = 0; i < m->nchanges; i++)
            if (!sl_contains(&files, m->changes[i].file)) sl_push(&files, m->changes[i].file);
        for (int i = 0; i < files.n && !*err; i++) {
            proc_job job = {0};
            proc_arg(&job, "diff");
            proc_arg(&job, "-u");
            proc_argf(&job, "--label=a/reference/%s", files.v[i]);
            proc_argf(&job, "--label=b/reference/%s", files.v[i]);
            proc_argf(&job, "%s/reference/%s", ctx->root, files.v[i]);
            proc_argf(&job, "%s/reference/%s", tmp, files.v[i]);
            job.out_path = path_join(tmp, "new.diff");
            if (proc_run(&job) != 0) *err = xstrdup("diff was interrupted");
            else if (job.exit_code == 0)
                *err = xasprintf("once placed, it changes nothing in reference/%s", files.v[i]);
            else if (job.exit_code != 1)
                *err = xasprintf("diff could not compare reference/%s", files.v[i]);
            else {
                char *text = read_file(job.out_path, NULL);
                sb_add(&diff, text ? text : "");
                free(text);
            }
            proc_job_free(&job);
        }
        sl_free(&files);
        if (!*err) out = sb_take(&diff);
        else sb_free(&diff);
    }
    free(said);
    if (tmp) remove_tree(tmp, ctx->cache);
    free(tmp);
    free(base);
    return out;
}

char *mutant_header(const char *text) {
    const char *p = text;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        char *line = xstrndup(p, n);
        bool sep = strcmp(trim(line), "---") == 0;
        free(line);
        p = eol ? eol + 1 : p + n;
        if (sep) return xstrndup(text, (size_t)(p - text));
    }
    return NULL;
}
