/*
 * gguf-verify -- check that GGUF files are intact: their structure, their
 * checksums against a manifest or against checksums embedded in their
 * metadata, and (with --model) that a model is complete.  See gguf-verify(1).
 *
 * Every file is read once: gguf_hash_file() hashes the whole input, the
 * metadata and each tensor in one pass in offset order, from the mapping
 * or, for a pipe, as the bytes stream past.
 */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "infer/model.h"
#include "tools/cli.h"
#include "tools/guard.h"
#include "tools/manifest.h"
#include "tools/verify.h"


struct verify_options verify_opt;
static cli_out *out = &cli_stdout;

static void usage(void)
{
    cli_out_printf(out,
        "Usage: %s [OPTION]... [FILE]...\n"
        "  or:  %s -w [OPTION]... [FILE]...\n"
        "  or:  %s -c MANIFEST [OPTION]... [FILE]...\n"
        "  or:  %s --embed IN OUT\n"
        "Check that GGUF files are intact.  Each FILE's structure is checked, and\n"
        "the checksums embedded in its metadata when it has them; one line per\n"
        "file says FILE: OK or FILE: FAILED: reason.  FILE may be - (standard\n"
        "input, the default when it is not a terminal) or a pipe: tensors are\n"
        "then hashed as they stream past.  A shard of a split set\n"
        "(NAME-00001-of-00003.gguf ...) brings its whole set: the shards are\n"
        "checked against each other, then each is verified (or, with -w,\n"
        "listed) as a file.\n"
        "\n"
        "Modes:\n"
        "  -w, --write           print a manifest of each FILE: its whole-file,\n"
        "                        metadata and per-tensor checksums\n"
        "  -c, --check=MANIFEST  check files against MANIFEST ('-' for standard\n"
        "                        input): all it lists, or only the FILEs given\n"
        "      --embed           write a copy of IN to OUT with the XXH3 checksum\n"
        "                        of each tensor in its metadata\n"
        "\n"
        "Checks:\n"
        "      --allow-trailing  accept bytes after the data section\n"
        "      --strict          warnings are failures; with -c, so are malformed\n"
        "                        manifest lines\n"
        "      --model=ARCH      also check that qwen-run can load the model, with\n"
        "                        its loader's checks of keys, tensors and tokenizer;\n"
        "                        warn of what llama.cpp refuses besides (ARCH:\n"
        "                        %s)\n"
        "      --shard           a shard of a split set alone, without its set\n"
        "  -a, --algo=ALGO       checksum algorithm for -w: xxh3 (default), xxh128,\n"
        "                        xxh64, xxh32, crc32, sha256, sha1\n"
        "      --format=FORMAT   with -w: the whole-file line as gguf-verify (the\n"
        "                        default), gnu (HEX  FILE, as sha256sum and xxhsum\n"
        "                        write it) or bsd (ALGO (FILE) = HEX)\n"
        "      --tag             the same as --format=bsd\n"
        "      --files-only      with -w: the whole-file lines alone\n"
        "      --ignore-missing  with -c: skip listed files that do not exist\n"
        "\n"
        "Output:\n"
        "  -q, --quiet           no OK lines, no progress\n"
        "      --status          print nothing on standard output, no warnings:\n"
        "                        the exit status tells\n"
        "  -h, --help            show this help and exit\n"
        "  -V, --version         show the version and exit\n"
        "\n"
        "Manifest lines are ALGO  HEX  FILE (the whole file), ALGO  HEX  FILE:TENSOR,\n"
        "ALGO  HEX  FILE:(metadata) and ALGO  HEX  FILE:(tensor data) (all tensors);\n"
        "names holding a backslash or a line break are escaped as sha256sum does.\n"
        "Whole-file values equal xxhsum's (-H3, -H2, -H1, -H0), zlib's crc32,\n"
        "sha256sum's and sha1sum's for the same bytes.  -c also reads the lines of\n"
        "sha256sum, sha1sum and xxhsum (with or without --tag) and llama.cpp's\n"
        "llama-gguf-hash (whose FILE line is the tensor data: FILE:(tensor data)).\n"
        "\n"
        "Exit status: 0 all OK, 1 a file is invalid or a checksum differs,\n"
        "2 trouble (usage, a file that cannot be read or shrinks while it is read,\n"
        "out of memory).\n",
        cli_prog, cli_prog, cli_prog, cli_prog, qwen_arch_names());
}

/* ------------------------------------------------------------------------ */
/* Options and main                                                          */

enum {
    OPT_EMBED = 256, OPT_ALLOW_TRAILING, OPT_STRICT, OPT_MODEL, OPT_STATUS, OPT_IGNORE_MISSING,
    OPT_SHARD, OPT_FORMAT, OPT_TAG, OPT_FILES_ONLY
};

static const struct option long_options[] = {
    { "write", no_argument, NULL, 'w' },
    { "check", required_argument, NULL, 'c' },
    { "embed", no_argument, NULL, OPT_EMBED },
    { "algo", required_argument, NULL, 'a' },
    { "allow-trailing", no_argument, NULL, OPT_ALLOW_TRAILING },
    { "strict", no_argument, NULL, OPT_STRICT },
    { "model", required_argument, NULL, OPT_MODEL },
    { "quiet", no_argument, NULL, 'q' },
    { "status", no_argument, NULL, OPT_STATUS },
    { "ignore-missing", no_argument, NULL, OPT_IGNORE_MISSING },
    { "shard", no_argument, NULL, OPT_SHARD },
    { "format", required_argument, NULL, OPT_FORMAT },
    { "tag", no_argument, NULL, OPT_TAG },
    { "files-only", no_argument, NULL, OPT_FILES_ONLY },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 }
};

/* Sets the mode, refusing a second one. */
static int set_mode(enum mode m, const char *name)
{
    if (verify_opt.mode != MODE_VERIFY && verify_opt.mode != m)
        return cli_usage_error("%s cannot be combined with another mode (-w, -c, --embed)", name);
    verify_opt.mode = m;
    return -1;
}

/* Parses the command line into verify_opt.  Returns -1 to go on, or the exit
 * status for main to return at once. */
static int parse_options(int argc, char **argv)
{
    int c, rc;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":wc:a:qhV", long_options, NULL)) != -1) {
        switch (c) {
        case 'w':
            if ((rc = set_mode(MODE_WRITE, "-w")) >= 0) return rc;
            break;
        case 'c':
            if ((rc = set_mode(MODE_CHECK, "-c")) >= 0) return rc;
            verify_opt.manifest = optarg;
            break;
        case OPT_EMBED:
            if ((rc = set_mode(MODE_EMBED, "--embed")) >= 0) return rc;
            break;
        case 'a':
            if (gguf_hash_parse(optarg, &verify_opt.algo) != GGUF_OK)
                return cli_usage_error("--algo: unknown algorithm '%s' "
                                       "(xxh3, xxh128, xxh64, xxh32, crc32, sha256, sha1)", optarg);
            break;
        case OPT_FORMAT:
            if (strcmp(optarg, "gguf-verify") == 0) verify_opt.style = MANIFEST_OWN;
            else if (strcmp(optarg, "gnu") == 0) verify_opt.style = MANIFEST_GNU;
            else if (strcmp(optarg, "bsd") == 0) verify_opt.style = MANIFEST_BSD;
            else return cli_usage_error("--format: unknown format '%s' (gguf-verify, gnu, bsd)", optarg);
            break;
        case OPT_TAG: verify_opt.style = MANIFEST_BSD; break;
        case OPT_FILES_ONLY: verify_opt.files_only = 1; break;
        case OPT_ALLOW_TRAILING: verify_opt.allow_trailing = 1; break;
        case OPT_STRICT: verify_opt.strict = 1; break;
        case OPT_MODEL:
            if (!qwen_arch_find(optarg, strlen(optarg)))
                return cli_usage_error("--model: unsupported architecture '%s' (supported: %s)",
                                       optarg, qwen_arch_names());
            verify_opt.model = optarg;
            break;
        case 'q': verify_opt.quiet = 1; break;
        case OPT_STATUS: verify_opt.status = 1; break;
        case OPT_IGNORE_MISSING: verify_opt.ignore_missing = 1; break;
        case OPT_SHARD: verify_opt.shard = 1; break;
        default:        /* -h, -V, usage errors */
            return cli_getopt_default(c, argv, usage);
        }
    }
    int n = argc - optind;
    if (verify_opt.ignore_missing && verify_opt.mode != MODE_CHECK)
        return cli_usage_error("--ignore-missing is for -c");
    if ((verify_opt.style != MANIFEST_OWN || verify_opt.files_only) && verify_opt.mode != MODE_WRITE)
        return cli_usage_error("--format, --tag and --files-only are for -w");
    if (!manifest_style_has(verify_opt.style, verify_opt.algo))
        return cli_usage_error("--format %s has no form for %s checksums", verify_opt.style == MANIFEST_GNU ? "gnu" : "bsd",
                               gguf_hash_name(verify_opt.algo));
    if (verify_opt.mode == MODE_EMBED) {
        if (n != 2) return cli_usage_error(n < 2 ? "--embed needs IN and OUT"
                                                 : "--embed takes IN and OUT only");
        return -1;
    }
    if (verify_opt.mode == MODE_CHECK) {
        for (int i = optind; i < argc; i++)
            if (strcmp(argv[i], "-") == 0 && strcmp(verify_opt.manifest, "-") == 0)
                return cli_usage_error("standard input cannot be both the manifest and a file");
        if (strcmp(verify_opt.manifest, "-") == 0 && cli_isatty(0))
            return cli_usage_error("-c -: standard input is a terminal");
        return -1;
    }
    if (n == 0 && cli_isatty(0))
        return cli_usage_error("no FILE given and standard input is a terminal");
    return -1;
}

int main(int argc, char **argv)
{
    cli_set_prog("gguf-verify");
    guard_init();
    verify_opt.algo = GGUF_HASH_XXH3;
    int status = parse_options(argc, argv);
    if (status >= 0) return status;
    char **files = argv + optind;
    int n_files = argc - optind;
    char *stdin_only[] = { "-", NULL };
    switch (verify_opt.mode) {
    case MODE_EMBED:
        status = verify_embed(files[0], files[1]);
        break;
    case MODE_CHECK:
        status = verify_check_manifest(files, n_files);
        break;
    default:
        if (n_files == 0) {
            files = stdin_only;
            n_files = 1;
        }
        status = CLI_EXIT_OK;
        struct seen sn = { NULL, 0, 0 };
        for (int i = 0; i < n_files && !cli_out_failed(out); i++) {
            uint32_t count = 1;
            int st = CLI_EXIT_OK;
            if (!verify_opt.shard && strcmp(files[i], "-") != 0 && gguf_split_prefix(files[i], NULL, &count) &&
                count > 1) {
                if (!verify_seen_before(&sn, files[i], 0)) st = verify_set(files[i], &sn);
            } else {
                st = verify_one(files[i]);
            }
            if (st > status) status = st;
            /* Out before the next file is mapped: a mapping that shrinks
             * ends the process, and should not take the files before it
             * along. */
            cli_out_flush(out);
        }
        free(sn.st);
        break;
    }
    if (cli_out_close(out) != CLI_EXIT_OK) status = CLI_EXIT_TROUBLE;
    return status;
}
