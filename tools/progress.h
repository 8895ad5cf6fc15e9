/*
 * progress.h -- the progress line of the tools' long jobs (hashing,
 * requantizing, uploading weights): one line on standard error, rewritten
 * in place ("\rPROG: TEXT" and an erase to the end of the line) at most
 * ten times a second, only when standard error is a terminal, and erased
 * before anything else is printed there.  Not installed.
 */
#ifndef TOOLS_PROGRESS_H
#define TOOLS_PROGRESS_H

#include <time.h>

#include "tools/cli.h"

typedef struct cli_progress {
    int on;                 /* lines are shown */
    int shown;              /* a line is on the screen */
    struct timespec last;   /* when it was written */
} cli_progress;

/* A progress line that shows when `want` (the caller's say: not --quiet,
 * a job worth it) and standard error is a terminal. */
void cli_progress_init(cli_progress *p, int want);

/* Writes "PROG: " and the printf-style text over the line, unless a line
 * went out less than 0.1 s ago (force: write anyway, for a last state). */
void cli_progress_show(cli_progress *p, int force, const char *fmt, ...) CLI_PRINTF(3, 4);

/* Erases the line, if one is shown. */
void cli_progress_clear(cli_progress *p);

#endif /* TOOLS_PROGRESS_H */
