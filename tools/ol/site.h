/* site: where a mutant is, as a student may be told it: the lesson's
 * function it changes and where that function starts in the student's own
 * file, never a path or line of the hidden reference (issue 9). */
#ifndef OL_SITE_H
#define OL_SITE_H

#include "mutant.h"
#include "workspace.h"

typedef struct {
    char *function; /* the reference's function holding the change, or NULL */
    char *file;     /* c/<source>, the student's */
    int line;       /* where the student's function of that name starts; 0 when they have none */
} mutant_site;

/* The site of m's change at reference line `line` (0: its first change). */
void mutant_site_of(ol_ctx *ctx, const mutant *m, int line, mutant_site *out);
void mutant_site_free(mutant_site *s);

#endif
