#!/bin/bash
# scripts/packages.sh - the Debian packages, built and tried as an operator
# would: dpkg-buildpackage -us -uc -b on a copy of the tracked tree, lintian
# (no error), the five packages installed, poold started by systemd where
# systemd runs (else as its unit would start it: the unit's ExecStart as its
# User, with its AmbientCapabilities, its RuntimeDirectory and
# StateDirectory made for it), the demo against the installed binaries
# (poolctl, a libpool client built with pkg-config, the Python package, the
# bash completion), then purged: nothing they installed is left. The CI
# stage "packages" (scripts/ci-extra.sh).
. "$(dirname "$0")/deps.sh"

deps_install "${PACKAGES[@]}" debhelper lintian fakeroot
work=$(mktemp -d "${TMPDIR:-/tmp}/pool-packages.XXXXXX")
PKGS=(poold poolctl libpool0 libpool-dev python3-pool)
POOLD_PID= installed=
# On a failure too: poold stopped, the packages purged, the work removed.
cleanup() {
	[ -n "$POOLD_PID" ] && kill -TERM "$POOLD_PID" 2>/dev/null && wait "$POOLD_PID"
	[ -n "$installed" ] && apt-get purge -y "${PKGS[@]}" >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "packages.sh: $*" >&2; exit 1; }
step() { printf '\n==> %s\n' "$*"; }

step "dpkg-buildpackage -us -uc -b"
mkdir "$work/src"
git -C "$TOP" ls-files -z | (cd "$TOP" && xargs -0 tar -cf - --) | tar -xf - -C "$work/src"
(cd "$work/src" && dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1 ||
	{ tail -n 60 "$work/build.log"; fail "the packages did not build"; }
ls "$work"/*.deb

step "lintian"
lintian --fail-on error "$work"/pool_*.changes || fail "lintian reports errors"

step "install them"
debs=()
for p in "${PKGS[@]}"; do debs+=("$(ls "$work/${p}_"*.deb)"); done
installed=1
apt-get install -y "${debs[@]}" >"$work/install.log" 2>&1 || { cat "$work/install.log"; fail "install"; }
dpkg -L "${PKGS[@]}" | sort -u >"$work/files"
[ -f /etc/poold.conf ] || fail "no /etc/poold.conf"
dpkg-query -W -f='${Conffiles}\n' poold | grep -q '/etc/poold.conf' || fail "/etc/poold.conf is not a conffile"
id poold >/dev/null || fail "the user poold was not made"

unit=/lib/systemd/system/poold.service
if [ -d /run/systemd/system ]; then
	step "poold started by systemd"
	systemctl restart poold
	systemctl is-active --quiet poold || { systemctl status poold; fail "poold is not active"; }
else
	step "no systemd here: poold started as its unit would start it"
	exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
	user=$(sed -n 's/^User=//p' "$unit")
	caps=$(sed -n 's/^AmbientCapabilities=//p' "$unit" | tr 'A-Z ' 'a-z\n' | sed 's/^cap_/+/' | paste -sd,)
	install -d -o "$user" -g "$user" -m 0755 /run/poold /var/lib/poold
	# shellcheck disable=SC2086
	setpriv --reuid="$user" --regid="$user" --init-groups --no-new-privs --inh-caps=-all,"$caps" \
		--ambient-caps=-all,"$caps" --bounding-set=-all,"$caps" $exec_start 2>"$work/poold.log" &
	POOLD_PID=$!
fi
for _ in $(seq 100); do poolctl status >/dev/null 2>&1 && break; sleep 0.1; done

step "the demo against the installed binaries"
# (nothing a make install put under /usr/local, nor the build tree)
export PATH=/usr/sbin:/usr/bin:/sbin:/bin PKG_CONFIG_PATH= \
	PKG_CONFIG_LIBDIR=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/pkgconfig:/usr/share/pkgconfig
poolctl status || { cat "$work/poold.log" 2>/dev/null; fail "poolctl status"; }
poolctl --json status | python3 -m json.tool >/dev/null || fail "poolctl --json status"
poolctl kv create demo 16M && poolctl kv stats demo || fail "kv"
poolctl region create demo 4M && poolctl regions && poolctl region destroy demo || fail "regions"
cc -o "$work/pool-demo" "$TOP/examples/pool-demo.c" $(pkg-config --cflags --libs libpool) ||
	fail "a libpool client does not build against libpool-dev"
ldd "$work/pool-demo" | grep -Eq "libpool.so.0 => /(usr/)?lib/" || fail "pool-demo does not load /usr/lib's libpool"
"$work/pool-demo" || fail "examples/pool-demo against the installed libpool"
(cd "$work" && python3 -S -c 'import sys; sys.path.insert(0, "/usr/lib/python3/dist-packages")
import pool
assert pool.__file__.startswith("/usr/lib/python3/dist-packages/"), pool.__file__
print(pool.Pool().status())') || fail "the installed Python package"
bash -c '. /usr/share/bash-completion/completions/poolctl && complete -p poolctl' || fail "completion"
man -w poold poolctl libpool pool_snap_put >/dev/null || fail "manual pages"

step "stop and purge"
if [ -d /run/systemd/system ]; then
	systemctl stop poold
else
	kill -TERM "$POOLD_PID"; wait "$POOLD_PID" || fail "poold did not stop cleanly"
	POOLD_PID=
	rm -rf /run/poold # (what systemd's RuntimeDirectory= would remove)
fi
apt-get purge -y "${PKGS[@]}" >"$work/purge.log" 2>&1 || { cat "$work/purge.log"; fail "purge"; }
installed=
left=()
while read -r f; do
	[ -d "$f" ] && continue
	[ -e "$f" ] || [ -L "$f" ] && left+=("$f")
done <"$work/files"
[ -e /var/lib/poold ] && left+=(/var/lib/poold)
[ ${#left[@]} -eq 0 ] || fail "left after the purge: ${left[*]}"
echo "packages.sh: built, lintian clean, installed, served the demo, purged without a trace"
