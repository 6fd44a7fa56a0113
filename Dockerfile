# OpenSpot in a container: the production install path of docs/operations.md ("Production
# install"), the same steps .ci/production-path runs in CI — install everything, build once,
# prune the dev dependencies — and a runtime image with only the production dependencies and dist/.
#
#   docker build -t openspot .
#   docker run -d --name openspot -p 127.0.0.1:8080:8080 -v openspot-data:/data \
#     -e ADMIN_TOKEN=... -e SECRETS_KEY=... -e WS_APP_KEY=... -e WS_APP_SECRET=... \
#     -e PUBLIC_URL=https://api.example.com -e TRUST_PROXY=true openspot
#
# `docker stop` sends SIGTERM to node (PID 1 here, no shell in between): the server shuts down
# cleanly (docs/operations.md, "Health, readiness, shutdown").

ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
# better-sqlite3 compiles from source when no prebuilt binary matches the platform.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
RUN npm ci --no-audit --no-fund \
  && npm run build \
  && npm prune --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "--max-semi-space-size=64", "dist/src/main.js"]
