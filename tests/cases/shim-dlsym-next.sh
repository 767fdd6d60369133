#!/usr/bin/env bash
# shim-dlsym-next — the dlsym override keeps the meaning of RTLD_NEXT and RTLD_DEFAULT for
# other callers: an interposing library that finds "the next" definition of a function must
# find the one after itself, not the one after libautograph.
set -eu
: "${AG_LIB:?}" "${AG_TMP:?}"
CC=${CC:-cc}
cd "$AG_TMP"
cat >base.c <<'C'
const char *who(void) { return "base"; }
C
cat >wrap.c <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
const char *who(void) {
  const char *(*next)(void) = (const char *(*)(void))dlsym(RTLD_NEXT, "who");
  static char buf[64];
  snprintf(buf, sizeof buf, "wrap>%s", next ? next() : "NULL");
  return buf;
}
C
cat >main.c <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
const char *who(void);
int main(void) {
  const char *(*d)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "who");
  void *h = dlopen("libbase.so", RTLD_NOW);
  const char *(*b)(void) = h ? (const char *(*)(void))dlsym(h, "who") : NULL;
  void *none = dlsym(RTLD_DEFAULT, "no_such_symbol_anywhere");
  printf("%s %s %s %s\n", who(), d ? d() : "NULL", b ? b() : "NULL", none ? "found" : "absent");
  return 0;
}
C
$CC -shared -fPIC -o libbase.so base.c
$CC -shared -fPIC -o libwrap.so wrap.c -ldl
$CC -o main main.c -L. -Wl,--no-as-needed -lwrap -lbase -ldl -Wl,-rpath,"$AG_TMP"
plain=$(./main)
pre=$(LD_PRELOAD="${AG_SAN_PRELOAD:+$AG_SAN_PRELOAD }$AG_LIB" ./main)
both=$(LD_PRELOAD="${AG_SAN_PRELOAD:+$AG_SAN_PRELOAD }$AG_LIB $AG_TMP/libwrap.so" ./main)
echo "plain: $plain"; echo "preload: $pre"; echo "preload+wrap: $both"
[ "$plain" = "wrap>base wrap>base base absent" ]
[ "$pre" = "$plain" ]
[ "$both" = "$plain" ]
