# syntax=docker/dockerfile:1
# One image, three entry points:
#   node dist/services/controller/main.js | broker/main.js | coordinator/main.js
# Configuration comes from TERN_* environment variables or flags (libs/common/config.ts).
#
# PID 1: node itself, no tini. The runtime (libs/server) installs SIGTERM/SIGINT handlers,
# which PID 1 needs because the kernel gives it no default signal actions; node spawns no
# child processes, so there are no zombies to reap. Kubernetes sends SIGTERM straight to it.

ARG NODE_IMAGE=node:20-bookworm-slim

# ---- build: compile TypeScript with the dev dependencies --------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
# The whole context: .dockerignore keeps out node_modules, dist, tests, docs and deploy, and
# folders that do not exist yet (cli/ early on) cannot break the build.
COPY . .
RUN npm run build

# ---- deps: production dependencies only (level's native binding comes prebuilt) ---------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# ---- runtime ------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /src/dist ./dist
# loadTernProto() reads the .proto files at run time, relative to dist/.
COPY --from=build /src/proto ./proto
COPY package.json ./
# The image's "node" user, numeric so that runAsNonRoot can verify it.
USER 1000:1000
# gRPC and metrics ports of controller, broker, coordinator.
EXPOSE 9090 10090 9190 10190 9290 10290
STOPSIGNAL SIGTERM
# V8 flags as in libs/common/node-flags.ts (they cannot go in NODE_OPTIONS).
ENTRYPOINT ["node", "--initial-old-space-size=128"]
CMD ["dist/services/broker/main.js"]
