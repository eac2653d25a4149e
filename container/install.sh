#!/bin/sh
# Installs pounder in a Debian root filesystem, as root inside it: the one recipe of the image
# (container/Containerfile runs it in a build, container/rootfs.sh in a chroot to test it).
#
#   install.sh WHEEL [EXTRAS]
#
# WHEEL: a pounder wheel (make dist). EXTRAS: pip extras, default "ray" (agents on KubeRay).
# SERVERS (environment): Debian packages of the servers to tune in the image, default none
# (e.g. "apache2 libapache2-mod-perl2 starman php-fpm nginx uwsgi uwsgi-plugin-python3 puma unicorn").
set -eu

wheel=${1:?usage: install.sh WHEEL [EXTRAS]}
extras=${2-ray}
servers=${SERVERS-}

export DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes
apt-get update -qq
# python3-venv: pounder lives in its own environment (Debian's Python is externally managed);
# procps, strace: what pounder's mem and syscalls read besides /proc
# shellcheck disable=SC2086  # SERVERS is a list of package names
apt-get install -y -qq --no-install-recommends ca-certificates python3 python3-venv procps strace $servers >/dev/null
apt-get clean
rm -rf /var/lib/apt/lists/*

python3 -m venv /opt/pounder
/opt/pounder/bin/pip install -q --disable-pip-version-check --no-cache-dir "${wheel}${extras:+[$extras]}"
for tool in pounder ray; do
    if [ -x "/opt/pounder/bin/$tool" ]; then ln -sf "/opt/pounder/bin/$tool" "/usr/local/bin/$tool"; fi
done
pounder --version
