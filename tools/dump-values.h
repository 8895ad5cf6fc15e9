/* dump-values.h -- gguf-dump --values and --stats.  Not installed. */
#ifndef TOOLS_DUMP_VALUES_H
#define TOOLS_DUMP_VALUES_H

#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "tools/cli.h"

/* One --values request. */
struct values_req {
    char *name;             /* tensor name (owned) */
    uint64_t count;         /* values asked for */
};

/* Fills *r from a --values argument TENSOR[:N]; N is taken from after the
 * last colon when that is all digits, so names with colons still work.
 * Returns 0, or -1 when out of memory or N is out of range. */
int dump_parse_values(const char *arg, struct values_req *r);

/* --values for one file: the first values of each of the n requests, in
 * their order, to o as text (one a line) or JSON.  Mapped input is read in
 * place; from a stream the blocks needed are read in offset order first.
 * Returns CLI_EXIT_OK, or CLI_EXIT_TROUBLE after reporting an absent
 * tensor, a type that cannot be dequantized, or a read error. */
int dump_values(cli_out *o, gguf_file *f, const struct values_req *req, size_t n, int json);

/* --stats for one file: min, max, mean and RMS of every tensor whose name
 * matches glob (NULL: all), over all its elements, dequantized, on the
 * OpenMP threads; a text table or a JSON object.  Returns CLI_EXIT_OK, or
 * CLI_EXIT_TROUBLE after reporting tensors that could not be read or
 * dequantized (their rows show "-" / null). */
int dump_stats(cli_out *o, gguf_file *f, const char *glob, int json);

#endif /* TOOLS_DUMP_VALUES_H */
