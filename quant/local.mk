# quant/: numeric formats, linked into libgguf.  Knows nothing of files.
#
# -ffp-contract=off: results must be bit-identical to the reference
# quantizers, which are compiled without fused multiply-add.
QUANT_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden -ffp-contract=off $(OPENMP_CFLAGS)
QUANT_CPPFLAGS = $(AM_CPPFLAGS) -DGGUF_BUILDING_LIBRARY

noinst_LTLIBRARIES += quant/libquant.la
quant_libquant_la_SOURCES = \
	quant/quant.h \
	quant/half.h \
	quant/blocks.h \
	quant/kernels.h \
	quant/fp16.c \
	quant/dequant.c \
	quant/quantize.c \
	quant/rows.c \
	quant/simd.c
quant_libquant_la_CFLAGS = $(QUANT_CFLAGS)
quant_libquant_la_CPPFLAGS = $(QUANT_CPPFLAGS)

gguf_libgguf_la_LIBADD += quant/libquant.la -lm
gguf_libgguf_la_LDFLAGS += $(OPENMP_CFLAGS)

ggufinclude_HEADERS += quant/quant.h
