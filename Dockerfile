# syntax=docker/dockerfile:1
# Build stage: production dependencies only (Node 24 runs the TypeScript itself by stripping types).
# The minor version the `node` package pins for development (package.json), so the image runs what
# the tests ran; patch releases come with a rebuild.
FROM node:24.21-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# Exactly the lockfile's versions; production dependencies have no install scripts to allow.
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM node:24.21-bookworm-slim
# Probes and the scraper use the management port: it answers while the main one is saturated.
# JSON log lines even under `docker run -t`, whose terminal would otherwise make them pretty.
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000 MANAGEMENT_PORT=9464 LOG_FORMAT=json
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY src ./src
COPY queries ./queries
COPY endpoints ./endpoints
# `npm run key` and `npm run token` in the container: docker run --rm log-query npm run key -- ...
COPY scripts ./scripts
# Named volumes mounted here take this owner, so DUCKDB_PATH=/data/db/... and the demo exports
# (docker-compose.demo.yml) are writable by node, and so is the cursor secret a container without
# CURSOR_SECRET makes (/app is not node's): kept across restarts, and across new containers with a
# named volume at /data/state (docs/operations.md). No VOLUME for it: an anonymous volume is new for
# every `docker run`, so it would keep nothing across a deploy.
RUN mkdir -p /data/db /data/exports /data/state && chown node:node /data/db /data/exports /data/state \
  && chmod 700 /data/state
ENV CURSOR_SECRET_FILE=/data/state/cursor-secret
ENV PID_FILE=/data/state/service.pid
USER node
EXPOSE 3000 9464
HEALTHCHECK --interval=30s --timeout=3s --start-period=20s \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.MANAGEMENT_PORT}/health`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "src/main.ts"]
