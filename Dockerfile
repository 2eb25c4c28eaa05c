# One image for every app; the command chooses it (docs/operations.md "Deployment"):
#   docker run IMAGE start:api | start:heartbeat | start:tunnel-agent | admin -- migrate | start
# Node 24 runs the TypeScript sources directly (type stripping), so there is no build step.

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
COPY apps/all-in-one/package.json apps/all-in-one/
COPY test/package.json test/
# Production dependencies only; install scripts off (none is needed at run time).
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

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
COPY scripts ./scripts
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 3000 3001 3002
# npm forwards SIGTERM to the app, which shuts down gracefully; run with an init (`--init`,
# compose `init: true`) so zombie processes are reaped.
ENTRYPOINT ["npm", "run", "--silent"]
CMD ["start"]
