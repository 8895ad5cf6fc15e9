# tools/: one small main() per command, plus shared CLI helpers.
noinst_LTLIBRARIES += tools/libcli.la
tools_libcli_la_SOURCES = tools/cli.c tools/cli.h tools/guard.c tools/guard.h tools/value.c \
	tools/preset.c tools/preset.h \
	tools/outset.c tools/outset.h tools/mdiff.c tools/mdiff.h tools/progress.c tools/progress.h \
	tools/value.h
tools_libcli_la_LIBADD = -lm

bin_PROGRAMS += gguf-dump
gguf_dump_SOURCES = tools/gguf-dump.c tools/dump-diff.c tools/dump-diff.h \
	tools/dump-estimate.c tools/dump-estimate.h tools/dump-values.c tools/dump-values.h \
	tools/dump-common.c tools/dump-common.h
gguf_dump_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
gguf_dump_LDFLAGS = $(OPENMP_CFLAGS)
gguf_dump_LDADD = tools/libcli.la infer/libinfer.la gguf/libgguf.la -lm

bin_PROGRAMS += gguf-requant
gguf_requant_SOURCES = tools/gguf-requant.c tools/mixture.c tools/mixture.h tools/imatrix.c \
	tools/imatrix.h
gguf_requant_LDADD = tools/libcli.la gguf/libgguf.la -lm

bin_PROGRAMS += gguf-edit
gguf_edit_SOURCES = tools/gguf-edit.c
gguf_edit_LDADD = tools/libcli.la gguf/libgguf.la -lm

bin_PROGRAMS += gguf-verify
gguf_verify_SOURCES = tools/gguf-verify.c tools/verify.h tools/verify-file.c tools/verify-check.c \
	tools/verify-embed.c tools/manifest.c tools/manifest.h
gguf_verify_LDADD = tools/libcli.la infer/libinfer.la gguf/libgguf.la -lm
gguf_verify_LDFLAGS = $(OPENMP_CFLAGS)

bin_PROGRAMS += qwen-run
qwen_run_SOURCES = tools/qwen-run.c tools/run-chat.c tools/run-chat.h
qwen_run_CFLAGS = $(AM_CFLAGS) $(LIBEDIT_CFLAGS)
qwen_run_LDADD = tools/libcli.la
if HAVE_CUDA
qwen_run_LDADD += infer/cuda/libqwencuda.a
endif
qwen_run_LDADD += infer/libinfer.la gguf/libgguf.la -lm $(CUDA_LIBS) $(LIBEDIT_LIBS)
qwen_run_LDFLAGS = $(OPENMP_CFLAGS)
