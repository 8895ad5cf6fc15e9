/* error.c -- status texts and error formatting. */
#include <config.h>

#include <stdio.h>

#include "gguf/internal.h"

const char *gguf_strerror(int status)
{
    switch (status) {
    case GGUF_OK: return "success";
    case GGUF_E_IO: return "input/output error";
    case GGUF_E_NOMEM: return "out of memory";
    case GGUF_E_FORMAT: return "malformed file";
    case GGUF_E_UNSUPPORTED: return "unsupported";
    case GGUF_E_NOT_FOUND: return "not found";
    case GGUF_E_INVALID: return "invalid argument";
    case GGUF_E_TYPE: return "type mismatch";
    case GGUF_E_DEVICE: return "device error";
    default: return "unknown status";
    }
}

const char *gguf_version_string(void)
{
    return PACKAGE_VERSION;
}

int gg_fail(gguf_error *err, int status, int sys_errno, uint64_t offset, const char *name,
            const char *fmt, ...)
{
    if (!err) return status;
    err->status = status;
    err->sys_errno = sys_errno;
    err->offset = offset;
    int n = 0;
    if (name) n = snprintf(err->message, sizeof err->message, "%s: ", name);
    if (n < 0 || (size_t)n >= sizeof err->message) n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message + n, sizeof err->message - (size_t)n, fmt, ap);
    va_end(ap);
    return status;
}

char *gg_quote(char *buf, size_t n, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0, max = n > 8 ? n - 8 : 0;   /* room for an escape, "..." and NUL */
    size_t i;
    for (i = 0; i < len && o < max; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
            buf[o++] = (char)c;
        } else {
            buf[o++] = '\\';
            buf[o++] = 'x';
            buf[o++] = hex[c >> 4];
            buf[o++] = hex[c & 15];
        }
    }
    if (i < len && n >= 4) {
        memcpy(buf + (o < n - 4 ? o : n - 4), "...", 4);
        return buf;
    }
    if (n) buf[o < n ? o : n - 1] = '\0';
    return buf;
}
