/* check.c -- error messages and the reporting of checks (see check.h). */
#include <config.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "infer/check.h"

static int vfail(gguf_error *err, int status, uint64_t offset, const char *fmt, va_list ap)
{
    if (!err) return status;
    err->status = status;
    err->sys_errno = 0;
    err->offset = offset;
    int n = vsnprintf(err->message, sizeof err->message, fmt, ap);
    if (offset != UINT64_MAX && n >= 0 && (size_t)n < sizeof err->message)
        snprintf(err->message + n, sizeof err->message - (size_t)n, " (at byte %" PRIu64 ")",
                 offset);
    return status;
}

int qwen_fail(gguf_error *err, int status, uint64_t offset, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(err, status, offset, fmt, ap);
    va_end(ap);
    return status;
}

int qwen_check_add(qwen_check *c, int kind, const gguf_error *e)
{
    if (kind != QWEN_PROBLEM) {
        if (c->report && !c->done && c->report(c->ctx, kind, e)) c->done = 1;
        return GGUF_OK;
    }
    if (c->status == GGUF_OK) {
        c->status = e->status;
        if (c->first && c->first != e) *c->first = *e;
    }
    if (!c->report || c->done || c->report(c->ctx, kind, e)) c->done = 1;
    if (e->status == GGUF_E_NOMEM || e->status == GGUF_E_IO || e->status == GGUF_E_INVALID)
        c->done = 1;
    return e->status;
}

int qwen_check_fail(qwen_check *c, int kind, int status, uint64_t offset, const char *fmt, ...)
{
    gguf_error e;
    va_list ap;
    va_start(ap, fmt);
    vfail(&e, status, offset, fmt, ap);
    va_end(ap);
    return qwen_check_add(c, kind, &e);
}
