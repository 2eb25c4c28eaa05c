# One image, one target per app (docs/operations.md "Deployment"):
#   --target api | heartbeat | tunnel-agent | migrate | all-in-one (the default, last stage)
# Node 24 runs the TypeScript sources directly (type stripping), so the only build step is the
# console's static bundle.
#
# ENTRYPOINT is node itself: no npm and no shell between the supervisor and the process, so
# SIGTERM reaches the app, which logs "shutting down", finishes in-flight work and exits 0
# (npm -> sh -> node lost the signal at sh and left node to be killed). Node as PID 1 handles the
# signals it registers (the apps register SIGTERM and SIGINT) and waits for the few children it
# spawns itself; compose adds `init: true` anyway.
#
# BASE is any Debian bookworm/trixie image with Node 24 on PATH as `node`. The default is the
# official one; deploy/image/build-image.sh builds a base from debootstrap and the pinned node
# from npm instead, for machines without a registry.
ARG BASE=node:24-bookworm-slim

FROM ${BASE} AS deps
# A CA bundle for npm behind a TLS-intercepting registry mirror (build-image.sh passes the host's
# /etc/ssl/certs/ca-certificates.crt, which its base carries); a build argument, so it never
# reaches the runtime image's environment. Empty: Node's own CAs.
ARG NODE_EXTRA_CA_CERTS=
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/shared/package.json packages/shared/
COPY packages/runtime/package.json packages/runtime/
COPY packages/db/package.json packages/db/
COPY packages/stripe-emulator/package.json packages/stripe-emulator/
COPY apps/api/package.json apps/api/
COPY apps/heartbeat-daemon/package.json apps/heartbeat-daemon/
COPY apps/tunnel-agent/package.json apps/tunnel-agent/
COPY apps/router-simulator/package.json apps/router-simulator/
COPY apps/console/package.json apps/console/
COPY apps/all-in-one/package.json apps/all-in-one/
COPY test/package.json test/
# Production dependencies only; install scripts off (the one worth having is built below).
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

# ssh2's native crypto (the root postinstall, scripts/build-ssh2-binding.ts) halves ssh2's
# CPU (docs/scale.md "The model"): built here against the image's Node with its headers
# (<prefix>/include/node) and npm's node-gyp, so the compiler stays out of the runtime image,
# which takes the one built file.
FROM deps AS ssh2-crypto
RUN apt-get -o APT::Sandbox::User=root update \
 && apt-get -o APT::Sandbox::User=root install -y --no-install-recommends python3 make g++
COPY scripts/build-ssh2-binding.ts scripts/
RUN node scripts/build-ssh2-binding.ts \
 && test -f node_modules/ssh2/lib/protocol/crypto/build/Release/sshcrypto.node

# The operator console's static bundle (docs/console.md "Build"): built here with the dev
# dependencies, so the runtime image carries the files and no build tools.
FROM ${BASE} AS console
ARG NODE_EXTRA_CA_CERTS=
WORKDIR /app
# tsconfig.json: the console's extends it, and the bundler reads it.
COPY package.json package-lock.json tsconfig.json ./
COPY packages ./packages
COPY apps ./apps
COPY test/package.json test/
# The image's own Node runs the build (with install scripts off, the pinned `node` package has no binary).
RUN npm ci --ignore-scripts --no-audit --no-fund && node apps/console/build/build-console.ts

FROM ${BASE} AS runtime
# The tunnel hub (TUNNEL_MODE=wireguard) drives `ip`, `wg` and, where the kernel has no WireGuard,
# `wireguard-go` (docs/operations.md "The management tunnel"). First, so code changes keep it cached.
RUN apt-get -o APT::Sandbox::User=root update \
 && apt-get -o APT::Sandbox::User=root install -y --no-install-recommends iproute2 wireguard-tools wireguard-go \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    DATA_DIR=/data \
    NODE_OPTIONS=--enable-source-maps
WORKDIR /app
# All of /app: besides node_modules, npm puts a dependency whose version differs from the hoisted
# one under its workspace (packages/<name>/node_modules), so node_modules alone misses it; .dockerignore keeps the COPYs below from touching these directories.
COPY --from=deps /app ./
COPY --from=ssh2-crypto /app/node_modules/ssh2/lib/protocol/crypto/build/Release/sshcrypto.node \
     ./node_modules/ssh2/lib/protocol/crypto/build/Release/
COPY packages ./packages
COPY apps ./apps
COPY --from=console /app/apps/console/dist ./apps/console/dist
COPY scripts ./scripts
# A numeric user, so Kubernetes' runAsNonRoot can check it without reading /etc/passwd. /data is
# the only place an app writes (and only without DATABASE_URL or for dev secrets).
RUN mkdir -p /data && chown 10001:10001 /data
USER 10001:10001
EXPOSE 3000 3001 3002
ENTRYPOINT ["node"]

FROM runtime AS api
CMD ["apps/api/src/main.ts"]

FROM runtime AS heartbeat
# HEARTBEAT_NODE_FLAGS (apps/heartbeat-daemon/src/config.ts): in the entry point, so that compose's
# `command` and Kubernetes' `args` keep them.
ENTRYPOINT ["node", "--heap-growing-percent=100"]
CMD ["apps/heartbeat-daemon/src/main.ts"]

FROM runtime AS tunnel-agent
CMD ["apps/tunnel-agent/src/main.ts"]

FROM runtime AS migrate
CMD ["apps/all-in-one/src/admin/admin-cli.ts", "migrate"]

FROM runtime AS all-in-one
CMD ["apps/all-in-one/src/main.ts"]
