#!/bin/sh
# Build a small out-of-tree module against Debian's linux-headers-6.1.0-56-cloud-amd64
# with `make PAHOLE=canonbtf-pahole M=…`, the vmlinux BTF in the headers tree so that
# Makefile.modfinal generates module BTF, and the resolve_btfids of linux-kbuild-6.12*
# (6.1's kbuild package has none). Then compare the module's .BTF with
# `canonbtf encode --base`. Usage: tools/extmod_build.sh VMLINUX_BTF [WORKDIR]
# VMLINUX_BTF: the 6.1 kernel's BTF as canonbtf-pahole makes it (raw or an ELF).
# Needs: apt-get (download only), dpkg-deb, gcc-12, make, objcopy, canonbtf-pahole.
set -eu
btf=$(realpath "$1")
work=${2:-$(mktemp -d)}
ver=6.1.0-56
mkdir -p "$work/root/usr/lib" "$work/mod"
cd "$work"
apt-get download "linux-headers-$ver-cloud-amd64" "linux-headers-$ver-common" >/dev/null
for deb in ./*.deb; do dpkg-deb -x "$deb" root; done
ln -sfn /usr/lib/linux-kbuild-6.1 root/usr/lib/linux-kbuild-6.1
hdr=$work/root/usr/src/linux-headers-$ver-cloud-amd64
sed -i "s|/usr/src/linux-headers-$ver-common|$work/root/usr/src/linux-headers-$ver-common|" \
	"$hdr/Makefile"
cp "$btf" "$hdr/vmlinux"
cat > mod/hello.c <<'SRC'
#include <linux/module.h>
#include <linux/skbuff.h>
struct hello_state { struct list_head node; struct sk_buff_head queue; unsigned long hits; };
static struct hello_state state;
noinline int hello_count(struct hello_state *s, struct sk_buff *skb)
{
	s->hits += skb ? skb->len : 1;
	return (int)s->hits;
}
EXPORT_SYMBOL_GPL(hello_count);
static int __init hello_init(void)
{
	INIT_LIST_HEAD(&state.node);
	skb_queue_head_init(&state.queue);
	return hello_count(&state, NULL) ? 0 : -EINVAL;
}
static void __exit hello_exit(void) { }
module_init(hello_init);
module_exit(hello_exit);
MODULE_LICENSE("GPL");
SRC
echo 'obj-m := hello.o' > mod/Kbuild
resolve=$(ls /usr/lib/linux-kbuild-6.12*/tools/bpf/resolve_btfids/resolve_btfids | tail -n 1)
make -s -C "$hdr" M="$work/mod" PAHOLE=canonbtf-pahole RESOLVE_BTFIDS="$resolve" modules
objcopy --dump-section .BTF="$work/hello.btf" "$work/mod/hello.ko" /dev/null
canonbtf encode --base "$hdr/vmlinux" --features=-decl_tag_kfuncs "$work/mod/hello.ko" \
	-o "$work/ref.btf" 2>/dev/null
cmp "$work/hello.btf" "$work/ref.btf" && echo "hello.ko .BTF = canonbtf encode --base: same bytes"
canonbtf check --kernel --base "$hdr/vmlinux" "$work/hello.btf" || true
