/*
 * unhex.c -- turns a regression input of tests/fuzz/regress, kept as text,
 * back into its bytes:
 *
 *     unhex IN.hex OUT
 *
 * IN holds pairs of hex digits (either case), with any white space between
 * pairs; '#' starts a comment to the end of the line (the first lines say
 * what the input found).  Exit 0, or 2 for a malformed IN or an I/O error.
 */
#include <config.h>

#include <stdio.h>
#include <string.h>

static int digit(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: unhex IN.hex OUT\n");
        return 2;
    }
    FILE *in = fopen(argv[1], "r"), *out = in ? fopen(argv[2], "wb") : NULL;
    if (!in || !out) {
        perror(in ? argv[2] : argv[1]);
        return 2;
    }
    int c, hi = -1;
    unsigned long line = 1;
    while ((c = getc(in)) != EOF) {
        if (c == '#') {
            while ((c = getc(in)) != EOF && c != '\n') continue;
            if (c == EOF) break;
        }
        if (c == '\n') line++;
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            if (hi >= 0) break;     /* half a pair */
            continue;
        }
        int d = digit(c);
        if (d < 0) break;
        if (hi < 0) {
            hi = d;
        } else {
            putc(hi << 4 | d, out);
            hi = -1;
        }
    }
    if (c != EOF || hi >= 0) {
        fprintf(stderr, "unhex: %s: %lu: not a pair of hex digits\n", argv[1], line);
        return 2;
    }
    if (ferror(in) || fclose(out) != 0) {
        perror(argv[2]);
        return 2;
    }
    fclose(in);
    return 0;
}
