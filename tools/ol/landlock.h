/* landlock: which files a process and everything it starts may touch, as a
 * Landlock ruleset (Linux 5.13+, no privileges needed): read (and execute)
 * beneath some trees, everything beneath others, nothing elsewhere. From
 * ABI 6 the process may also not signal, nor reach abstract Unix sockets
 * of, anything outside its own ruleset (ol, another run). */
#ifndef OL_LANDLOCK_H
#define OL_LANDLOCK_H

#include "util.h"

/* Landlock's ABI version, 0 when the kernel (or a seccomp filter) has none
 * (or $OL_TEST_NO_LANDLOCK, a test hook, says so). */
int landlock_abi(void);

/* In the child: restricts the calling process to `read` and `write` (paths
 * that do not exist are skipped). Needs PR_SET_NO_NEW_PRIVS or privilege.
 * 0, or -1 with a message on stderr. */
int landlock_restrict(const strlist *read, const strlist *write);

#endif
