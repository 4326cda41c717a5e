#include "cdecl.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* text without comments and preprocessor lines (continuations included);
 * newlines are kept, so offsets keep their line numbers. */
static char *clean(const char *text) {
    size_t n = strlen(text);
    char *out = xmalloc(n + 1);
    size_t k = 0;
    bool line_start = true, in_directive = false;
    for (size_t i = 0; i < n;) {
        char c = text[i];
        if (in_directive) {
            if (c == '\\' && text[i + 1] == '\n') {
                out[k++] = '\n';
                i += 2;
                continue;
            }
            if (c == '\n')
                in_directive = false;
            else if (c == '/' && text[i + 1] == '*') {
                /* a comment inside a directive: drop it, keep its newlines */
                i += 2;
                while (i < n && !(text[i] == '*' && text[i + 1] == '/')) {
                    if (text[i] == '\n') out[k++] = '\n';
                    i++;
                }
                i += 2;
                continue;
            } else {
                i++;
                continue;
            }
        }
        if (c == '/' && text[i + 1] == '*') {
            i += 2;
            while (i < n && !(text[i] == '*' && text[i + 1] == '/')) {
                if (text[i] == '\n') out[k++] = '\n';
                i++;
            }
            i = i < n ? i + 2 : n;
            out[k++] = ' ';
            continue;
        }
        if (c == '/' && text[i + 1] == '/') {
            while (i < n && text[i] != '\n') i++;
            continue;
        }
        if (line_start && c == '#') {
            in_directive = true;
            i++;
            continue;
        }
        if (c == '"' || c == '\'') { /* a literal, copied whole */
            out[k++] = text[i++];
            while (i < n && text[i] != c && text[i] != '\n') {
                if (text[i] == '\\' && i + 1 < n) out[k++] = text[i++];
                out[k++] = text[i++];
            }
            if (i < n) out[k++] = text[i++];
            line_start = false;
            continue;
        }
        if (c == '\n')
            line_start = true;
        else if (!isspace((unsigned char)c))
            line_start = false;
        out[k++] = c;
        i++;
    }
    out[k] = 0;
    return out;
}

static bool ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* s[from, to) with runs of blanks as one space, trimmed. */
static char *squeeze(const char *s, size_t from, size_t to) {
    strbuf b = {0};
    bool space = false;
    for (size_t i = from; i < to; i++) {
        if (isspace((unsigned char)s[i])) {
            space = b.len > 0;
            continue;
        }
        if (space) sb_add(&b, " ");
        space = false;
        sb_addn(&b, &s[i], 1);
    }
    return sb_take(&b);
}

static bool starts_word(const char *s, const char *word) {
    size_t n = strlen(word);
    return strncmp(s, word, n) == 0 && !ident_char(s[n]);
}

static bool has_word(const char *s, const char *word) {
    size_t n = strlen(word);
    for (const char *p = strstr(s, word); p; p = strstr(p + 1, word))
        if ((p == s || !ident_char(p[-1])) && !ident_char(p[n])) return true;
    return false;
}

/* The index of the parenthesis matching s[open] ('('), or -1. */
static long matching(const char *s, size_t open, size_t end) {
    int depth = 0;
    for (size_t i = open; i < end; i++) {
        if (s[i] == '(')
            depth++;
        else if (s[i] == ')' && --depth == 0)
            return (long)i;
    }
    return -1;
}

static ret_kind kind_of(const char *ret) {
    if (strchr(ret, '*')) return RET_POINTER;
    /* without qualifiers */
    strbuf b = {0};
    char *copy = xstrdup(ret);
    for (char *save = NULL, *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        if (!strcmp(w, "const") || !strcmp(w, "extern") || !strcmp(w, "volatile")) continue;
        if (b.len) sb_add(&b, " ");
        sb_add(&b, w);
    }
    free(copy);
    char *t = sb_take(&b);
    ret_kind k = RET_OTHER;
    static const char *const SIGNED[] = {"int",       "long",     "short",   "char",    "signed",
                                         "int8_t",    "int16_t",  "int32_t", "int64_t", "ssize_t",
                                         "ptrdiff_t", "intptr_t", "off_t",   "intmax_t"};
    static const char *const UNSIGNED[] = {"size_t",   "uint8_t",   "uint16_t", "uint32_t",
                                           "uint64_t", "uintptr_t", "uintmax_t"};
    if (!strcmp(t, "void"))
        k = RET_VOID;
    else if (!strcmp(t, "bool") || !strcmp(t, "_Bool"))
        k = RET_BOOL;
    else if (has_word(t, "float") || has_word(t, "double"))
        k = RET_FLOAT;
    else if (has_word(t, "unsigned"))
        k = RET_UNSIGNED;
    for (size_t i = 0; k == RET_OTHER && i < sizeof UNSIGNED / sizeof *UNSIGNED; i++)
        if (!strcmp(t, UNSIGNED[i])) k = RET_UNSIGNED;
    for (size_t i = 0; k == RET_OTHER && i < sizeof SIGNED / sizeof *SIGNED; i++)
        if (has_word(t, SIGNED[i])) k = RET_SIGNED;
    free(t);
    return k;
}

static bool is_keyword(const char *w) {
    static const char *const WORDS[] = {
        "int",      "char",   "long",  "short",    "float",    "double", "void", "bool", "_Bool",
        "unsigned", "signed", "const", "volatile", "restrict", "struct", "enum", "union"};
    for (size_t i = 0; i < sizeof WORDS / sizeof *WORDS; i++)
        if (!strcmp(w, WORDS[i])) return true;
    return false;
}

/* The name of one parameter as written ("const float *x", "int (*fn)(int)",
 * "float v[4]"), or NULL when it has none ("int", "const char *"). */
static char *param_name(const char *p) {
    const char *fp = strstr(p, "(*");
    if (fp) { /* a function pointer: the name follows "(*" */
        const char *q = fp + 2;
        while (*q == ' ') q++;
        size_t n = 0;
        while (ident_char(q[n])) n++;
        return n ? xstrndup(q, n) : NULL;
    }
    /* the tokens before any "[": identifiers and '*' */
    size_t end = strcspn(p, "[");
    strlist tokens = {0};
    for (size_t i = 0; i < end;) {
        if (ident_char(p[i])) {
            size_t k = i;
            while (k < end && ident_char(p[k])) k++;
            char *w = xstrndup(p + i, k - i);
            sl_push_owned(&tokens, w);
            i = k;
        } else {
            if (p[i] == '*') sl_push(&tokens, "*");
            i++;
        }
    }
    char *name = NULL;
    const char *last = tokens.n ? tokens.v[tokens.n - 1] : "*";
    /* a name follows a type: a word that is not a qualifier or a tag, or a '*' */
    bool typed = false;
    for (int i = 0; i + 1 < tokens.n; i++) {
        const char *t = tokens.v[i];
        bool qualifier = !strcmp(t, "const") || !strcmp(t, "volatile") || !strcmp(t, "restrict") ||
                         !strcmp(t, "struct") || !strcmp(t, "enum") || !strcmp(t, "union");
        typed = typed || !qualifier;
    }
    if (strcmp(last, "*") != 0 && !is_keyword(last) && !isdigit((unsigned char)last[0]) && typed)
        name = xstrdup(last);
    sl_free(&tokens);
    return name;
}

static void function_free(c_function *f) {
    free(f->name);
    free(f->ret);
    free(f->signature);
    sl_free(&f->params);
    memset(f, 0, sizeof *f);
}

static int line_of(const char *s, size_t at) {
    int line = 1;
    for (size_t i = 0; i < at && s[i]; i++) line += s[i] == '\n';
    return line;
}

/* One file-level declaration s[from, to): a prototype goes into out. */
static int read_declaration(const char *s, size_t from, size_t to, c_function **out, int *n,
                            char **err) {
    while (from < to && isspace((unsigned char)s[from])) from++;
    if (starts_word(s + from, "typedef") || starts_word(s + from, "static")) return 0;
    size_t open = from;
    while (open < to && s[open] != '(') open++;
    if (open >= to) return 0; /* a variable, or nothing */
    long close = matching(s, open, to);
    if (close < 0) {
        *err = xasprintf("%d: unbalanced parentheses in a declaration", line_of(s, from));
        return -1;
    }
    size_t name_end = open;
    while (name_end > from && isspace((unsigned char)s[name_end - 1])) name_end--;
    size_t name_start = name_end;
    while (name_start > from && ident_char(s[name_start - 1])) name_start--;
    if (name_start == name_end) return 0; /* "int (*fp)(int);": a pointer variable */
    c_function f = {0};
    f.line = line_of(s, name_start);
    f.name = xstrndup(s + name_start, name_end - name_start);
    char *ret = squeeze(s, from, name_start);
    if (starts_word(ret, "extern")) {
        char *rest = xstrdup(ret + 6 + (ret[6] == ' '));
        free(ret);
        ret = rest;
    }
    f.ret = ret;
    f.kind = kind_of(ret);
    char *params = squeeze(s, open + 1, (size_t)close);
    /* split at the commas outside parentheses */
    int depth = 0;
    size_t start = 0, len = strlen(params);
    int index = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && params[i] == '(') depth++;
        if (i < len && params[i] == ')') depth--;
        if (i < len && (params[i] != ',' || depth > 0)) continue;
        char *p = squeeze(params, start, i);
        start = i + 1;
        index++;
        if ((!strcmp(p, "void") && index == 1 && i == len) || !strcmp(p, "...") || !*p) {
            free(p);
            continue;
        }
        char *name = param_name(p);
        if (!name) {
            *err = xasprintf("%d: parameter %d of %s (\"%s\") has no name: name it in the contract",
                             f.line, index, f.name, p);
            free(p);
            free(params);
            function_free(&f);
            return -1;
        }
        sl_push_owned(&f.params, name);
        free(p);
    }
    const char *space = f.ret[0] && f.ret[strlen(f.ret) - 1] == '*' ? "" : " ";
    f.signature = xasprintf("%s%s%s(%s)", f.ret, space, f.name, params);
    free(params);
    *out = xrealloc(*out, (size_t)(*n + 1) * sizeof **out);
    (*out)[(*n)++] = f;
    return 0;
}

/* Walks the file-level items of text: declarations (to a ';') go to
 * read_declaration when out is given; definitions (a ')' then a body) to
 * defined when it is given. */
static int walk(const char *text, c_function **out, int *n, strlist *defined, c_span **spans,
                int *nspans, char **err) {
    char *s = clean(text);
    size_t len = strlen(s), item = 0;
    int rc = 0;
    int paren = 0;
    for (size_t i = 0; i < len && rc == 0; i++) {
        char c = s[i];
        if (c == '"' || c == '\'') { /* skip a literal */
            for (i++; i < len && s[i] != c; i++)
                if (s[i] == '\\') i++;
            continue;
        }
        if (c == '(')
            paren++;
        else if (c == ')')
            paren--;
        else if (c == ';' && paren == 0) {
            if (out) rc = read_declaration(s, item, i, out, n, err);
            item = i + 1;
        } else if (c == '{' && paren == 0) {
            size_t back = i;
            while (back > item && isspace((unsigned char)s[back - 1])) back--;
            bool body = back > item && s[back - 1] == ')';
            /* skip to the matching brace */
            int depth = 0;
            size_t j = i;
            for (; j < len; j++) {
                if (s[j] == '"' || s[j] == '\'') {
                    char q = s[j];
                    for (j++; j < len && s[j] != q; j++)
                        if (s[j] == '\\') j++;
                } else if (s[j] == '{')
                    depth++;
                else if (s[j] == '}' && --depth == 0)
                    break;
            }
            if (body) {
                if (defined) {
                    size_t open = item;
                    while (open < back && s[open] != '(') open++;
                    size_t e = open;
                    while (e > item && isspace((unsigned char)s[e - 1])) e--;
                    size_t b = e;
                    while (b > item && ident_char(s[b - 1])) b--;
                    if (b < e) {
                        char *name = xstrndup(s + b, e - b);
                        if (!sl_contains(defined, name)) sl_push(defined, name);
                        if (spans) {
                            *spans = xrealloc(*spans, (size_t)(*nspans + 1) * sizeof **spans);
                            (*spans)[(*nspans)++] = (c_span){.name = xstrdup(name),
                                                             .first = line_of(s, b),
                                                             .last = line_of(s, j)};
                        }
                        free(name);
                    }
                }
                item = j + 1; /* a definition ends at its brace */
            }
            i = j; /* a struct's body: its declaration ends at the ';' after it */
        }
    }
    free(s);
    return rc;
}

int cdecl_prototypes(const char *text, c_function **out, int *n, char **err) {
    *out = NULL;
    *n = 0;
    *err = NULL;
    if (walk(text, out, n, NULL, NULL, NULL, err) == 0) return 0;
    cdecl_free(*out, *n);
    *out = NULL;
    *n = 0;
    return -1;
}

void cdecl_definitions(const char *text, strlist *names) {
    char *err = NULL;
    walk(text, NULL, NULL, names, NULL, NULL, &err);
    free(err);
}

int cdecl_spans(const char *text, c_span **out) {
    char *err = NULL;
    strlist names = {0};
    int n = 0;
    *out = NULL;
    walk(text, NULL, NULL, &names, out, &n, &err);
    sl_free(&names);
    free(err);
    return n;
}

void cdecl_spans_free(c_span *s, int n) {
    for (int i = 0; i < n; i++) free(s[i].name);
    free(s);
}

const char *cdecl_function_at(const c_span *s, int n, int line) {
    for (int i = 0; i < n; i++)
        if (line >= s[i].first && line <= s[i].last) return s[i].name;
    return NULL;
}

void cdecl_free(c_function *f, int n) {
    for (int i = 0; i < n; i++) function_free(&f[i]);
    free(f);
}
