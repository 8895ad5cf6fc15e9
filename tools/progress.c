/* progress.c -- the progress line; see progress.h. */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>

#include "tools/progress.h"

void cli_progress_init(cli_progress *p, int want)
{
    p->on = want && cli_isatty(2);
    p->shown = 0;
    p->last.tv_sec = 0;
    p->last.tv_nsec = 0;
}

void cli_progress_show(cli_progress *p, int force, const char *fmt, ...)
{
    if (!p->on) return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double dt = (double)(ts.tv_sec - p->last.tv_sec) + (ts.tv_nsec - p->last.tv_nsec) * 1e-9;
    if (!force && p->shown && dt < 0.1) return;
    p->last = ts;
    char text[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\r%s: %s\033[K", cli_prog, text);
    fflush(stderr);
    p->shown = 1;
}

void cli_progress_clear(cli_progress *p)
{
    if (p->on && p->shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    p->shown = 0;
}
