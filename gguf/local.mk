# gguf/: the format library, libgguf.
lib_LTLIBRARIES += gguf/libgguf.la

gguf_libgguf_la_SOURCES = \
	gguf/internal.h \
	gguf/types.c \
	gguf/error.c \
	gguf/names.c \
	gguf/source.c \
	gguf/read.c \
	gguf/write.c \
	gguf/hash.c

gguf_libgguf_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
gguf_libgguf_la_CPPFLAGS = $(AM_CPPFLAGS) -DGGUF_BUILDING_LIBRARY
gguf_libgguf_la_LIBADD = -lxxhash -lz
gguf_libgguf_la_LDFLAGS = $(AM_LDFLAGS) -version-info $(LIBGGUF_VERSION_INFO) \
	-export-symbols-regex '^gguf_' -no-undefined

ggufincludedir = $(includedir)/gguf
ggufinclude_HEADERS = gguf/gguf.h

pkgconfigdir = $(libdir)/pkgconfig
pkgconfig_DATA = gguf/libgguf.pc
EXTRA_DIST += gguf/libgguf.pc.in
