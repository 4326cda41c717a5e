/* jinja_internal.h: what the Jinja files share (not a contract).
 *
 * jinja_lex.c       template text -> tokens (whitespace control, trim_blocks,
 *                   lstrip_blocks as transformers sets them)
 * jinja_parse.c     tokens -> a tree of nodes
 * jinja_value.c     values, the render's arena, printing, tojson, comparisons
 * jinja_context.c   a render's state and its error
 * jinja_eval.c      the tree -> output text
 * jinja_builtins.c  filters, tests, methods of strings, lists and dicts
 *
 * Everything a render allocates lives in one arena, freed when it ends.
 */
#ifndef TINYLLM_JINJA_INTERNAL_H
#define TINYLLM_JINJA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the arena --------------------------------------------------------- */

typedef struct jarena_chunk jarena_chunk;
typedef struct {
    jarena_chunk *head;
    bool failed;     /* an allocation failed: the render stops */
    bool over_budget;   /* ... because the render passed JINJA_ARENA_MAX */
    bool too_deep;      /* ... because a value would nest past JINJA_MAX_NESTING */
    size_t bytes;    /* held in chunks */
} jarena;

/* What one render may hold (its values, strings and every loop's state): a
 * chat template needs kilobytes; a runaway loop (range(1000000) nested) would
 * take the machine's memory and minutes before it ended. */
#define JINJA_ARENA_MAX ((size_t)256 << 20)

void *ja_alloc(jarena *a, size_t size);     /* zeroed; NULL (and failed) when out of memory */
char *ja_strndup(jarena *a, const char *s, size_t n);
void ja_free(jarena *a);

/* A growable string in the arena. */
typedef struct {
    jarena *arena;
    char *data;
    size_t len, cap;
} jstr;

void js_append(jstr *s, const char *data, size_t n);
void js_puts(jstr *s, const char *text);

/* Python's case mapping of the code point c at bytes [at, next) of s
 * (jinja_case.c): str.upper(), lower() or title() of it, written to out as
 * one to three code points, the count returned. lower() of a capital sigma
 * reads s around it (the final form ends a word). */
typedef enum { JCASE_UPPER, JCASE_LOWER, JCASE_TITLE } jcase;
int jcase_map(jcase kind, const char *s, size_t len, size_t at, size_t next, int32_t c,
              int32_t out[3]);
/* Unicode's Cased property (a letter with case), as CPython reads it. */
bool jcase_cased(int32_t c);

/* ---- values -------------------------------------------------------------- */

typedef enum {
    JV_UNDEFINED, JV_NONE, JV_BOOL, JV_INT, JV_FLOAT, JV_STRING, JV_LIST, JV_DICT,
    JV_MACRO, JV_BUILTIN, JV_METHOD
} jv_kind;

typedef struct jlist jlist;
typedef struct jdict jdict;
typedef struct jnode jnode;
typedef struct jframe jframe;

typedef struct jv {
    jv_kind kind;
    union {
        bool b;
        int64_t i;
        double f;
        struct {
            const char *s;
            size_t len;
        } str;
        jlist *list;       /* JV_LIST (tuples too: is_tuple) */
        jdict *dict;       /* JV_DICT (namespaces too) */
        struct {
            const jnode *node;     /* the macro definition */
            jframe *scope;         /* where it was defined */
        } macro;
        struct {
            const char *name;      /* a global function or a method */
            const struct jv *self; /* the object of a method */
        } fn;
    } u;
    const char *undefined_name;    /* JV_UNDEFINED: what was looked up, for messages */
} jv;

struct jlist {
    jv *items;
    size_t count, cap;
    bool is_tuple;     /* prints as (a, b); never equal to a list, as in Python */
    int depth;         /* 1 + the deepest item's: at most JINJA_MAX_NESTING (jl_push) */
};

struct jdict {
    jv *keys, *values;
    size_t count, cap;
    bool is_namespace;     /* namespace(): attributes can be set */
    int depth;             /* as jlist's */
};

jv jv_undefined(const char *name);
jv jv_none(void);
jv jv_bool(bool b);
jv jv_int(int64_t i);
jv jv_float(double f);
jv jv_string(const char *s, size_t len);   /* borrowed: s must outlive the render */
jv jv_cstring(const char *s);
jv jv_new_list(jarena *a);
jv jv_new_dict(jarena *a);
void jl_push(jarena *a, jlist *l, jv v);
void jd_set(jarena *a, jdict *d, jv key, jv value);
/* The value at key, or NULL. */
jv *jd_get(const jdict *d, jv key);
jv *jd_get_str(const jdict *d, const char *key);

bool jv_truthy(jv v);
bool jv_equal(jv a, jv b);
/* -1, 0, 1 into *order; false when the two cannot be ordered (e.g. str < int). */
bool jv_compare(jv a, jv b, int *order);
const char *jv_type_name(jv v);

/* Appends v as {{ v }} prints it (Python's str(): None, True, 1.0, ['a']). */
void jv_print(jstr *out, jv v);
/* Appends json.dumps(v, ensure_ascii=False, indent=indent) (indent < 0: none,
 * separators ", " and ": "; with an indent, "," and ": "). sort_keys sorts
 * dict keys. Returns false when v holds something JSON cannot (a macro, an
 * undefined value: json.dumps raises on both). */
/* json.dumps' options: indent NULL for one line (else the text of one level,
 * "" for newlines alone), separators NULL for json.dumps' defaults. */
typedef struct {
    const char *indent, *item_sep, *key_sep;
    size_t indent_len, item_sep_len, key_sep_len;
    bool sort_keys, ensure_ascii;
} jv_json_style;
bool jv_tojson(jstr *out, jv v, const jv_json_style *style);
/* A JSON text as a value (objects keep their key order; numbers are int or
 * float as Python's json reads them). False on bad JSON, and on a value this
 * cannot hold (a \u0000 in a string, an int past int64), said in why. */
bool jv_from_json(jarena *a, const char *json, jv *out, char *why, size_t why_size);

/* ---- tokens and nodes ---------------------------------------------------------- */

typedef enum {
    JT_TEXT, JT_VAR_BEGIN, JT_VAR_END, JT_BLOCK_BEGIN, JT_BLOCK_END,
    JT_NAME, JT_STRING, JT_INT, JT_FLOAT, JT_OP, JT_EOF
} jtok_kind;

typedef struct {
    jtok_kind kind;
    const char *text;     /* TEXT, NAME, STRING (unescaped), OP */
    size_t len;
    int64_t i;
    double f;
    int line;
} jtok;

typedef struct {
    jtok *items;
    size_t count, cap;
} jtokens;

typedef enum {
    /* statements */
    JN_BODY, JN_TEXT, JN_OUTPUT, JN_IF, JN_FOR, JN_SET, JN_SET_BLOCK, JN_MACRO, JN_BREAK,
    JN_CONTINUE, JN_FILTER_BLOCK, JN_GENERATION, JN_CALL_BLOCK,
    /* expressions */
    JN_LITERAL, JN_NAME, JN_LIST, JN_TUPLE, JN_DICT, JN_ATTR, JN_ITEM, JN_SLICE, JN_CALL,
    JN_FILTER, JN_TEST, JN_UNARY, JN_BINARY, JN_COMPARE, JN_AND, JN_OR, JN_NOT,
    JN_CONDITIONAL, JN_CONCAT, JN_KWARG, JN_SPLAT
} jnode_kind;

struct jnode {
    jnode_kind kind;
    int line;
    const char *name;          /* NAME, ATTR, FILTER, TEST, MACRO, KWARG, SPLAT, operators */
    size_t name_len;
    jv value;                  /* LITERAL */
    jnode **kids;              /* children (meaning per kind, see jinja_parse.c) */
    size_t count;
    jnode *a, *b, *c, *d;      /* named children (meaning per kind) */
    bool negated;              /* TEST: is not; COMPARE: not in */
};

/* jinja_lex.c: tokens of a template, or false with tl_error set. */
bool jinja_lex(jarena *a, const char *source, size_t len, jtokens *out);
/* jinja_parse.c: the tree of a template, or NULL with tl_error set. */
jnode *jinja_parse(jarena *a, const jtokens *tokens);

/* ---- evaluation (jinja_eval.c, jinja_builtins.c) ---------------------------------- */

/* A scope: its variables, then its parent's. */
struct jframe {
    jframe *parent;
    jdict vars;
};

/* One render. */
typedef struct jctx {
    jarena *arena;
    jframe *globals;
    jstr *out;        /* where text goes (a macro call or a set block swaps it) */
    bool failed;
    int depth;        /* macro calls in progress */
    int nesting;      /* expressions and blocks being evaluated, one inside another */
} jctx;

/* How deep expressions and blocks may nest, in the parser and the renderer:
 * real templates nest a few levels; this bound keeps a hostile one (100,000
 * parentheses, a chain of a + a + ...) from overflowing the stack. */
enum { JINJA_MAX_NESTING = 256 };

/* jinja_context.c: sets the render's error ("line N: ...") unless one is
 * already set for this render (the first failure is the cause), and returns
 * false. */
bool jx_fail(jctx *x, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
jarena *jx_arena(jctx *x);
/* Calls a macro value with positional and keyword arguments. */
bool jx_call_macro(jctx *x, jv macro, const jv *args, size_t n, const jv *kw_names,
                   const jv *kw_values, size_t nkw, int line, jv *out);

/* A filter by name: value | name(args, kwargs). */
bool jb_filter(jctx *x, const char *name, jv value, const jv *args, size_t n,
               const jv *kw_names, const jv *kw_values, size_t nkw, int line, jv *out);
/* A test by name: value is name(args). */
bool jb_test(jctx *x, const char *name, jv value, const jv *args, size_t n, int line,
             bool *out);
/* Whether obj has a method of that name (strings, lists, dicts, loop). */
bool jb_has_method(jv obj, const char *name);
/* A method call or a global function (JV_BUILTIN, JV_METHOD). */
bool jb_call(jctx *x, jv fn, const jv *args, size_t n, const jv *kw_names, const jv *kw_values,
             size_t nkw, int line, jv *out);

/* Renders source with the variables of a dict value (jinja_eval.c). Returns
 * a malloc'd string, or NULL with tl_error set; arena holds the rest. */
char *jinja_render_value(const char *source, jv variables, jarena *arena, size_t *len);

#endif
