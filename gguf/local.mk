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
	gguf/hash.c \
	gguf/split.c

gguf_libgguf_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
gguf_libgguf_la_CPPFLAGS = $(AM_CPPFLAGS) -DGGUF_BUILDING_LIBRARY $(LIBCRYPTO_CFLAGS)
gguf_libgguf_la_LIBADD = -lxxhash -lz $(LIBCRYPTO_LIBS)
gguf_libgguf_la_LDFLAGS = $(AM_LDFLAGS) -version-info $(LIBGGUF_VERSION_INFO) \
	-export-symbols-regex '^gguf_' -no-undefined

ggufincludedir = $(includedir)/gguf
ggufinclude_HEADERS = gguf/gguf.h

pkgconfigdir = $(libdir)/pkgconfig
pkgconfig_DATA = gguf/libgguf.pc
EXTRA_DIST += gguf/libgguf.pc.in

# After `make install` the dynamic loader must learn of a new shared
# library (libtool --finish's advice: run ldconfig), or the tools fail
# until someone runs it.  So when installing for real, as root, this runs
# ldconfig to rebuild the loader's cache.  Not for a staged install
# (DESTDIR: the files are not where they will run, and a package manager
# runs ldconfig when it installs them), not as another user (who cannot
# write the cache; make distcheck installs into a temporary prefix that
# way), and not where no ldconfig is found: /sbin and /usr/sbin are
# searched as well as PATH, as a user's PATH often lacks them (LDCONFIG=
# names one).  A failing ldconfig does not fail the install: it is
# reported with what to do instead.  Whether libdir is a directory the
# loader searches (it is not for every prefix) is said too.
LDCONFIG =
install-exec-hook: install-ldconfig
install-ldconfig:
	@if test -n '$(DESTDIR)'; then exit 0; fi; \
	if test "`id -u`" != 0; then exit 0; fi; \
	ldconfig='$(LDCONFIG)'; \
	if test -z "$$ldconfig"; then \
	  for p in /sbin/ldconfig /usr/sbin/ldconfig `command -v ldconfig 2>/dev/null`; do \
	    if test -x "$$p"; then ldconfig=$$p; break; fi; \
	  done; \
	fi; \
	if test -z "$$ldconfig"; then \
	  echo "note: ldconfig not found: run it to let the loader find the shared library in $(libdir)"; \
	  exit 0; \
	fi; \
	echo "$$ldconfig"; \
	if "$$ldconfig"; then \
	  if "$$ldconfig" -p 2>/dev/null | grep -F ' => $(libdir)/libgguf.so.' >/dev/null; then :; else \
	    echo "note: $(libdir) is not in the dynamic loader's search path (/etc/ld.so.conf):" \
	      "add it there and run ldconfig, or set LD_LIBRARY_PATH=$(libdir)"; \
	  fi; \
	else \
	  echo "warning: $$ldconfig failed (status $$?); the install is complete, but run" \
	    "ldconfig before using the tools, or set LD_LIBRARY_PATH=$(libdir)"; \
	fi
.PHONY: install-ldconfig
