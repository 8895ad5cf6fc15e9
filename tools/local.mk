# tools/: one small main() per command, plus shared CLI helpers.
noinst_LTLIBRARIES += tools/libcli.la
tools_libcli_la_SOURCES = tools/cli.c tools/cli.h
tools_libcli_la_LIBADD = -lm

bin_PROGRAMS += gguf-dump
gguf_dump_SOURCES = tools/gguf-dump.c
gguf_dump_LDADD = tools/libcli.la gguf/libgguf.la
