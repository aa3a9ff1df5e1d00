#!/bin/sh
# Rebuild golden/bpf/obj/*.bpf.o: each program compiled with clang -target bpf against the
# full canonbtf header of the 6.12 corpus kernel, as a project would before cutting its slim
# header with `canonbtf dump --format c --types-from`. tests/test_slim.py reads these
# objects where clang is absent. Needs clang and ../shared/corpus; run from anywhere.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
kernel=${KERNEL_BTF:-$here/../../../shared/corpus/vmlinux-6.12.113-cloud-amd64.btf}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$here/../.."
python3 -m canonbtf dump "$kernel" --format c -o "$tmp/vmlinux.h"
mkdir -p "$here/obj"
for src in "$here"/*.bpf.c; do
	name=$(basename "$src" .c)
	case $name in
	*_kfunc.bpf) # the corpus BTF tags no kfuncs: tests build these against the running kernel
		continue ;;
	esac
	clang -target bpf -O2 -g -DCANONBTF_MINI_BPF -fdebug-prefix-map="$here=." -fdebug-prefix-map="$tmp=." \
		-I "$tmp" -I "$here" -c "$src" -o "$here/obj/$name.o"
	# The DWARF is most of the object and nothing here reads it; .BTF and .BTF.ext stay.
	llvm-strip --strip-debug "$here/obj/$name.o"
done
