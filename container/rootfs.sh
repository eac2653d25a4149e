#!/bin/bash
# Tests the image's recipe where no container tool runs: builds the image's root filesystem with
# mmdebstrap (Debian, as the Containerfile's base), runs container/install.sh in it with chroot,
# then pounder inside it: --version, a bench against a server in the same root, and a bench whose
# load comes from an agent on a one-node Ray cluster started in the root.
#
#   container/rootfs.sh WHEEL [ROOT]      (root; make container-check)
#
# ROOT (default: a new temporary folder) is removed at the end, as is everything started in it.
set -euo pipefail

wheel=$(realpath "${1:?usage: rootfs.sh WHEEL [ROOT]}")
root=${2:-$(mktemp -d /tmp/pounder-rootfs.XXXXXX)}
here=$(dirname "$(realpath "$0")")
suite=${DEBIAN:-bookworm}
mirror=${MIRROR:-http://deb.debian.org/debian}
[ "$(id -u)" = 0 ] || { echo "rootfs.sh: needs root (mmdebstrap, chroot, mount)" >&2; exit 2; }
command -v mmdebstrap >/dev/null || { echo "rootfs.sh: needs mmdebstrap (apt-get install mmdebstrap)" >&2; exit 2; }

mounted=()
cleanup() {
    # every process whose root is the chroot, then the mounts, then the folder
    for proc in /proc/[0-9]*; do
        if [ "$(readlink "$proc/root" 2>/dev/null)" = "$root" ]; then kill -9 "${proc#/proc/}" 2>/dev/null || true; fi
    done
    sleep 0.5
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
    rm -rf --one-file-system "$root"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

started=$SECONDS
mmdebstrap --quiet --variant=apt "$suite" "$root" "$mirror"
for fs in proc sys dev dev/pts dev/shm; do
    mkdir -p "$root/$fs"
    mount --bind "/$fs" "$root/$fs"
    mounted+=("$root/$fs")
done
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
mkdir -p "$root/tmp/wheel"
cp "$wheel" "$root/tmp/wheel/"
cp "$here/install.sh" "$root/tmp/install.sh"
# pip inside the root as the host's is set up (its index, proxy certificate)
pip_env=()
while IFS='=' read -r name value; do
    case $name in PIP_CERT) cp "$value" "$root/tmp/pip-cert.pem"; pip_env+=("PIP_CERT=/tmp/pip-cert.pem") ;;
        PIP_FIND_LINKS) ;;  # a host folder
        PIP_*|HTTP_PROXY|HTTPS_PROXY|NO_PROXY|http_proxy|https_proxy|no_proxy) pip_env+=("$name=$value") ;;
    esac
done < <(env)
if [ -f /etc/pip.conf ]; then
    sed "s|^cert *=.*|cert = /tmp/pip-cert.pem|" /etc/pip.conf > "$root/etc/pip.conf"
    cp "$(sed -n 's/^cert *= *//p' /etc/pip.conf | head -1)" "$root/tmp/pip-cert.pem" 2>/dev/null || true
fi
in_root() { chroot "$root" env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8 "${pip_env[@]}" "$@"; }

in_root sh /tmp/install.sh "/tmp/wheel/$(basename "$wheel")" "${EXTRAS:-ray}"
echo "rootfs.sh: installed in $((SECONDS - started)) s; $(du -sh --exclude=proc --exclude=sys --exclude=dev "$root" | cut -f1)"

# 1. the version the wheel carries
version=$(in_root pounder --version)
echo "rootfs.sh: $version"
# 2. a bench against a server in the root, on loopback
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
in_root python3 -m http.server "$port" --bind 127.0.0.1 --directory /tmp >/dev/null 2>&1 &
for _ in $(seq 50); do python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && break; sleep 0.1; done
# the requests a bench's JSON says complete, which must be all 300 it was asked for
all_complete() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
complete = json.load(open(sys.argv[1]))["requests"]["complete"]
assert complete == 300, complete
print(f"rootfs.sh: {sys.argv[2]}: {complete} of 300 requests complete")
EOF
}
in_root pounder bench "http://127.0.0.1:$port/install.sh" -n 300 -c 4 --json /tmp/bench.json >/dev/null
all_complete "$root/tmp/bench.json" "bench in the root"
# 3. the same load from an agent on a one-node Ray cluster started in the root
ray_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
in_root ray start --head --node-ip-address 127.0.0.1 --port "$ray_port" --num-cpus 1 --include-dashboard false \
    --disable-usage-stats >/dev/null
in_root pounder bench "http://127.0.0.1:$port/install.sh" -n 300 -c 4 --ray "127.0.0.1:$ray_port" --agents 1 \
    --json /tmp/bench-ray.json >/dev/null
in_root ray stop --force >/dev/null 2>&1 || true
all_complete "$root/tmp/bench-ray.json" "bench from a Ray agent in the root"
echo "rootfs.sh: the recipe works ($((SECONDS - started)) s)"
