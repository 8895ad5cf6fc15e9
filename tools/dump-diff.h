/* dump-diff.h -- gguf-dump --diff A B.  Not installed. */
#ifndef TOOLS_DUMP_DIFF_H
#define TOOLS_DUMP_DIFF_H

#include "tools/cli.h"

/* Prints the differences between models a and b (metadata, tensor
 * directory, tensor data by XXH3) to o, as text or one JSON document;
 * `shard`: each file alone, not its split set.  Returns 0 when they are the
 * same, 1 when they differ, 2 after a message on trouble. */
int dump_diff(cli_out *o, const char *a, const char *b, int json, int shard);

#endif /* TOOLS_DUMP_DIFF_H */
