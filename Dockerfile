# One image for every app; the command chooses it (docs/operations.md "Deployment"):
#   docker run IMAGE start:api | start:heartbeat | start:tunnel-agent | admin -- migrate | start
# Node 24 runs the TypeScript sources directly (type stripping), so the only build step is the
# console's static bundle.

FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/shared/package.json packages/shared/
COPY packages/db/package.json packages/db/
COPY packages/stripe-emulator/package.json packages/stripe-emulator/
COPY apps/api/package.json apps/api/
COPY apps/heartbeat-daemon/package.json apps/heartbeat-daemon/
COPY apps/tunnel-agent/package.json apps/tunnel-agent/
COPY apps/router-simulator/package.json apps/router-simulator/
COPY apps/console/package.json apps/console/
COPY apps/all-in-one/package.json apps/all-in-one/
COPY test/package.json test/
# Production dependencies only; install scripts off (none is needed at run time).
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

# The operator console's static bundle (docs/console.md "Build"): built here with the dev
# dependencies, so the runtime image carries the files and no build tools.
FROM node:24-bookworm-slim AS console
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages ./packages
COPY apps ./apps
COPY test/package.json test/
# The image's own Node runs the build (with install scripts off, the pinned `node` package has no binary).
RUN npm ci --ignore-scripts --no-audit --no-fund && node apps/console/build/build-console.ts

FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    DATA_DIR=/data \
    NODE_OPTIONS=--enable-source-maps
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=deps /app/package.json /app/package-lock.json ./
COPY packages ./packages
COPY apps ./apps
COPY --from=console /app/apps/console/dist ./apps/console/dist
COPY scripts ./scripts
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 3000 3001 3002
# npm forwards SIGTERM to the app, which shuts down gracefully; run with an init (`--init`,
# compose `init: true`) so zombie processes are reaped.
ENTRYPOINT ["npm", "run", "--silent"]
CMD ["start"]
