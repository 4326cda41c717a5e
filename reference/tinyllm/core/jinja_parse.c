/* jinja_parse.c: tokens into a tree, with Jinja2's grammar and precedence
 * (jinja2/parser.py): conditional < or < and < not < comparisons (in, ==, <,
 * ...) < + - < ~ < * / // % < ** < unary - + < primary with its postfixes
 * (.attr, [item], [a:b:c], (call)), filters (|f) and tests (is t).
 *
 * A tag this runtime does not implement ({% include %}, {% extends %},
 * {% raw %}, ...) is refused here, by name and line.
 *
 * Node fields per kind (jinja_internal.h): IF a=cond b=body c=else; FOR
 * kids=targets a=iterable b=body c=else d=filter; SET kids=targets a=value;
 * SET_BLOCK kids=target b=body; MACRO name kids=params (a=default) b=body;
 * FILTER_BLOCK a=filter chain (innermost input NULL) b=body; GENERATION b=body;
 * CALL_BLOCK a=the call b=the caller (a MACRO named caller: params, body);
 * ATTR a.name; ITEM a[b]; SLICE a[b:c:d]; CALL a(kids) with KWARG kids and
 * SPLAT kids (name "*" or "**", a=the list or dict spread);
 * FILTER a|name(kids); TEST a is name(kids); UNARY name a; BINARY a name b;
 * COMPARE a name b; CONDITIONAL b if a else c; CONCAT kids; DICT kids as
 * key, value, key, value.
 */
#include <stdio.h>
#include <string.h>

#include "jinja_internal.h"
#include "tinyllm/tensor.h"

typedef struct {
    jarena *arena;
    const jtokens *t;
    size_t pos;
    bool failed;
    int nesting;   /* the recursive descent's depth: JINJA_MAX_NESTING at most */
} parser;

static const jtok *peek(parser *p) { return &p->t->items[p->pos]; }
static const jtok *peek_at(parser *p, size_t ahead) {
    size_t i = p->pos + ahead;
    return &p->t->items[i < p->t->count ? i : p->t->count - 1];
}
static const jtok *next(parser *p) {
    const jtok *t = &p->t->items[p->pos];
    if (t->kind != JT_EOF) p->pos++;
    return t;
}

static void *perr(parser *p, int line, const char *fmt, const char *arg) {
    if (!p->failed) {
        char what[300];
        snprintf(what, sizeof what, fmt, arg ? arg : "");
        tl_fail("tl_jinja_render: line %d: %s", line, what);
    }
    p->failed = true;
    return NULL;
}

/* One level deeper in the recursive descent; false (and the error) past
 * JINJA_MAX_NESTING, where a hostile template would exhaust the stack. The
 * caller takes the level back (p->nesting--) when its part is parsed. */
static bool nest_in(parser *p) {
    if (p->nesting >= JINJA_MAX_NESTING) {
        char limit[16];
        snprintf(limit, sizeof limit, "%d", JINJA_MAX_NESTING);
        perr(p, peek(p)->line, "the template nests deeper than %s levels", limit);
        return false;
    }
    p->nesting++;
    return true;
}

static bool is_op(const jtok *t, const char *op) {
    return t->kind == JT_OP && t->len == strlen(op) && !memcmp(t->text, op, t->len);
}
static bool is_name(const jtok *t, const char *name) {
    return t->kind == JT_NAME && t->len == strlen(name) && !memcmp(t->text, name, t->len);
}

static const char *tok_text(parser *p, const jtok *t) {
    switch (t->kind) {
    case JT_NAME:
    case JT_OP: return ja_strndup(p->arena, t->text, t->len);
    case JT_STRING: return "a string";
    case JT_INT:
    case JT_FLOAT: return "a number";
    case JT_VAR_END: return "}}";
    case JT_BLOCK_END: return "%}";
    case JT_EOF: return "the end of the template";
    default: return "text";
    }
}

static bool expect_op(parser *p, const char *op) {
    if (is_op(peek(p), op)) {
        next(p);
        return true;
    }
    char what[200];
    snprintf(what, sizeof what, "expected '%s' but found '%s'", op, tok_text(p, peek(p)));
    perr(p, peek(p)->line, "%s", what);
    return false;
}

static jnode *node(parser *p, jnode_kind kind, int line) {
    jnode *n = ja_alloc(p->arena, sizeof *n);
    if (!n) {
        p->failed = true;
        return NULL;
    }
    n->kind = kind;
    n->line = line;
    return n;
}

static void add_kid(parser *p, jnode *n, jnode *kid) {
    if (!n || p->failed) return;
    jnode **kids = ja_alloc(p->arena, (n->count + 1) * sizeof *kids);
    if (!kids) {
        p->failed = true;
        return;
    }
    if (n->count) memcpy(kids, n->kids, n->count * sizeof *kids);
    kids[n->count++] = kid;
    n->kids = kids;
}

static void set_name(parser *p, jnode *n, const jtok *t) {
    if (!n) return;
    n->name = ja_strndup(p->arena, t->text, t->len);
    n->name_len = t->len;
}

static jnode *parse_expr(parser *p);
static jnode *parse_or(parser *p);
static jnode *parse_unary(parser *p, bool with_filter);
static jnode *parse_not(parser *p);

/* ---- expressions ------------------------------------------------------------- */

/* Arguments of a call after "(", in jinja2's order: positional, *list,
 * name=value, **dict (one of each spread at most). */
static void parse_args(parser *p, jnode *call) {
    bool star = false, double_star = false;
    while (!p->failed && !is_op(peek(p), ")")) {
        if (double_star) {
            perr(p, peek(p)->line, "nothing may follow **dict in a call's arguments", NULL);
            return;
        }
        if (is_op(peek(p), "*") || is_op(peek(p), "**")) {
            bool two = is_op(next(p), "**");
            if (two ? double_star : star) {
                perr(p, peek(p)->line, "a call spreads %s once at most", two ? "**" : "*");
                return;
            }
            *(two ? &double_star : &star) = true;
            jnode *spread = node(p, JN_SPLAT, peek(p)->line);
            if (spread) {
                spread->name = two ? "**" : "*";
                spread->name_len = strlen(spread->name);
                spread->a = parse_expr(p);
            }
            add_kid(p, call, spread);
        } else if (peek(p)->kind == JT_NAME && is_op(peek_at(p, 1), "=")) {
            jnode *kw = node(p, JN_KWARG, peek(p)->line);
            set_name(p, kw, next(p));
            next(p);
            if (kw) kw->a = parse_expr(p);
            add_kid(p, call, kw);
        } else {
            if (star) {
                perr(p, peek(p)->line, "a positional argument follows *list in a call", NULL);
                return;
            }
            add_kid(p, call, parse_expr(p));
        }
        if (!is_op(peek(p), ",")) break;
        next(p);
    }
    expect_op(p, ")");
}

static jnode *parse_primary(parser *p) {
    const jtok *t = next(p);
    jnode *n;
    switch (t->kind) {
    case JT_NAME:
        if (is_name(t, "true") || is_name(t, "True") || is_name(t, "false") ||
            is_name(t, "False")) {
            n = node(p, JN_LITERAL, t->line);
            if (n) n->value = jv_bool(t->text[0] == 't' || t->text[0] == 'T');
        } else if (is_name(t, "none") || is_name(t, "None")) {
            n = node(p, JN_LITERAL, t->line);
            if (n) n->value = jv_none();
        } else {
            n = node(p, JN_NAME, t->line);
            set_name(p, n, t);
        }
        return n;
    case JT_STRING: {
        /* adjacent strings join, as in Python */
        jstr s = {.arena = p->arena};
        js_append(&s, t->text, t->len);
        while (peek(p)->kind == JT_STRING) {
            const jtok *more = next(p);
            js_append(&s, more->text, more->len);
        }
        n = node(p, JN_LITERAL, t->line);
        if (n) n->value = jv_string(s.data ? s.data : "", s.len);
        return n;
    }
    case JT_INT:
        n = node(p, JN_LITERAL, t->line);
        if (n) n->value = jv_int(t->i);
        return n;
    case JT_FLOAT:
        n = node(p, JN_LITERAL, t->line);
        if (n) n->value = jv_float(t->f);
        return n;
    case JT_OP:
        if (is_op(t, "(")) {
            if (is_op(peek(p), ")")) {   /* the empty tuple */
                next(p);
                return node(p, JN_TUPLE, t->line);
            }
            jnode *first = parse_expr(p);
            if (!is_op(peek(p), ",")) {
                expect_op(p, ")");
                return first;
            }
            n = node(p, JN_TUPLE, t->line);
            add_kid(p, n, first);
            while (is_op(peek(p), ",") && !p->failed) {
                next(p);
                if (is_op(peek(p), ")")) break;
                add_kid(p, n, parse_expr(p));
            }
            expect_op(p, ")");
            return n;
        }
        if (is_op(t, "[")) {
            n = node(p, JN_LIST, t->line);
            while (!is_op(peek(p), "]") && !p->failed) {
                add_kid(p, n, parse_expr(p));
                if (!is_op(peek(p), ",")) break;
                next(p);
            }
            expect_op(p, "]");
            return n;
        }
        if (is_op(t, "{")) {
            n = node(p, JN_DICT, t->line);
            while (!is_op(peek(p), "}") && !p->failed) {
                add_kid(p, n, parse_expr(p));
                expect_op(p, ":");
                add_kid(p, n, parse_expr(p));
                if (!is_op(peek(p), ",")) break;
                next(p);
            }
            expect_op(p, "}");
            return n;
        }
        break;
    default:
        break;
    }
    return perr(p, t->line, "unexpected '%s' in an expression", tok_text(p, t));
}

static jnode *parse_postfix(parser *p, jnode *n) {
    while (!p->failed) {
        const jtok *t = peek(p);
        if (is_op(t, ".")) {
            next(p);
            const jtok *name = next(p);
            if (name->kind == JT_INT) {   /* x.0 is x[0] */
                jnode *item = node(p, JN_ITEM, t->line);
                jnode *index = node(p, JN_LITERAL, t->line);
                if (!item || !index) return NULL;
                index->value = jv_int(name->i);
                item->a = n;
                item->b = index;
                n = item;
                continue;
            }
            if (name->kind != JT_NAME) return perr(p, t->line, "expected a name after '.'", NULL);
            jnode *attr = node(p, JN_ATTR, t->line);
            set_name(p, attr, name);
            if (attr) attr->a = n;
            n = attr;
        } else if (is_op(t, "[")) {
            next(p);
            jnode *start = NULL, *stop = NULL, *step = NULL;
            bool slice = false;
            if (!is_op(peek(p), ":")) start = parse_expr(p);
            if (is_op(peek(p), ":")) {
                slice = true;
                next(p);
                if (!is_op(peek(p), "]") && !is_op(peek(p), ":")) stop = parse_expr(p);
                if (is_op(peek(p), ":")) {
                    next(p);
                    if (!is_op(peek(p), "]")) step = parse_expr(p);
                }
            }
            expect_op(p, "]");
            jnode *s = node(p, slice ? JN_SLICE : JN_ITEM, t->line);
            if (!s) return NULL;
            s->a = n;
            s->b = start;
            s->c = stop;
            s->d = step;
            n = s;
        } else if (is_op(t, "(")) {
            next(p);
            jnode *call = node(p, JN_CALL, t->line);
            if (call) call->a = n;
            parse_args(p, call);
            n = call;
        } else {
            return n;
        }
    }
    return n;
}

static jnode *parse_filters_and_tests(parser *p, jnode *n) {
    while (!p->failed) {
        const jtok *t = peek(p);
        if (is_op(t, "|")) {
            next(p);
            const jtok *name = next(p);
            if (name->kind != JT_NAME)
                return perr(p, t->line, "expected a filter name after '|'", NULL);
            jnode *f = node(p, JN_FILTER, t->line);
            set_name(p, f, name);
            if (f) f->a = n;
            if (is_op(peek(p), "(")) {
                next(p);
                parse_args(p, f);
            }
            n = f;
        } else if (is_name(t, "is")) {
            next(p);
            jnode *test = node(p, JN_TEST, t->line);
            if (!test) return NULL;
            if (is_name(peek(p), "not")) {
                next(p);
                test->negated = true;
            }
            const jtok *name = next(p);
            if (name->kind != JT_NAME)
                return perr(p, t->line, "expected a test name after 'is'", NULL);
            /* 'none', 'true' and 'false' are names of tests here */
            set_name(p, test, name);
            test->a = n;
            const jtok *arg = peek(p);
            if (is_op(arg, "(")) {
                next(p);
                parse_args(p, test);
            } else if ((arg->kind == JT_NAME || arg->kind == JT_STRING || arg->kind == JT_INT ||
                        arg->kind == JT_FLOAT || is_op(arg, "[") || is_op(arg, "{")) &&
                       !is_name(arg, "else") && !is_name(arg, "or") && !is_name(arg, "and") &&
                       !is_name(arg, "if") && !is_name(arg, "in") && !is_name(arg, "not") &&
                       !is_name(arg, "is")) {
                add_kid(p, test, parse_postfix(p, parse_primary(p)));
            }
            n = test;
        } else if (is_op(t, "(")) {
            n = parse_postfix(p, n);
        } else {
            return n;
        }
    }
    return n;
}

static jnode *parse_unary_at(parser *p, bool with_filter) {
    const jtok *t = peek(p);
    jnode *n;
    if (is_op(t, "-") || is_op(t, "+")) {
        next(p);
        n = node(p, JN_UNARY, t->line);
        if (n) {
            n->name = t->text[0] == '-' ? "-" : "+";
            n->a = parse_unary(p, false);
        }
    } else {
        n = parse_postfix(p, parse_primary(p));
    }
    return with_filter ? parse_filters_and_tests(p, n) : n;
}

static jnode *parse_unary(parser *p, bool with_filter) {
    if (!nest_in(p)) return NULL;
    jnode *n = parse_unary_at(p, with_filter);
    p->nesting--;
    return n;
}

static jnode *binary(parser *p, jnode_kind kind, const char *op, jnode *a, jnode *b, int line) {
    jnode *n = node(p, kind, line);
    if (!n) return NULL;
    n->name = op;
    n->a = a;
    n->b = b;
    return n;
}

static jnode *parse_pow(parser *p) {
    jnode *n = parse_unary(p, true);
    while (is_op(peek(p), "**") && !p->failed) {
        int line = next(p)->line;
        n = binary(p, JN_BINARY, "**", n, parse_unary(p, true), line);
    }
    return n;
}

static jnode *parse_math2(parser *p) {
    jnode *n = parse_pow(p);
    for (;;) {
        const jtok *t = peek(p);
        const char *op = is_op(t, "*") ? "*" : is_op(t, "/") ? "/" : is_op(t, "//") ? "//"
                       : is_op(t, "%") ? "%" : NULL;
        if (!op || p->failed) return n;
        next(p);
        n = binary(p, JN_BINARY, op, n, parse_pow(p), t->line);
    }
}

static jnode *parse_concat(parser *p) {
    jnode *first = parse_math2(p);
    if (!is_op(peek(p), "~")) return first;
    jnode *n = node(p, JN_CONCAT, peek(p)->line);
    add_kid(p, n, first);
    while (is_op(peek(p), "~") && !p->failed) {
        next(p);
        add_kid(p, n, parse_math2(p));
    }
    return n;
}

static jnode *parse_math1(parser *p) {
    jnode *n = parse_concat(p);
    for (;;) {
        const jtok *t = peek(p);
        const char *op = is_op(t, "+") ? "+" : is_op(t, "-") ? "-" : NULL;
        if (!op || p->failed) return n;
        next(p);
        n = binary(p, JN_BINARY, op, n, parse_concat(p), t->line);
    }
}

static jnode *parse_compare(parser *p) {
    jnode *left = parse_math1(p), *result = NULL;
    for (;;) {
        const jtok *t = peek(p);
        const char *op = NULL;
        bool negated = false;
        static const char *ops[] = {"==", "!=", "<", ">", "<=", ">="};
        for (size_t i = 0; i < 6; i++)
            if (is_op(t, ops[i])) op = ops[i];
        if (is_name(t, "in")) op = "in";
        if (is_name(t, "not") && is_name(peek_at(p, 1), "in")) {
            op = "in";
            negated = true;
            next(p);
        }
        if (!op || p->failed) return result ? result : left;
        next(p);
        jnode *right = parse_math1(p);
        jnode *cmp = binary(p, JN_COMPARE, op, left, right, t->line);
        if (cmp) cmp->negated = negated;
        /* a < b < c is (a < b) and (b < c) */
        result = result ? binary(p, JN_AND, "and", result, cmp, t->line) : cmp;
        left = right;
    }
}

static jnode *parse_not_at(parser *p) {
    if (is_name(peek(p), "not")) {
        int line = next(p)->line;
        jnode *n = node(p, JN_NOT, line);
        if (n) n->a = parse_not(p);
        return n;
    }
    return parse_compare(p);
}

static jnode *parse_not(parser *p) {
    if (!nest_in(p)) return NULL;
    jnode *n = parse_not_at(p);
    p->nesting--;
    return n;
}

static jnode *parse_and(parser *p) {
    jnode *n = parse_not(p);
    while (is_name(peek(p), "and") && !p->failed) {
        int line = next(p)->line;
        n = binary(p, JN_AND, "and", n, parse_not(p), line);
    }
    return n;
}

static jnode *parse_or(parser *p) {
    jnode *n = parse_and(p);
    while (is_name(peek(p), "or") && !p->failed) {
        int line = next(p)->line;
        n = binary(p, JN_OR, "or", n, parse_and(p), line);
    }
    return n;
}

static jnode *parse_expr_at(parser *p) {
    jnode *n = parse_or(p);
    while (is_name(peek(p), "if") && !p->failed) {
        int line = next(p)->line;
        jnode *c = node(p, JN_CONDITIONAL, line);
        if (!c) return NULL;
        c->b = n;
        c->a = parse_or(p);
        if (is_name(peek(p), "else")) {
            next(p);
            c->c = parse_expr(p);
        }
        n = c;
    }
    return n;
}

static jnode *parse_expr(parser *p) {
    if (!nest_in(p)) return NULL;
    jnode *n = parse_expr_at(p);
    p->nesting--;
    return n;
}

/* An expression, or a bare tuple "a, b" (set a, b = ...; for k, v in ...). */
static jnode *parse_tuple(parser *p, bool names_only) {
    int line = peek(p)->line;
    jnode *first = names_only ? parse_primary(p) : parse_expr(p);
    if (!is_op(peek(p), ",")) return first;
    jnode *t = node(p, JN_TUPLE, line);
    add_kid(p, t, first);
    while (is_op(peek(p), ",") && !p->failed) {
        next(p);
        add_kid(p, t, names_only ? parse_primary(p) : parse_expr(p));
    }
    return t;
}

/* ---- statements ----------------------------------------------------------------- */

static bool expect_block_end(parser *p) {
    if (peek(p)->kind == JT_BLOCK_END) {
        next(p);
        return true;
    }
    perr(p, peek(p)->line, "expected '%%}' but found '%s'", tok_text(p, peek(p)));
    return false;
}

/* Statements until a tag named in ends (that tag's name is left in *end). */
static jnode *parse_body(parser *p, const char *const *ends, const char **end);

static jnode *parse_if(parser *p, int line) {
    jnode *n = node(p, JN_IF, line);
    if (!n) return NULL;
    n->a = parse_expr(p);
    if (!expect_block_end(p)) return NULL;
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    const char *end = NULL;
    n->b = parse_body(p, ends, &end);
    if (p->failed) return NULL;
    if (!strcmp(end, "elif")) {
        n->c = parse_if(p, peek(p)->line);
        return n;   /* the nested if consumed the endif */
    }
    if (!strcmp(end, "else")) {
        if (!expect_block_end(p)) return NULL;
        static const char *const endif[] = {"endif", NULL};
        n->c = parse_body(p, endif, &end);
        if (p->failed) return NULL;
    }
    expect_block_end(p);
    return n;
}

static jnode *parse_for(parser *p, int line) {
    jnode *n = node(p, JN_FOR, line);
    if (!n) return NULL;
    jnode *target = parse_tuple(p, true);
    if (p->failed) return NULL;
    if (target->kind == JN_TUPLE) {
        for (size_t i = 0; i < target->count; i++) add_kid(p, n, target->kids[i]);
    } else {
        add_kid(p, n, target);
    }
    for (size_t i = 0; i < n->count; i++)
        if (n->kids[i]->kind != JN_NAME)
            return perr(p, line, "a for loop's targets must be names", NULL);
    if (!is_name(peek(p), "in")) return perr(p, line, "expected 'in' in a for loop", NULL);
    next(p);
    n->a = parse_or(p);   /* no conditional here: "if" starts the loop's filter */
    if (is_name(peek(p), "if")) {
        next(p);
        n->d = parse_expr(p);
    }
    if (is_name(peek(p), "recursive"))
        return perr(p, line, "unsupported construct: a recursive for loop", NULL);
    if (!expect_block_end(p)) return NULL;
    static const char *const ends[] = {"else", "endfor", NULL};
    const char *end = NULL;
    n->b = parse_body(p, ends, &end);
    if (p->failed) return NULL;
    if (!strcmp(end, "else")) {
        if (!expect_block_end(p)) return NULL;
        static const char *const endfor[] = {"endfor", NULL};
        n->c = parse_body(p, endfor, &end);
        if (p->failed) return NULL;
    }
    expect_block_end(p);
    return n;
}

static jnode *parse_set(parser *p, int line) {
    jnode *target = parse_tuple(p, false);
    if (p->failed) return NULL;
    jnode *n;
    if (peek(p)->kind == JT_BLOCK_END) {   /* {% set x %}...{% endset %} */
        if (target->kind != JN_NAME) return perr(p, line, "a set block needs one name", NULL);
        n = node(p, JN_SET_BLOCK, line);
        if (!n) return NULL;
        add_kid(p, n, target);
        next(p);
        static const char *const ends[] = {"endset", NULL};
        const char *end = NULL;
        n->b = parse_body(p, ends, &end);
        if (p->failed) return NULL;
        expect_block_end(p);
        return n;
    }
    n = node(p, JN_SET, line);
    if (!n) return NULL;
    if (target->kind == JN_TUPLE) {
        for (size_t i = 0; i < target->count; i++) add_kid(p, n, target->kids[i]);
    } else {
        add_kid(p, n, target);
    }
    for (size_t i = 0; i < n->count; i++) {
        jnode *k = n->kids[i];
        if (k->kind != JN_NAME && !(k->kind == JN_ATTR && k->a && k->a->kind == JN_NAME))
            return perr(p, line, "set can assign to a name or to namespace.attribute only", NULL);
    }
    if (!expect_op(p, "=")) return NULL;
    n->a = parse_tuple(p, false);
    expect_block_end(p);
    return n;
}

/* A macro's parameters after its "(", up to and with the ")": names, each
 * with an optional default; false on an error. */
static bool parse_params(parser *p, jnode *n, int line) {
    while (!is_op(peek(p), ")") && !p->failed) {
        const jtok *param = next(p);
        if (param->kind != JT_NAME) {
            perr(p, line, "a macro's parameters must be names", NULL);
            return false;
        }
        jnode *pn = node(p, JN_NAME, param->line);
        set_name(p, pn, param);
        if (is_op(peek(p), "=")) {
            next(p);
            if (pn) pn->a = parse_expr(p);
        }
        add_kid(p, n, pn);
        if (!is_op(peek(p), ",")) break;
        next(p);
    }
    return expect_op(p, ")");
}

static jnode *parse_macro(parser *p, int line) {
    const jtok *name = next(p);
    if (name->kind != JT_NAME) return perr(p, line, "expected the macro's name", NULL);
    jnode *n = node(p, JN_MACRO, line);
    set_name(p, n, name);
    if (!expect_op(p, "(") || !parse_params(p, n, line) || !expect_block_end(p)) return NULL;
    static const char *const ends[] = {"endmacro", NULL};
    const char *end = NULL;
    n->b = parse_body(p, ends, &end);
    if (p->failed) return NULL;
    if (peek(p)->kind == JT_NAME) next(p);   /* {% endmacro name %} */
    expect_block_end(p);
    return n;
}

/* {% call [(params)] name(args) %}body{% endcall %}: name is called with a
 * macro `caller` whose body is the block's, seeing the block's variables. */
static jnode *parse_call_block(parser *p, int line) {
    jnode *n = node(p, JN_CALL_BLOCK, line), *caller = node(p, JN_MACRO, line);
    if (!n || !caller) return NULL;
    caller->name = "caller";
    caller->name_len = strlen(caller->name);
    if (is_op(peek(p), "(")) {
        next(p);
        if (!parse_params(p, caller, line)) return NULL;
    }
    n->a = parse_expr(p);
    if (p->failed) return NULL;
    if (!n->a || n->a->kind != JN_CALL)
        return perr(p, line, "{%% call %%} takes a macro call, as in {%% call name(args) %%}",
                    NULL);
    if (!expect_block_end(p)) return NULL;
    static const char *const ends[] = {"endcall", NULL};
    const char *end = NULL;
    caller->b = parse_body(p, ends, &end);
    if (p->failed) return NULL;
    expect_block_end(p);
    n->b = caller;
    return n;
}

static jnode *parse_filter_block(parser *p, int line) {
    /* {% filter upper %}: a filter chain applied to the rendered body */
    jnode *n = node(p, JN_FILTER_BLOCK, line);
    if (!n) return NULL;
    jnode *chain = NULL;
    bool first = true;
    while (!p->failed && (first || is_op(peek(p), "|"))) {
        if (!first) next(p);
        first = false;
        const jtok *name = next(p);
        if (name->kind != JT_NAME) return perr(p, line, "expected a filter name", NULL);
        jnode *f = node(p, JN_FILTER, line);
        set_name(p, f, name);
        if (f) f->a = chain;
        if (is_op(peek(p), "(")) {
            next(p);
            parse_args(p, f);
        }
        chain = f;
    }
    n->a = chain;
    if (!expect_block_end(p)) return NULL;
    static const char *const ends[] = {"endfilter", NULL};
    const char *end = NULL;
    n->b = parse_body(p, ends, &end);
    if (p->failed) return NULL;
    expect_block_end(p);
    return n;
}

static jnode *parse_statement(parser *p) {
    const jtok *tag = next(p);
    int line = tag->line;
    if (tag->kind != JT_NAME) return perr(p, line, "expected a tag name after '{%%'", NULL);
    if (is_name(tag, "if")) return parse_if(p, line);
    if (is_name(tag, "for")) return parse_for(p, line);
    if (is_name(tag, "set")) return parse_set(p, line);
    if (is_name(tag, "macro")) return parse_macro(p, line);
    if (is_name(tag, "call")) return parse_call_block(p, line);
    if (is_name(tag, "filter")) return parse_filter_block(p, line);
    if (is_name(tag, "break") || is_name(tag, "continue")) {
        jnode *n = node(p, is_name(tag, "break") ? JN_BREAK : JN_CONTINUE, line);
        expect_block_end(p);
        return n;
    }
    if (is_name(tag, "generation")) {   /* transformers' AssistantTracker: renders its body */
        jnode *n = node(p, JN_GENERATION, line);
        if (!n || !expect_block_end(p)) return NULL;
        static const char *const ends[] = {"endgeneration", NULL};
        const char *end = NULL;
        n->b = parse_body(p, ends, &end);
        if (p->failed) return NULL;
        expect_block_end(p);
        return n;
    }
    const char *name = ja_strndup(p->arena, tag->text, tag->len);
    return perr(p, line,
                "unsupported construct {%% %s %%}: tinyllm's Jinja implements if, for, set, "
                "macro, call, filter, break, continue and generation only",
                name);
}

static jnode *parse_body_at(parser *p, const char *const *ends, const char **end) {
    jnode *body = node(p, JN_BODY, peek(p)->line);
    while (!p->failed) {
        const jtok *t = peek(p);
        if (t->kind == JT_EOF) {
            if (ends) {
                char want[64];
                snprintf(want, sizeof want, "{%% %s %%}", ends[0]);
                for (size_t i = 0; ends[i]; i++)
                    if (!strncmp(ends[i], "end", 3))
                        snprintf(want, sizeof want, "{%% %s %%}", ends[i]);
                return perr(p, t->line, "the template ends before %s", want);
            }
            return body;
        }
        if (t->kind == JT_TEXT) {
            next(p);
            jnode *n = node(p, JN_TEXT, t->line);
            if (n) n->value = jv_string(t->text, t->len);
            add_kid(p, body, n);
        } else if (t->kind == JT_VAR_BEGIN) {
            next(p);
            jnode *n = node(p, JN_OUTPUT, t->line);
            if (n) n->a = parse_expr(p);
            if (peek(p)->kind != JT_VAR_END && !p->failed)
                return perr(p, peek(p)->line, "expected '}}' but found '%s'", tok_text(p, peek(p)));
            next(p);
            add_kid(p, body, n);
        } else if (t->kind == JT_BLOCK_BEGIN) {
            const jtok *tag = peek_at(p, 1);
            for (size_t i = 0; ends && ends[i]; i++)
                if (is_name(tag, ends[i])) {
                    p->pos += 2;
                    *end = ends[i];
                    return body;
                }
            if ((tag->kind == JT_NAME && !strncmp(tag->text, "end", 3)) ||
                is_name(tag, "elif") || is_name(tag, "else"))
                return perr(p, tag->line, "unexpected {%% %s %%}",
                            ja_strndup(p->arena, tag->text, tag->len));
            next(p);
            add_kid(p, body, parse_statement(p));
        } else {
            return perr(p, t->line, "unexpected '%s'", tok_text(p, t));
        }
    }
    return NULL;
}

static jnode *parse_body(parser *p, const char *const *ends, const char **end) {
    if (!nest_in(p)) return NULL;
    jnode *n = parse_body_at(p, ends, end);
    p->nesting--;
    return n;
}

jnode *jinja_parse(jarena *a, const jtokens *tokens) {
    parser p = {.arena = a, .t = tokens};
    jnode *root = parse_body(&p, NULL, NULL);
    return p.failed || a->failed ? NULL : root;
}
