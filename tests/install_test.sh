#!/bin/sh
# make install works: install into a temporary prefix, then build and run a
# consumer through pkg-config and through find_package(libslub), and a
# program linked with the installed libslub-malloc.a.
set -eu
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
# The slabinfo command, in bin/ and runnable from there.
"$tmp/prefix/bin/slabinfo" -h | grep -q -- '--pid PID'
echo "slabinfo installed: ok"
# fail-sweep beside it, executable; no command is a usage error (2).
[ -x "$tmp/prefix/bin/fail-sweep" ]
set +e
"$tmp/prefix/bin/fail-sweep" 2>"$tmp/usage"
rc=$?
set -e
[ $rc -eq 2 ] && grep -q '^usage: fail-sweep' "$tmp/usage"
echo "fail-sweep installed: ok"
cat > "$tmp/demo.c" <<'C'
#include <slub.h>
#include <string.h>
int main(void)
{
	char buf[256];
	void *p = __get_free_pages(GFP_KERNEL | __GFP_ZERO, 2);

	if (!p)
		return 1;
	free_pages(p, 2);
	if (slub_sysfs_read("page_alloc/buddyinfo", buf, sizeof(buf)) <= 0)
		return 2;
	return strncmp(buf, "Node 0, zone", 12) ? 3 : 0;
}
C
# The installed header alone, in every C and C++ standard a consumer may
# build with: pedantic and warning-free (C89 had failed on kfree_bulk's
# inline).
printf '#include <slub.h>\nint main(void) { return 0; }\n' > "$tmp/hdr.c"
for std in c89 gnu89 c99 c11 c17; do
	cc -std=$std -pedantic -Wall -Wextra -Werror -I"$tmp/prefix/include" \
		-c "$tmp/hdr.c" -o "$tmp/hdr.o"
done
if command -v c++ >/dev/null 2>&1; then
	cp "$tmp/hdr.c" "$tmp/hdr.cpp"
	for std in c++98 c++11 c++17; do
		c++ -std=$std -pedantic -Wall -Wextra -Werror -I"$tmp/prefix/include" \
			-c "$tmp/hdr.cpp" -o "$tmp/hdr.o"
	done
fi
echo "slub.h in C89..C17 and C++98..C++17: ok"
if command -v pkg-config >/dev/null 2>&1; then
	PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" ; export PKG_CONFIG_PATH
	# shellcheck disable=SC2046
	cc "$tmp/demo.c" -o "$tmp/demo-pc" $(pkg-config --cflags --libs libslub) \
		-Wl,-rpath,"$tmp/prefix/lib"
	"$tmp/demo-pc"
	echo "pkg-config consumer: ok"
	# Debian's multiarch layout (LIBDIR lib/x86_64-linux-gnu, as
	# CMAKE_INSTALL_PREFIX=/usr chooses there): the .pc file a build so
	# configured writes finds the headers and the library from where it
	# lies (a fixed ../.. had named lib/include).
	cmake -S "$src" -B "$tmp/ma-build" -DCMAKE_INSTALL_LIBDIR=lib/x86_64-linux-gnu \
		-DSLUB_TESTS=OFF -DSLUB_BENCH=OFF >/dev/null
	ma=$tmp/ma/lib/x86_64-linux-gnu
	mkdir -p "$ma/pkgconfig"
	cp "$tmp/ma-build/libslub.pc" "$ma/pkgconfig/"
	cp -R "$tmp/prefix/include" "$tmp/ma/include"
	cp -P "$tmp/prefix/lib/"libslub.so* "$ma/"
	# shellcheck disable=SC2046
	cc "$tmp/demo.c" -o "$tmp/demo-ma" \
		$(PKG_CONFIG_PATH="$ma/pkgconfig" pkg-config --cflags --libs libslub) \
		-Wl,-rpath,"$ma"
	"$tmp/demo-ma"
	echo "pkg-config consumer, multiarch libdir: ok"
fi
mkdir -p "$tmp/cm"
cat > "$tmp/cm/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(demo C)
find_package(libslub REQUIRED)
add_executable(demo ../demo.c)
target_link_libraries(demo libslub::slub)
add_executable(demo_static ../demo.c)
target_link_libraries(demo_static libslub::slub_static)
add_executable(dropin_static ../dropin.c)
target_link_libraries(dropin_static libslub::slub-malloc-static)
CM
# The drop-in linked in from libslub-malloc.a: malloc is libslub's (a
# kmalloc class's size, and the exit report), and the program's own
# free_pages() stays its own.
cat > "$tmp/dropin.c" <<'C'
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
static int own;
void free_pages(void *addr, unsigned int order)
{
	(void)addr;
	(void)order;
	own++;
}
int main(void)
{
	void *p = malloc(100);

	free_pages(NULL, 0);
	printf("%zu %d\n", malloc_usable_size(p), own);
	free(p);
	return 0;
}
C
cmake -S "$tmp/cm" -B "$tmp/cm/b" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/cm/b" >/dev/null
"$tmp/cm/b/demo"
"$tmp/cm/b/demo_static"
echo "CMake consumer (shared and static): ok"
SLUB_STATS=1 "$tmp/cm/b/dropin_static" >"$tmp/dropin.out" 2>"$tmp/dropin.err"
[ "$(cat "$tmp/dropin.out")" = "112 1" ] || { cat "$tmp/dropin.out"; exit 1; }
grep -q '^libslub: SLUB_STATS report for dropin_static$' "$tmp/dropin.err"
echo "CMake consumer of libslub-malloc.a: ok"
echo "1 passed, 0 failed"
