# scripts/deps.sh - sourced by demo.sh and test.sh: install what is missing
# from Debian's archive, and build the tree if it is not built.

set -euo pipefail
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Build and test dependencies, all from Debian 12.
PACKAGES=(
	build-essential autoconf automake libtool pkg-config
	libucx-dev ucx-utils libevent-dev libprotobuf-c-dev protobuf-c-compiler
	libnuma-dev libpmem2-dev libcunit1-dev libxxhash-dev libssl-dev nftables libnftables-dev
	libzmq3-dev libmsgpack-dev python3-zmq python3-msgpack
	mandoc groff-base iproute2 python3 python3-redis python3-pytest python3-numpy procps util-linux redis-tools
	libhiredis-dev redis-server iperf3 xxhash libhnswlib-dev libfaiss-dev openssl libjansson-dev
)
# What only the tests use: etcd members of their own (coord.etcd); tclsh for
# Redis's own test suite (tests/redis).
TEST_PACKAGES=(etcd-server etcd-client tcl)

deps_install() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "==> installing: ${missing[*]}"
	if [ "$(id -u)" -ne 0 ]; then
		echo "error: missing packages and not root; run as root or: apt-get install ${missing[*]}" >&2
		return 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

deps_build() {
	cd "$TOP"
	if [ ! -x configure ]; then
		echo "==> autogen.sh"
		./autogen.sh
	fi
	if [ ! -f Makefile ]; then
		echo "==> configure"
		./configure --enable-werror ${CONFIGURE_FLAGS:-}
	fi
	echo "==> make"
	make -j"$(nproc)"
}
